"""The admission tracker in a real ``manage.py cluster_watch`` process against a sandbox with its controllers.

Objects are created through the gateway (the official client underneath); the sandbox's simulated Trainer salts
Workload/PodGroup names with the TrainJob UID, its scheduler binds gangs and writes the PodGroup conditions. The
tracker writes into its own SQLite file, which the tests read directly.
"""

from __future__ import annotations

import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from trainer_portal import kube
from trainer_portal.kube.client import get_gateway, reset_gateway

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
RUNTIMES = ROOT / "sandbox" / "demo_runtimes"
NAMESPACE = "team-a"


@pytest.fixture(scope="module")
def demo_cluster():
    """A sandbox with the 64-node demo topology and its controllers (no generator: the tests submit the jobs)."""
    from sandbox.testing import SandboxProcess

    with SandboxProcess(topology="demo", controllers=True, extra_args=["--bookmark-interval", "0.5"],
                        env={"SANDBOX_GENERATOR": "0", "SANDBOX_POD_START_DELAY": "0.2"}) as process:
        yield process


@pytest.fixture
def cluster(demo_cluster, settings):
    """The gateway pointed at the demo sandbox, reset and re-seeded with the demo runtimes and namespaces."""
    demo_cluster.clear_faults()
    demo_cluster.reset()
    settings.KUBE_CONFIG_PATH = demo_cluster.kubeconfig
    settings.KUBE_CONTEXT = ""
    settings.KUBE_IN_CLUSTER = False
    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 5.0
    reset_gateway()
    gateway = get_gateway()
    for name in (NAMESPACE, "team-b"):
        if gateway.get(kube.CORE_NAMESPACE, name=name) is None:
            gateway.create(kube.CORE_NAMESPACE, body={"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": name}})
    runtime = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    for path in sorted(RUNTIMES.glob("*.yaml")):
        body = yaml.safe_load(path.read_text())
        if gateway.get(runtime, name=body["metadata"]["name"]) is None:
            gateway.create(runtime, body=body)
    yield demo_cluster
    demo_cluster.clear_faults()
    reset_gateway()


class Watcher:
    """A ``manage.py cluster_watch`` subprocess writing into ``database``."""

    def __init__(self, cluster, database: Path, var_dir: Path, lease: str, args: tuple[str, ...] = ()) -> None:
        self.args = args
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "trainer_portal.settings",
                    "TRAINER_PORTAL_KUBECONFIG": cluster.kubeconfig, "TRAINER_PORTAL_VAR_DIR": str(var_dir),
                    "TRAINER_PORTAL_LEASE_NAME": lease, "DATABASE_URL": f"sqlite:///{database}",
                    "LOG_LEVEL": "WARNING"}
        self.process: subprocess.Popen | None = None

    def start(self) -> Watcher:
        self.process = subprocess.Popen([sys.executable, "manage.py", "cluster_watch", *self.args], cwd=ROOT,
                                        env=self.env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        return self

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


@pytest.fixture
def database(tmp_path):
    """A migrated SQLite file for the watcher processes (the test database is in memory, not shareable)."""
    path = tmp_path / "tracker.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{path}", "DJANGO_SETTINGS_MODULE": "trainer_portal.settings"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    return path


@pytest.fixture
def watchers(cluster, database, tmp_path):
    """Start watcher processes on demand (same Lease); all are stopped at the end."""
    started: list[Watcher] = []
    lease = f"jobs-test-{uuid.uuid4().hex[:6]}"

    def start(*args: str) -> Watcher:
        watcher = Watcher(cluster, database, tmp_path / f"var-{len(started)}", lease, args).start()
        started.append(watcher)
        return watcher

    yield start
    for watcher in started:
        watcher.stop()


def rows(database: Path) -> dict[str, dict]:
    """Return {namespace/name: {state, reason, uid, gone}} of the live rows."""
    with sqlite3.connect(database) as db:
        db.row_factory = sqlite3.Row
        return {f"{r['namespace']}/{r['name']}": dict(r) for r in db.execute(
            "SELECT uid, namespace, name, state, reason, message, gone_at FROM jobs_trainjob")}


def transitions(database: Path) -> dict[str, list[tuple[str, str]]]:
    with sqlite3.connect(database) as db:
        result: dict[str, list[tuple[str, str]]] = {}
        for uid, before, after in db.execute(
                "SELECT j.uid, t.from_state, t.to_state FROM jobs_trainjobtransition t "
                "JOIN jobs_trainjob j ON j.id = t.job_id ORDER BY t.seq"):
            result.setdefault(uid, []).append((before, after))
        return result


def tracker_status(database: Path) -> dict | None:
    with sqlite3.connect(database) as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT * FROM jobs_trackerstatus WHERE id = 1").fetchone()
        return dict(row) if row else None


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(interval)


def submit(gateway, name: str, *, runtime: str = "torch-gang-zone", nodes: int = 2, suspend: bool = False,
           namespace: str = NAMESPACE, seconds: int = 600) -> dict:
    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace,
                         "annotations": {"sandbox.trainer-portal.io/duration-seconds": str(seconds)}},
            "spec": {"runtimeRef": {"name": runtime}, "suspend": suspend,
                     "trainer": {"numNodes": nodes, "resourcesPerNode": {"requests": {"nvidia.com/gpu": "8"}}}}}
    return gateway.create(gateway.resolve(kube.TRAINJOB), body=body)


