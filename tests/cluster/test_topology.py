"""The live topology snapshot (the cluster watcher's topology handler): built by list-then-watch, recovers from cut
streams and 410, equals a fresh list; stored for the web processes."""

from __future__ import annotations

import threading
import time

import pytest

from trainer_portal import kube
from trainer_portal.cluster import handlers, informers, snapshots
from trainer_portal.placement.tracker import TopologyTracker, snapshot_fingerprint


def node(name: str, rack: str, gpus: int = 8) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {
            "topology.kubernetes.io/zone": "z1", "cloud.provider.com/topology-block": "b1",
            "topology.kubernetes.io/rack": rack, "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "32", "memory": "256Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod(name: str, node_name: str, gpus: int = 2) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node_name, "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"nvidia.com/gpu": str(gpus), "cpu": "1"}}}]},
    }


def fresh_fingerprint(gateway) -> dict:
    nodes, pods = gateway.list(kube.CORE_NODE), gateway.list(kube.CORE_POD)
    tracker = TopologyTracker(snapshots.topology_keys())
    tracker.relist_nodes(nodes.items, nodes.resource_version)
    tracker.relist_pods(pods.items, pods.resource_version)
    return snapshot_fingerprint(tracker.snapshot)


def wait_until(predicate, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


@pytest.fixture
def running_watch(gateway):
    """A hub with only the topology handler, storing the default cluster's snapshot (from the hub's thread, hence a
    database the thread sees); yields the handler (``.hub`` set)."""
    handler = handlers.TopologySnapshotHandler(save_interval=0.1)
    hub = informers.InformerHub(gateway=gateway, factories=[lambda: handler], timeout_seconds=1, backoff_max=0.2)
    handler.hub = hub
    thread = threading.Thread(target=hub.run, daemon=True)
    thread.start()
    yield handler
    hub.stop.set()
    thread.join(10)
    assert not thread.is_alive()


def _matches(handler, gateway) -> bool:
    with handler.lock:
        ours = snapshot_fingerprint(handler.tracker.snapshot)
    return ours == fresh_fingerprint(gateway)


# The hub's thread stores the snapshot: it must see committed rows (and the migrated default cluster comes back).
@pytest.mark.django_db(transaction=True)
def test_the_snapshot_follows_the_cluster_and_recovers_from_cut_and_expired_watches(
    cluster, gateway, running_watch, tmp_path
):
    for index in range(4):
        gateway.create(kube.CORE_NODE, body=node(f"n{index}", rack=f"r{index % 2}"))
    wait_until(lambda: running_watch.tracker.ready)
    for index in range(6):
        gateway.create(kube.CORE_POD, body=pod(f"p{index}", f"n{index % 4}"))
    wait_until(lambda: _matches(running_watch, gateway))

    # Cut both streams after one event, then let the next pod watch answer 410 (expired): resume, then relist.
    cluster.inject_fault(method="GET", path="^/api/v1/(pods|nodes)$", action="cut-watch", after_events=1, count=2)
    gateway.delete(kube.CORE_POD, name="p0", namespace="default")
    gateway.create(kube.CORE_NODE, body=node("n9", rack="r9", gpus=4))
    gateway.create(kube.CORE_POD, body=pod("p9", "n9", gpus=4))
    cluster.compact()
    cluster.inject_fault(method="GET", path="^/api/v1/pods$", action="status", status=410, count=1)
    gateway.delete(kube.CORE_NODE, name="n3")
    gateway.create(kube.CORE_POD, body=pod("p10", "n1", gpus=1))

    wait_until(lambda: running_watch.hub.watchers[kube.POD].stats.expired >= 1 and _matches(running_watch, gateway))

    stats = running_watch.hub.stats()["kinds"]
    assert stats["pods"]["relists"] >= 2
    assert stats["nodes"]["reconnects"] >= 1
    expected = fresh_fingerprint(gateway)
    assert set(expected) == {"n0", "n1", "n2", "n9"}
    assert expected["n9"][4] == 4  # p9's four GPUs are in use on n9

    # What the web process reads back equals the live state too.
    wait_until(lambda: (snapshots.live_snapshot() is not None))
    running_watch.save()
    saved = snapshots.live_snapshot()
    assert snapshot_fingerprint(saved.snapshot) == expected
    assert saved.label_counts["topology.kubernetes.io/rack"] == {"r0": 2, "r1": 1, "r9": 1}
    assert saved.age_seconds < 60


@pytest.mark.django_db
def test_a_one_shot_refresh_saves_a_snapshot_with_label_counts(cluster, gateway):
    assert snapshots.live_snapshot() is None and snapshots.live_source_available() is False
    gateway.create(kube.CORE_NODE, body=node("solo", rack="r1"))
    gateway.create(kube.CORE_POD, body=pod("solo-pod", "solo", gpus=3))

    live = handlers.topology_refresh()

    assert snapshots.live_source_available() is True
    loaded = snapshots.live_snapshot()
    assert loaded.snapshot.node_count == 1 and loaded.stats["pods"] == 1
    assert snapshot_fingerprint(loaded.snapshot) == snapshot_fingerprint(live.snapshot)
    keys = {item["key"]: item for item in loaded.label_keys()}
    assert keys["topology.kubernetes.io/rack"]["values"] == [{"value": "r1", "count": 1}]
    assert snapshots.snapshot_age_seconds() is not None
