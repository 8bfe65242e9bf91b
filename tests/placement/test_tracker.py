"""The pure node/pod event fold: relists replace what is known, events apply in order, label counts for the picker,
and a LiveSnapshot is a copy the fold no longer changes."""

from __future__ import annotations

import pickle
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from trainer_portal.placement import tracker as tracker_module
from trainer_portal.placement.snapshot import ADDED, DELETED, MODIFIED, TopologyKeys
from trainer_portal.placement.tracker import (
    MAX_LABEL_VALUES,
    LiveSnapshot,
    TopologyTracker,
    pod_key,
    snapshot_fingerprint,
)

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


# -- what the tracker keeps: shared label sets, pods the snapshot does not hold ---------------------------------


def _reference_counts(labels_by_name: dict[str, dict]) -> tuple[list, list]:
    """The label counts and totals of a dict of nodes by name, counted node by node (the model the tracker keeps)."""
    per_key: dict[str, Counter] = {}
    for labels in labels_by_name.values():
        for key, value in labels.items():
            per_key.setdefault(key, Counter())[value] += 1
    counts = [(key, list(dict(counter.most_common(MAX_LABEL_VALUES)).items())) for key, counter in per_key.items()]
    return counts, [(key, (counter.total(), len(counter))) for key, counter in per_key.items()]


_node_events = st.lists(st.tuples(
    st.sampled_from(["ADDED", "MODIFIED", "DELETED", "RELIST"]), st.integers(0, 5), st.sampled_from(["r1", "r2"]),
    st.sampled_from(["own", "other", "none"]), st.booleans()), max_size=40)


@settings(max_examples=200, deadline=None)
@given(events=_node_events)
def test_label_counts_match_counting_the_nodes_one_by_one(events):
    tracker = TopologyTracker(KEYS)
    model: dict[str, dict] = {}
    for event, index, rack, hostname, pooled in events:
        name = f"n{index}"
        extra = {"kubernetes.io/hostname": {"own": name, "other": "n0", "none": None}[hostname],
                 "example.com/pool": "x" if pooled else None}
        obj = node(name, rack, **{key: value for key, value in extra.items() if value is not None})
        if event == "RELIST":
            listed = [obj, node("n5", "r1")]
            tracker.relist_nodes(listed, "1")
            model = {n: model.get(n, {}) for n in model if n in {o["metadata"]["name"] for o in listed}}
            for item in listed:
                model[item["metadata"]["name"]] = item["metadata"]["labels"]
        elif event == "DELETED":
            tracker.apply_node(event, obj)
            model.pop(name, None)
        else:
            tracker.apply_node(event, obj)
            model[name] = obj["metadata"]["labels"]
        counts, totals = _reference_counts(model)
        assert [(key, list(values.items())) for key, values in tracker.label_counts().items()] == counts
        assert list(tracker.label_totals().items()) == totals
        assert {name: dict(zip(labels[::2], labels[1::2], strict=True))
                for name, labels in tracker.node_labels.items()} == model
        assert list(tracker.node_labels) == list(model)


def test_a_node_that_comes_back_counts_as_arriving_last(monkeypatch):
    monkeypatch.setattr(tracker_module, "MAX_ARRIVAL", 2)  # renumbered on the way: the order must survive it
    tracker = TopologyTracker(KEYS)
    for name, rack in (("a", "r1"), ("b", "r2"), ("c", "r3")):
        tracker.apply_node(ADDED, node(name, rack))
    tracker.apply_node(DELETED, node("a", "r1"))
    tracker.apply_node(ADDED, node("a", "r1"))
    tracker.apply_node(ADDED, node("d", "r4"))
    assert list(tracker.node_labels) == ["b", "c", "a", "d"]
    assert list(tracker.label_counts()["topology.kubernetes.io/rack"]) == ["r2", "r3", "r1", "r4"]


def test_nodes_of_a_rack_share_one_label_set_and_the_hostname_is_their_own():
    tracker = TopologyTracker(KEYS)
    tracker.relist_nodes([node(f"n{i}", f"r{i % 2}", **{"kubernetes.io/hostname": f"n{i}"}) for i in range(8)], "1")
    assert len(tracker._label_set_codes) == 2
    assert tracker.label_totals()["kubernetes.io/hostname"] == (8, 8)
    assert tracker.node_labels["n3"][-2:] == ("kubernetes.io/hostname", "n3")


def test_the_label_strings_are_dropped_with_the_label_sets_that_used_them():
    tracker = TopologyTracker(KEYS)
    for index in range(200):
        tracker.apply_node(ADDED, node("n", f"rack-{index}"))
    assert len(tracker._label_sets) == 2 and len(tracker._label_strings) < 20
    assert tracker.label_counts()["topology.kubernetes.io/rack"] == {"rack-199": 1}


def test_pods_the_snapshot_does_not_count_are_still_deleted_by_a_relist():
    tracker = TopologyTracker(KEYS)
    tracker.relist_nodes([node("n1", "r1")], "1")
    unbound = {"metadata": {"name": "waiting", "namespace": "team"}, "spec": {}}
    finished = pod("done", "n1") | {"status": {"phase": "Succeeded"}}
    tracker.relist_pods([unbound, finished, pod("early", "n2", 2), pod("p1", "n1", 1)], "2")
    assert tracker.pod_keys == {"team/waiting", "team/done", "team/early", "team/p1"}
    tracker.apply_node(ADDED, node("n2", "r1"))  # "early" waited for its node: now it counts against it
    assert snapshot_fingerprint(tracker.snapshot)["n2"][4] == 2 and tracker.snapshot.pod_count == 2
    tracker.relist_pods([pod("p1", "n1", 1)], "3")
    assert tracker.pod_keys == {"team/p1"} and tracker.snapshot.pod_count == 1
    assert snapshot_fingerprint(tracker.snapshot)["n2"][4] == 0
    tracker.apply_pod(DELETED, pod("p1", "n1"))
    assert tracker.pod_keys == set() and tracker.snapshot.held_pod_keys() == []