def fresh_states(gateway) -> dict[str, tuple[str, str]]:
    """What a fresh relist says: the tracker's own pure pipeline over a one-shot list of every kind."""
    from jobs.domain import ownership
    from jobs.domain.records import job_record
    from jobs.handlers import KIND_NAMES

    index = ownership.OwnershipIndex()
    for kind, name in KIND_NAMES.items():
        try:
            listed = gateway.list(gateway.resolve(kind))
        except kube.KubeNotFound:
            continue
        index.replace(name, listed.items)
    result = {}
    for uid in index.trainjob_uids():
        record = job_record(index.tree(uid))
        result[f"{record.namespace}/{record.name}"] = (record.state, record.reason)
    return result


def test_jobs_reach_their_states_live(cluster, database, watchers):
    gateway = get_gateway()
    watchers()
    submit(gateway, "fits", nodes=4)
    submit(gateway, "too-big", nodes=40)  # no zone has 40 schedulable nodes
    submit(gateway, "paused", nodes=2, suspend=True)

    wait_until(lambda: rows(database).get(f"{NAMESPACE}/fits", {}).get("state") == "running")
    wait_until(lambda: rows(database).get(f"{NAMESPACE}/too-big", {}).get("state") == "unschedulable")
    current = rows(database)
    assert current[f"{NAMESPACE}/paused"]["state"] == "suspended"
    assert "cannot be scheduled" in current[f"{NAMESPACE}/too-big"]["message"]
    chain = transitions(database)[current[f"{NAMESPACE}/fits"]["uid"]]
    assert chain[0][0] == "" and chain[-1][1] == "running"
    assert all(a[1] == b[0] for a, b in itertools.pairwise(chain))  # an unbroken chain

    gateway.delete(gateway.resolve(kube.TRAINJOB), name="fits", namespace=NAMESPACE)
    wait_until(lambda: rows(database)[f"{NAMESPACE}/fits"]["gone_at"] is not None)
    assert rows(database)[f"{NAMESPACE}/fits"]["state"] != "running"


def test_a_killed_watcher_resumes_to_exactly_what_a_fresh_relist_says(cluster, database, watchers):
    gateway = get_gateway()
    first = watchers()
    wait_until(lambda: (tracker_status(database) or {}).get("synced"))
    for i in range(12):
        submit(gateway, f"burst-{i:02d}", nodes=2 + (i % 3) * 6)
        if i == 6:
            first.kill()  # SIGKILL in the middle of the burst
    watchers()

    def settled():
        expected = fresh_states(gateway)
        tracked = {key: (row["state"], row["reason"]) for key, row in rows(database).items()
                   if row["gone_at"] is None}
        return expected if tracked == expected and len(expected) == 12 else None

    wait_until(settled, timeout=60)
    for uid, chain in transitions(database).items():
        assert chain[0][0] == "", uid
        assert all(a[1] == b[0] for a, b in itertools.pairwise(chain)), (uid, chain)  # none lost
        assert all(a != b for a, b in itertools.pairwise(chain)), (uid, chain)  # none twice


def remaining_faults(cluster) -> list:
    import json
    import urllib.request

    with urllib.request.urlopen(cluster.url + "/sandbox/faults", timeout=5) as response:
        return json.load(response)["faults"]


def test_watch_faults_recover_without_showing_a_wrong_state(cluster, database, watchers):
    gateway = get_gateway()
    watchers("--watch-timeout", "2")  # streams end every 2 s, so every fault below meets a reconnect
    submit(gateway, "steady", nodes=4)
    wait_until(lambda: rows(database).get(f"{NAMESPACE}/steady", {}).get("state") == "running")
    before = transitions(database)

    watched = r"/(pods|podgroups|trainjobs|workloads)$"
    cluster.inject_fault(method="GET", path=watched, count=4, action="cut-watch", after_events=0)
    cluster.inject_fault(method="GET", path=watched, count=3, action="status", status=503)
    cluster.compact()  # every resume now answers 410 Expired: the watchers must list again
    wait_until(lambda: remaining_faults(cluster) == [], timeout=30)
    submit(gateway, "during-faults", nodes=2)

    wait_until(lambda: rows(database).get(f"{NAMESPACE}/during-faults", {}).get("state") == "running", timeout=60)
    after = transitions(database)
    steady_uid = rows(database)[f"{NAMESPACE}/steady"]["uid"]
    assert after[steady_uid] == before[steady_uid]  # the running job never flickered through another state
    assert fresh_states(gateway)[f"{NAMESPACE}/steady"][0] == "running"
    wait_until(lambda: (tracker_status(database) or {}).get("connected"), timeout=10)


