"""``manage.py cluster_watch`` as a real process against the sandbox: it leads, saves the topology snapshot, and
stops cleanly (exit 0) on SIGTERM or SIGINT; ``--once`` lists and exits."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from trainer_portal import kube
from trainer_portal.kube import resources

from .processes import migrated_database, portal_env, query
from .support import wait_until

ROOT = Path(__file__).resolve().parents[2]
LEASE_BASE = "command-test-cluster-watch"
# One Lease per cluster: the base name suffixed with the cluster's (the migrated single cluster is "default").
LEASE_NAME = f"{LEASE_BASE}-default"


def node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "32", "memory": "256Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def command(cluster, var_dir: Path, *args: str) -> subprocess.Popen:
    """Start ``manage.py cluster_watch ARGS`` on a migrated database file of its own, ``var_dir/portal.sqlite3``."""
    database = var_dir / "portal.sqlite3"
    if not database.exists():
        migrated_database(var_dir)
    env = portal_env(database, var_dir, TRAINER_PORTAL_KUBECONFIG=cluster.kubeconfig,
                     TRAINER_PORTAL_LEASE_NAME=LEASE_BASE, TRAINER_PORTAL_ALIVE_DIR=str(var_dir / "alive"))
    return subprocess.Popen([sys.executable, "manage.py", "cluster_watch", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stored_nodes(var_dir: Path) -> int | None:
    """Return the node count of the default cluster's stored snapshot in ``var_dir/portal.sqlite3`` (None: none)."""
    rows = query(var_dir / "portal.sqlite3", "SELECT s.nodes FROM cluster_topologysnapshot s JOIN cluster_cluster c "
                 "ON c.id = s.cluster_id WHERE c.is_default")
    return rows[0][0] if rows else None


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_cluster_watch_saves_the_snapshot_holds_the_lease_and_stops_on_a_signal(cluster, gateway, tmp_path, signum):
    gateway.create(kube.CORE_NODE, body=node("cmd-n1"))
    process = command(cluster, tmp_path, "--save-interval", "0.1")
    try:
        wait_until(lambda: stored_nodes(tmp_path) == 1 or process.poll() is not None, timeout=30)
        assert process.poll() is None, process.stderr.read()
        lease = wait_until(lambda: gateway.get(resources.COORDINATION_LEASE, name=LEASE_NAME, namespace="default"))
        assert lease["spec"]["holderIdentity"].split("_")[1] == str(process.pid)
        # Its watches live: the liveness probe's file is touched (manage.py process_alive cluster-watch).
        assert wait_until(lambda: (tmp_path / "alive" / "cluster-watch.alive").exists(), timeout=10)

        process.send_signal(signum)
        out, err = process.communicate(timeout=10)  # a clean stop is prompt: TimeoutExpired fails the test
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)
    assert process.returncode == 0, err
    assert "handlers: topology" in out and "stopped:" in out
    released = gateway.get(resources.COORDINATION_LEASE, name=LEASE_NAME, namespace="default")
    assert released["spec"]["holderIdentity"] == ""  # handed over on the way out


def test_cluster_watch_once_lists_saves_and_exits(cluster, gateway, tmp_path):
    gateway.create(kube.CORE_NODE, body=node("once-n1"))
    process = command(cluster, tmp_path, "--once")
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "saved 1 nodes, 0 pods" in out
    assert stored_nodes(tmp_path) == 1
    assert not (tmp_path / "topology").exists()  # nothing on the host's disk
