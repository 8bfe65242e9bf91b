"""Tracking never freezes and never lies, through real ``manage.py cluster_watch`` processes and real sandboxes:
a NUL in one TrainJob's annotation, an API server reborn with a fresh store on the same address, a hung (SIGSTOPped)
API server, and two watcher processes sharing two clusters by ``--clusters`` shards."""

from __future__ import annotations

import datetime as dt
import os
import signal
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

from sandbox.testing import SandboxProcess
from trainer_portal import kube
from trainer_portal.kube.client import KubeSettings, build_gateway

from .test_tracker_process import Watcher, rows, submit, tracker_status, wait_until

pytestmark = [pytest.mark.slow]

NAMESPACE = "team-a"


def sandbox(kubeconfig: Path, *, port: int = 0, controllers: bool = False) -> SandboxProcess:
    """A small sandbox (no topology) writing its kubeconfig to ``kubeconfig`` (which outlives the process)."""
    return SandboxProcess(topology="none", controllers=controllers, kubeconfig=kubeconfig,
                          extra_args=["--port", str(port), "--bookmark-interval", "1"],
                          env={"SANDBOX_GENERATOR": "0"}).start()


def gateway_of(process: SandboxProcess):
    gateway = build_gateway(KubeSettings(config_path=process.kubeconfig, timeout=5.0))
    for name in (NAMESPACE,):
        if gateway.get(kube.CORE_NAMESPACE, name=name) is None:
            gateway.create(kube.CORE_NAMESPACE, body={"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": name}})
    return gateway


def port_of(process: SandboxProcess) -> int:
    return int(process.url.rsplit(":", 1)[1].split("/")[0])


def live(database: Path) -> dict[str, dict]:
    return {key: row for key, row in rows(database).items() if row["gone_at"] is None}


@pytest.fixture
def lease():
    return f"faults-{uuid.uuid4().hex[:6]}"


def start_watcher(process: SandboxProcess, database: Path, tmp_path: Path, lease: str, *args: str) -> Watcher:
    watcher = Watcher(process, database, tmp_path / f"var-{uuid.uuid4().hex[:4]}", lease, args)
    watcher.env["TRAINER_PORTAL_KUBE_TIMEOUT"] = "5"
    return watcher.start()


def test_a_nul_annotation_on_one_job_never_stops_the_others(cluster, database, watchers):
    from trainer_portal.kube.client import get_gateway

    gateway = get_gateway()
    watchers()
    wait_until(lambda: (tracker_status(database) or {}).get("synced"))
    trainjobs = gateway.resolve(kube.TRAINJOB)
    poisoned = submit(gateway, "poisoned", nodes=2)
    poisoned["metadata"]["annotations"]["trainer.kubeflow.org/creator"] = "mal\x00lory"
    gateway.request("PUT", trainjobs.path(namespace=NAMESPACE, name="poisoned"), body=poisoned)
    submit(gateway, "neighbour", nodes=2)

    wait_until(lambda: rows(database).get(f"{NAMESPACE}/neighbour", {}).get("state") == "running")
    wait_until(lambda: rows(database).get(f"{NAMESPACE}/poisoned", {}).get("state") == "running")
    with sqlite3.connect(database) as db:
        creator = db.execute("SELECT creator FROM jobs_trainjob WHERE name = 'poisoned'").fetchone()[0]
    assert creator == "mallory"  # NUL stripped: storable on PostgreSQL too (a Go API server sends no lone surrogate)
    status = wait_until(lambda: (s := tracker_status(database)) and s["sanitized"] >= 1 and s)
    assert status["connected"] and status["quarantined"] == 0 and not status["last_error"]


def test_an_api_server_reborn_with_a_fresh_store_is_reconciled_within_one_relist(database, tmp_path, lease):
    kubeconfig = tmp_path / "kubeconfig"
    first = sandbox(kubeconfig)
    watcher = None
    second = None
    try:
        gateway = gateway_of(first)
        for name in ("old-1", "old-2", "old-3"):
            submit(gateway, name, runtime="no-such-runtime")
        watcher = start_watcher(first, database, tmp_path, lease)
        wait_until(lambda: {f"{NAMESPACE}/old-{i}" for i in (1, 2, 3)} <= set(live(database)), timeout=60)

        port = port_of(first)
        first.stop()  # the API server goes away with its store …
        second = sandbox(kubeconfig, port=port)  # … and comes back on the same address with another one
        reborn = gateway_of(second)
        for name in ("new-1", "new-2", "old-1"):  # "old-1" again: same name, new uid
            submit(reborn, name, runtime="no-such-runtime")
        back_at = time.monotonic()

        expected = {f"{NAMESPACE}/{name}" for name in ("new-1", "new-2", "old-1")}
        wait_until(lambda: set(live(database)) == expected, timeout=60)
        assert time.monotonic() - back_at < 60
        current = rows(database)
        assert current[f"{NAMESPACE}/old-2"]["gone_at"] and current[f"{NAMESPACE}/old-3"]["gone_at"]
        with sqlite3.connect(database) as db:
            uids = [uid for (uid,) in db.execute("SELECT uid FROM jobs_trainjob WHERE name = 'old-1' "
                                                 "ORDER BY id")]
        assert len(uids) == 2  # the old old-1 is gone, the new one is its own row
        wait_until(lambda: (tracker_status(database) or {}).get("connected"), timeout=20)
        assert watcher.alive
    finally:
        if watcher:
            watcher.stop()
        for process in (second, first):
            if process is not None:
                process.stop()