def test_only_the_lease_holder_writes_and_a_standby_takes_over(cluster, database, watchers):
    gateway = get_gateway()
    first = watchers()
    holder = wait_until(lambda: (tracker_status(database) or {}).get("holder"))
    second = watchers()
    submit(gateway, "handover", nodes=2)
    wait_until(lambda: rows(database).get(f"{NAMESPACE}/handover", {}).get("state") == "running")
    time.sleep(3)  # both have seen every event; only one may have written
    assert tracker_status(database)["holder"] == holder
    assert holder.split("_")[1] == str(first.process.pid)

    first.kill()
    killed_at = time.monotonic()
    wait_until(lambda: tracker_status(database)["holder"].split("_")[1] == str(second.process.pid), timeout=30)
    assert time.monotonic() - killed_at <= 20  # Lease duration 15 s + a heartbeat
    submit(gateway, "after-handover", nodes=2)
    wait_until(lambda: rows(database).get(f"{NAMESPACE}/after-handover", {}).get("state") == "running")


def test_odd_objects_are_unknown_and_never_stop_the_tracker(cluster, database, watchers):
    gateway = get_gateway()
    watcher = watchers()
    podgroups = gateway.resolve(kube.PODGROUP)
    # A TrainJob of a runtime that does not exist: the Trainer creates nothing; we add a PodGroup without a Workload
    # (owned by the TrainJob) and a pod naming a PodGroup that does not exist.
    job = submit(gateway, "orphaned", runtime="no-such-runtime", nodes=1)
    owner = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "orphaned",
             "uid": job["metadata"]["uid"], "controller": True}
    gateway.create(podgroups, body={
        "apiVersion": podgroups.api_version, "kind": "PodGroup",
        "metadata": {"name": "orphaned-pg-x1", "namespace": NAMESPACE, "ownerReferences": [owner]},
        "spec": {"workloadRef": {"workloadName": "missing-workload", "templateName": "node"},
                 "schedulingPolicy": {"gang": {"minCount": 1}}}})
    gateway.create(kube.CORE_POD, body={
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "stray", "namespace": NAMESPACE, "ownerReferences": [
            {**owner, "controller": False, "uid": "not-a-known-uid", "name": "ghost"}]},
        "spec": {"schedulingGroup": {"podGroupName": "nowhere"}, "containers": [{"name": "c", "image": "x"}]}})

    wait_until(lambda: rows(database).get(f"{NAMESPACE}/orphaned", {}).get("reason") == "PodGroupWithoutWorkload")
    assert rows(database)[f"{NAMESPACE}/orphaned"]["state"] == "unknown"

    # A complete tree whose PodGroup reports only a condition type this portal does not know.
    odd = submit(gateway, "odd-condition", runtime="no-such-runtime", nodes=1)
    odd_owner = {**owner, "name": "odd-condition", "uid": odd["metadata"]["uid"]}
    workloads = gateway.resolve(kube.WORKLOAD)
    gateway.create(workloads, body={
        "apiVersion": workloads.api_version, "kind": "Workload",
        "metadata": {"name": "odd-condition-w7", "namespace": NAMESPACE, "ownerReferences": [odd_owner]},
        "spec": {"controllerRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainJob", "name": "odd-condition"},
                 "podGroupTemplates": [{"name": "node", "schedulingPolicy": {"gang": {"minCount": 1}}}]}})
    gateway.create(podgroups, body={
        "apiVersion": podgroups.api_version, "kind": "PodGroup",
        "metadata": {"name": "odd-condition-pg7", "namespace": NAMESPACE, "ownerReferences": [odd_owner]},
        "spec": {"workloadRef": {"workloadName": "odd-condition-w7", "templateName": "node"},
                 "schedulingPolicy": {"gang": {"minCount": 1}}}})
    gateway.request("PATCH", podgroups.path(namespace=NAMESPACE, name="odd-condition-pg7", subresource="status"),
                    body={"status": {"conditions": [{"type": "PodGroupSomethingNew", "status": "True",
                                                     "reason": "New", "message": "from the future",
                                                     "lastTransitionTime": "2026-12-01T12:00:00Z"}]}},
                    content_type="application/merge-patch+json")
    wait_until(lambda: rows(database).get(f"{NAMESPACE}/odd-condition", {}).get("reason") == "UnknownCondition")
    assert rows(database)[f"{NAMESPACE}/odd-condition"]["state"] == "unknown"
    assert watcher.alive
