"""The pure node/pod event fold: relists replace what is known, events apply in order, label counts for the picker,
and a LiveSnapshot is a copy the fold no longer changes."""

from __future__ import annotations

import pickle

from trainer_portal.placement.snapshot import ADDED, DELETED, MODIFIED, TopologyKeys
from trainer_portal.placement.tracker import LiveSnapshot, TopologyTracker, pod_key, snapshot_fingerprint

KEYS = TopologyKeys(block="example.com/block")


def node(name: str, rack: str, gpus: int = 8, **labels: str) -> dict:
    return {"metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "z1", "example.com/block": "b1",
                                                  "topology.kubernetes.io/rack": rack, **labels}},
            "status": {"allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "32", "memory": "64Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, node_name: str, gpus: int = 1, namespace: str = "team") -> dict:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {
                "nvidia.com/gpu": str(gpus)}}}]}}


def test_it_is_ready_only_after_both_lists_and_the_keys_are_the_callers():
    tracker = TopologyTracker(KEYS)
    assert tracker.keys is KEYS and tracker.snapshot.keys == KEYS
    tracker.relist_nodes([node("n1", "r1")], "5")
    assert not tracker.ready
    tracker.relist_pods([], "6")
    assert tracker.ready
    assert (tracker.snapshot.nodes_resource_version, tracker.snapshot.pods_resource_version) == ("5", "6")


def test_a_relist_deletes_what_it_no_longer_lists():
    tracker = TopologyTracker(KEYS)
    tracker.relist_nodes([node("n1", "r1"), node("n2", "r2")], "1")
    tracker.relist_pods([pod("p1", "n1", 2), pod("p2", "n2", 3)], "2")
    tracker.relist_nodes([node("n1", "r1")], "3")
    tracker.relist_pods([pod("p1", "n1", 2)], "4")
    assert set(snapshot_fingerprint(tracker.snapshot)) == {"n1"}
    assert tracker.pod_keys == {"team/p1"} and set(tracker.node_labels) == {"n1"}
    assert snapshot_fingerprint(tracker.snapshot)["n1"][4] == 2  # p1's GPUs in use


def test_events_fold_to_what_a_fresh_list_of_the_final_objects_gives():
    folded = TopologyTracker(KEYS)
    folded.relist_nodes([node("n1", "r1")], "1")
    folded.relist_pods([], "2")
    folded.apply_node(ADDED, node("n2", "r2", gpus=4))
    folded.apply_pod(ADDED, pod("p1", "n2", 3))
    folded.apply_pod(MODIFIED, pod("p1", "n2", 3))
    folded.apply_pod(ADDED, pod("p2", "n1", 1))
    folded.apply_pod(DELETED, pod("p2", "n1", 1))
    folded.apply_node(MODIFIED, node("n1", "r9"))

    fresh = TopologyTracker(KEYS)
    fresh.relist_nodes([node("n1", "r9"), node("n2", "r2", gpus=4)], "9")
    fresh.relist_pods([pod("p1", "n2", 3)], "9")
    assert snapshot_fingerprint(folded.snapshot) == snapshot_fingerprint(fresh.snapshot)
    assert folded.changed


def test_label_counts_list_the_most_common_values_per_key():
    tracker = TopologyTracker(KEYS)
    tracker.relist_nodes([node("a", "r1"), node("b", "r1"), node("c", "r2", **{"example.com/pool": "x"})], "1")
    counts = tracker.label_counts()
    assert counts["topology.kubernetes.io/rack"] == {"r1": 2, "r2": 1}
    assert list(counts["topology.kubernetes.io/rack"]) == ["r1", "r2"]
    assert counts["example.com/pool"] == {"x": 1}


def test_a_live_snapshot_is_a_copy_and_survives_pickling():
    tracker = TopologyTracker(KEYS)
    tracker.relist_nodes([node("n1", "r1")], "1")
    tracker.relist_pods([], "2")
    live = tracker.to_live(source="list", server="https://api.example", stats={"saves": 1})
    tracker.apply_pod(ADDED, pod("late", "n1", 8))
    assert snapshot_fingerprint(live.snapshot)["n1"][4] == 0  # the fold moved on; the saved copy did not
    restored = pickle.loads(pickle.dumps(live))
    assert isinstance(restored, LiveSnapshot) and restored.server == "https://api.example"
    assert restored.label_keys()[0]["key"] == "example.com/block" and restored.age_seconds >= 0


def test_pod_keys_default_the_namespace():
    assert pod_key({"metadata": {"name": "p"}}) == "default/p"
    assert pod_key(pod("p", "n")) == "team/p"
