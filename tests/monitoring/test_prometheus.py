"""A real Prometheus (Debian's package) scrapes a running portal and a running watcher against the sandbox, loads
the alerting and recording rules, and every query behind the Grafana dashboard returns data."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
import yaml

from tests.cluster.processes import free_port, manage, migrated_database, portal_env, query, web_server
from trainer_portal import kube
from trainer_portal.kube.client import get_gateway, reset_gateway

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
RUNTIMES = ROOT / "sandbox" / "demo_runtimes"
DASHBOARD = ROOT / "deploy" / "monitoring" / "grafana-dashboard.json"
TOKEN = "prometheus-test-token"


@pytest.fixture(scope="module")
def demo_cluster():
    """A sandbox with the demo topology and its controllers (its scheduler admits the job the test submits)."""
    from sandbox.testing import SandboxProcess

    with SandboxProcess(topology="demo", controllers=True, extra_args=["--bookmark-interval", "0.5"],
                        env={"SANDBOX_GENERATOR": "0", "SANDBOX_POD_START_DELAY": "0.2"}) as process:
        yield process


@pytest.fixture
def gateway(demo_cluster, settings):
    """The gateway pointed at the demo sandbox, with the demo runtimes and namespace team-a."""
    demo_cluster.reset()
    settings.KUBE_CONFIG_PATH = demo_cluster.kubeconfig
    settings.KUBE_CONTEXT = ""
    settings.KUBE_IN_CLUSTER = False
    reset_gateway()
    gateway = get_gateway()
    if gateway.get(kube.CORE_NAMESPACE, name="team-a") is None:
        gateway.create(kube.CORE_NAMESPACE, body={"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": "team-a"}})
    runtime = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    for path in sorted(RUNTIMES.glob("*.yaml")):
        body = yaml.safe_load(path.read_text())
        if gateway.get(runtime, name=body["metadata"]["name"]) is None:
            gateway.create(runtime, body=body)
    yield gateway
    reset_gateway()


def wait_for(predicate, timeout: float, what: str):
    """Return predicate()'s first truthy value; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.5)


def dashboard_queries() -> list[str]:
    """Return the dashboard's PromQL with Grafana's variables filled as a viewer of every cluster would."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"].replace("$cluster", ".*").replace("$__rate_interval", "15s")
            for panel in dashboard["panels"] for target in panel["targets"]]


def promql(base: str, expr: str) -> list:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    with urllib.request.urlopen(url, timeout=5) as response:
        body = json.load(response)
    assert body["status"] == "success", (expr, body)
    return body["data"]["result"]


def test_prometheus_scrapes_portal_and_watcher_and_the_dashboard_has_data(gateway, demo_cluster, tmp_path):
    prometheus = shutil.which("prometheus")
    assert prometheus, "prometheus is installed by scripts/ensure-system-deps (Debian package prometheus)"
    database = migrated_database(tmp_path)
    var_dir = tmp_path / "var"
    extra = {"TRAINER_PORTAL_KUBECONFIG": demo_cluster.kubeconfig, "TRAINER_PORTAL_METRICS_TOKEN": TOKEN,
             "TRAINER_PORTAL_LEASE_NAME": f"metrics-{uuid.uuid4().hex[:6]}"}
    seeded = manage(database, var_dir, "portal_demo_seed", "--wait", "10", **extra)
    assert seeded.returncode == 0, seeded.stderr

    log = (tmp_path / "watch.log").open("w")
    watcher = subprocess.Popen([sys.executable, "manage.py",
                                "cluster_watch", "--metrics-port", "0", "--metrics-address", "127.0.0.1"],
                               cwd=ROOT, env=portal_env(database, var_dir, **extra), stdout=subprocess.PIPE,
                               stderr=log, text=True)
    server = None
    try:
        line = wait_for(lambda: _metrics_line(watcher), 60, "the watcher's metrics port")
        watch_port = int(re.search(r":(\d+)/metrics", line).group(1))
        _submit(gateway, "fits", nodes=2)
        _submit(gateway, "too-big", nodes=40)  # no zone has 40 nodes: it waits
        wait_for(lambda: query(database, "SELECT 1 FROM jobs_trainjob WHERE admitted_at IS NOT NULL"), 90,
                 "the tracker recording an admitted job")
        with web_server(database, var_dir, **extra) as portal:
            config = tmp_path / "prometheus.yml"
            portal_host = urllib.parse.urlsplit(portal).netloc
            config.write_text(yaml.safe_dump({
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(ROOT / "deploy" / "monitoring" / "trainer-portal.rules.yaml")],
                "scrape_configs": [
                    {"job_name": "trainer-portal", "metrics_path": "/metrics",
                     "authorization": {"type": "Bearer", "credentials": TOKEN},
                     "static_configs": [{"targets": [portal_host]}]},
                    {"job_name": "trainer-portal-cluster-watch",
                     "static_configs": [{"targets": [f"127.0.0.1:{watch_port}"]}]},
                ]}))
            port = free_port()
            server = subprocess.Popen([prometheus, f"--config.file={config}",
                                       f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                       f"--web.listen-address=127.0.0.1:{port}"],
                                      stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("w"))
            base = f"http://127.0.0.1:{port}"
            wait_for(lambda: _answers(base), 60, "prometheus answering")
            wait_for(lambda: len(promql(base, "up == 1")) == 2, 60, "both targets up")
            missing = dashboard_queries()
            deadline = time.monotonic() + 60
            while missing and time.monotonic() < deadline:
                missing = [expr for expr in missing if not promql(base, expr)]
                time.sleep(1)
            assert not missing, f"dashboard queries without data: {missing}"
            with urllib.request.urlopen(f"{base}/api/v1/rules", timeout=5) as response:
                groups = json.load(response)["data"]["groups"]
            assert sorted(g["name"] for g in groups) == ["trainer-portal.alerts", "trainer-portal.recording"]
            assert all(rule["health"] == "ok" for group in groups for rule in group["rules"]), groups
            assert promql(base, 'ALERTS{alertname="TrainerPortalWatcherStale"}') == []
    finally:
        if server is not None:
            server.terminate()
            server.wait(20)
        watcher.terminate()
        watcher.wait(30)
        log.close()


def _metrics_line(watcher: subprocess.Popen) -> str | None:
    assert watcher.poll() is None, "cluster_watch exited"
    line = watcher.stdout.readline()
    return line if "metrics on" in line else None


def _answers(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/-/ready", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _submit(gateway, name: str, *, nodes: int) -> None:
    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "team-a",
                         "annotations": {"sandbox.trainer-portal.io/duration-seconds": "600"}},
            "spec": {"runtimeRef": {"name": "torch-gang-zone"},
                     "trainer": {"numNodes": nodes, "resourcesPerNode": {"requests": {"nvidia.com/gpu": "8"}}}}}
    gateway.create(gateway.resolve(kube.TRAINJOB), body=body)