def test_a_hung_api_server_is_reported_stale_within_ten_seconds(database, tmp_path, lease):
    process = sandbox(tmp_path / "kubeconfig")
    watcher = None
    stopped = False
    try:
        gateway = gateway_of(process)
        submit(gateway, "before-hang", runtime="no-such-runtime")
        watcher = start_watcher(process, database, tmp_path, lease)
        wait_until(lambda: (s := tracker_status(database)) and s["synced"] and s["connected"], timeout=60)
        wait_until(lambda: f"{NAMESPACE}/before-hang" in live(database), timeout=30)

        os.kill(process.pid, signal.SIGSTOP)  # connections stay open; nothing answers, no event, no bookmark
        stopped = True
        hung_at = time.monotonic()
        status = wait_until(lambda: (s := tracker_status(database)) and not s["connected"] and s, timeout=30,
                            interval=0.1)
        took = time.monotonic() - hung_at
        assert took <= 10, f"reported stale after {took:.1f}s"
        assert "not answering" in status["last_error"] or "timed out" in status["last_error"]

        os.kill(process.pid, signal.SIGCONT)
        stopped = False
        submit(gateway, "after-hang", runtime="no-such-runtime")
        wait_until(lambda: f"{NAMESPACE}/after-hang" in live(database), timeout=60)
        wait_until(lambda: (tracker_status(database) or {}).get("connected"), timeout=30)
    finally:
        if stopped:
            os.kill(process.pid, signal.SIGCONT)
        if watcher:
            watcher.stop()
        process.stop()


def add_cluster(database: Path, name: str) -> None:
    now = dt.datetime.now(dt.UTC).isoformat()
    with sqlite3.connect(database) as db:
        db.execute("INSERT INTO cluster_cluster (name, display_name, connection, kubeconfig_encrypted, "
                   "kubeconfig_context, secret_ref, block_label_key, is_default, enabled, version, created_at, "
                   "updated_at) VALUES (?, '', 'settings', '', '', '', '', 0, 1, 1, ?, ?)", (name, now, now))


def default_cluster_name(database: Path) -> str:
    with sqlite3.connect(database) as db:
        return db.execute("SELECT name FROM cluster_cluster WHERE is_default = 1").fetchone()[0]


def holder_pid(gateway, name: str) -> str:
    lease = gateway.get(kube.resources.COORDINATION_LEASE, name=name, namespace="default") or {}
    return ((lease.get("spec") or {}).get("holderIdentity") or "_").split("_")[1]


def tracks_clusters() -> bool:
    from jobs.models import TrainJob

    return any(f.name == "cluster" for f in TrainJob._meta.concrete_fields)


def test_two_watchers_split_two_clusters_by_shard_and_one_takes_over_the_other(database, tmp_path, lease):
    east = sandbox(tmp_path / "east.kubeconfig")
    west = sandbox(tmp_path / "west.kubeconfig")
    started: list[Watcher] = []
    try:
        add_cluster(database, "west")
        default = default_cluster_name(database)
        east_gateway, west_gateway = gateway_of(east), gateway_of(west)
        submit(east_gateway, "on-east", runtime="no-such-runtime")
        submit(west_gateway, "on-west", runtime="no-such-runtime")
        override = f"west={west.kubeconfig}"
        one = start_watcher(east, database, tmp_path, lease, "--clusters", default, "--kubeconfig", override)
        two = start_watcher(east, database, tmp_path, lease, "--clusters", "west", "--kubeconfig", override)
        started += [one, two]

        east_lease, west_lease = f"{lease}-{default}", f"{lease}-west"
        wait_until(lambda: holder_pid(east_gateway, east_lease) == str(one.process.pid), timeout=60)
        wait_until(lambda: holder_pid(west_gateway, west_lease) == str(two.process.pid), timeout=60)
        assert east_gateway.get(kube.resources.COORDINATION_LEASE, name=west_lease, namespace="default") is None
        wait_until(lambda: f"{NAMESPACE}/on-east" in live(database), timeout=30)
        if tracks_clusters():
            wait_until(lambda: f"{NAMESPACE}/on-west" in live(database), timeout=30)

        # A third process serving both stands by for both; when the west shard's holder dies it takes west over
        # and leaves the default cluster to its holder.
        both = start_watcher(east, database, tmp_path, lease, "--kubeconfig", override)
        started.append(both)
        time.sleep(3)
        assert holder_pid(east_gateway, east_lease) == str(one.process.pid)
        assert holder_pid(west_gateway, west_lease) == str(two.process.pid)
        two.kill()
        wait_until(lambda: holder_pid(west_gateway, west_lease) == str(both.process.pid), timeout=45)
        assert holder_pid(east_gateway, east_lease) == str(one.process.pid)
        assert one.alive and both.alive
    except AssertionError:
        for gw in (east_gateway, west_gateway):
            listed = gw.list(gw.resolve(kube.resources.COORDINATION_LEASE))
            print([(x["metadata"]["name"], x["spec"].get("holderIdentity")) for x in listed.items])
        for watcher in started:
            watcher.stop()
            print(watcher.args, watcher.process.stderr.read()[-3000:])
        raise
    finally:
        for watcher in started:
            watcher.stop()
        east.stop()
        west.stop()
