"""The columnar cluster snapshot: building, incremental events, summary, synthetic clusters."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer_portal.placement.snapshot import (
    CORDONED,
    PRESENT,
    READY,
    ClusterSnapshot,
    TopologyKeys,
    UnknownTopologyKey,
    pod_requests,
    tolerates,
)
from trainer_portal.placement.synthetic import FRAGMENTATIONS, racks_for, synthetic_cluster, synthetic_nodes

KEYS = TopologyKeys()


def node(name: str, *, zone: str = "za", block: str | None = "b0", rack: str = "r0", gpus: int = 8,
         ready: bool = True, cordoned: bool = False, taints: list | None = None, rv: str = "") -> dict:
    labels = {KEYS.zone: zone, KEYS.rack: rack, KEYS.host: name}
    if block is not None:
        labels[KEYS.block] = block
    return {
        "metadata": {"name": name, "labels": labels, "resourceVersion": rv},
        "spec": {"unschedulable": cordoned, "taints": taints or []},
        "status": {"allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "96", "memory": "1Ti", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pod(name: str, node_name: str | None, *, gpus: int = 1, cpu: str = "4", phase: str = "Running",
        namespace: str = "team") -> dict:
    spec = {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus), "cpu": cpu,
                                                                    "memory": "8Gi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec, "status": {"phase": phase}}


def row_of(snapshot: ClusterSnapshot, name: str) -> int:
    return snapshot.row_of[name]


def test_it_builds_columns_from_nodes_and_pods():
    snapshot = ClusterSnapshot.from_objects(
        [node("a"), node("b", ready=False), node("c", cordoned=True),
         node("d", taints=[{"key": "gpu", "value": "bad", "effect": "NoSchedule"}], block=None)],
        [pod("p1", "a", gpus=2), pod("p2", "a", gpus=3), pod("p3", None), pod("p4", "b", phase="Succeeded")],
        KEYS, nodes_resource_version="100")
    a, b, c, d = (row_of(snapshot, n) for n in "abcd")
    assert snapshot.alloc_gpu[a] == 8 and snapshot.used_gpu[a] == 5 and snapshot.used_pods[a] == 2
    assert snapshot.used_cpu[a] == 8000 and snapshot.used_mem[a] == 16 * 2**30
    assert snapshot.alloc_cpu[a] == 96_000 and snapshot.alloc_mem[a] == 2**40
    assert snapshot.used_gpu[b] == 0  # terminal pods never count
    assert snapshot.flags[a] == PRESENT | READY
    assert snapshot.flags[b] & READY == 0
    assert snapshot.flags[c] & CORDONED
    assert snapshot.taint_code[d] != 0 and snapshot.taint_code[a] == 0
    assert snapshot.missing[d] == 0b0010 and snapshot.missing[a] == 0
    assert snapshot.pod_count == 2
    assert snapshot.nodes_resource_version == "100"


def test_domains_are_interned_per_parent():
    snapshot = ClusterSnapshot.from_objects([node("a", zone="z1", block="b", rack="r"),
                                             node("b", zone="z2", block="b", rack="r"),
                                             node("c", zone="z1", block="b", rack="r")])
    a, b, c = (row_of(snapshot, n) for n in "abc")
    assert snapshot.domain[2, a] == snapshot.domain[2, c] != snapshot.domain[2, b]
    assert snapshot.domain_path(2, int(snapshot.domain[2, b])) == ("z2", "b", "r")


def test_pod_events_are_idempotent():
    snapshot = ClusterSnapshot.from_objects([node("a")])
    a = row_of(snapshot, "a")
    snapshot.apply_pod_event("ADDED", pod("p", "a", gpus=2))
    snapshot.apply_pod_event("ADDED", pod("p", "a", gpus=2))
    snapshot.apply_pod_event("MODIFIED", pod("p", "a", gpus=2))
    assert snapshot.used_gpu[a] == 2 and snapshot.used_pods[a] == 1
    snapshot.apply_pod_event("MODIFIED", pod("p", "a", gpus=2, phase="Failed"))
    assert snapshot.used_gpu[a] == 0 and snapshot.used_pods[a] == 0
    snapshot.apply_pod_event("MODIFIED", pod("p", "a", gpus=4))
    snapshot.apply_pod_event("DELETED", pod("p", "a", gpus=4))
    snapshot.apply_pod_event("DELETED", pod("p", "a", gpus=4))
    assert snapshot.used_gpu[a] == 0 and snapshot.used_cpu[a] == 0 and snapshot.used_mem[a] == 0


def test_a_pod_seen_before_its_node_counts_once_the_node_arrives():
    snapshot = ClusterSnapshot()
    snapshot.apply_pod_event("ADDED", pod("early", "late-node", gpus=3))
    snapshot.apply_pod_event("ADDED", pod("gone", "late-node", gpus=1))
    snapshot.apply_pod_event("DELETED", pod("gone", "late-node", gpus=1))
    snapshot.apply_node_event("ADDED", node("late-node"))
    assert snapshot.used_gpu[row_of(snapshot, "late-node")] == 3


def test_node_events_update_labels_and_deletion():
    snapshot = ClusterSnapshot.from_objects([node("a", rack="r0")], [pod("p", "a", gpus=2)])
    a = row_of(snapshot, "a")
    old_rack = int(snapshot.domain[2, a])
    topology = snapshot.topology_version
    version = snapshot.version
    snapshot.apply_node_event("MODIFIED", node("a", rack="r9", rv="7"))
    assert int(snapshot.domain[2, a]) != old_rack and snapshot.topology_version != topology
    assert snapshot.version != version and snapshot.nodes_resource_version == "7"
    snapshot.apply_node_event("DELETED", node("a"))
    assert snapshot.flags[a] == 0 and snapshot.node_count == 0
    snapshot.apply_node_event("ADDED", node("a", rack="r9"))
    assert row_of(snapshot, "a") == a and snapshot.used_gpu[a] == 2 and snapshot.node_count == 1


def test_it_grows_its_arrays():
    snapshot = ClusterSnapshot(capacity=1)
    for index in range(100):
        snapshot.apply_node_event("ADDED", node(f"n{index}", rack=f"r{index % 7}"))
    assert snapshot.size == 100 and snapshot.node_count == 100
    assert snapshot.alloc_gpu[:100].sum() == 800


def test_copies_are_independent():
    snapshot = ClusterSnapshot.from_objects([node("a")])
    other = snapshot.copy()
    other.apply_pod_event("ADDED", pod("p", "a", gpus=8))
    other.apply_node_event("ADDED", node("b"))
    assert snapshot.used_gpu[0] == 0 and snapshot.size == 1
    assert other.used_gpu[0] == 8 and other.size == 2
    assert other.version != snapshot.version


@pytest.mark.parametrize(("event", "obj"), [("BOOKMARK", node("a")), ("ADDED", {"metadata": {}}),
                                             ("ADDED", "nope")])
def test_it_rejects_bad_events(event, obj):
    with pytest.raises(ValueError, match=r"event|metadata\.name"):
        ClusterSnapshot().apply_node_event(event, obj)


def test_it_tolerates_malformed_quantities_in_watch_objects():
    bad = node("a")
    bad["status"]["allocatable"]["nvidia.com/gpu"] = "lots"
    snapshot = ClusterSnapshot.from_objects([bad], [pod("p", "a", cpu="abc")])
    assert snapshot.alloc_gpu[0] == 0 and snapshot.used_cpu[0] == 0 and snapshot.used_gpu[0] == 1


def test_pod_requests_take_init_containers_and_overhead_into_account():
    spec = {"containers": [{"resources": {"requests": {"cpu": "1"}}}, {"resources": {"limits": {"cpu": "2"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "5", "nvidia.com/gpu": "1"}}}],
            "overhead": {"cpu": "250m"}}
    assert pod_requests({"spec": spec}) == (1, 5250, 0)


@pytest.mark.parametrize(("toleration", "expected"), [
    ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, True),
    ({"key": "k", "value": "other"}, False),
    ({"key": "k", "operator": "Exists"}, True),
    ({"operator": "Exists"}, True),
    ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, False),
])
def test_tolerations(toleration, expected):
    assert tolerates([toleration], ("k", "v", "NoSchedule")) is expected


def test_topology_keys_name_the_valid_keys():
    assert KEYS.level_of(KEYS.rack) == 2
    with pytest.raises(UnknownTopologyKey, match=r"zone=topology\.kubernetes\.io/zone"):
        KEYS.level_of("example.com/pod")


def test_summary_aggregates_free_gpus_per_zone_block_rack():
    snapshot = ClusterSnapshot.from_objects(
        [node("a", zone="z1", block="b1", rack="r1"), node("b", zone="z1", block="b1", rack="r1"),
         node("c", zone="z1", block="b2", rack="r2", cordoned=True), node("d", zone="z2", block="b3", rack="r3")],
        [pod("p", "a", gpus=6)])
    summary = json.loads(json.dumps(snapshot.to_summary()))
    assert summary["nodes"] == 4 and summary["totalGpus"] == 32 and summary["freeGpus"] == 18
    z1 = summary["zones"][0]
    assert (z1["name"], z1["freeGpus"], z1["totalGpus"], z1["unschedulableNodes"]) == ("z1", 10, 24, 1)
    assert [(b["name"], [(r["name"], r["freeGpus"], r["nodes"]) for r in b["racks"]]) for b in z1["blocks"]] == [
        ("b1", [("r1", 10, 2)]), ("b2", [("r2", 0, 1)])]


def test_memory_accounting_is_reported():
    snapshot = synthetic_cluster(racks=4, nodes_per_rack=16)
    assert snapshot.nbytes_per_node() > 0
    assert set(snapshot.memory_breakdown()) == {"node_arrays", "node_names", "domains", "pods"}


# -- incremental == rebuilt ------------------------------------------------------------------------------------

_events = st.lists(st.tuples(
    st.sampled_from(["node", "pod"]), st.sampled_from(["ADDED", "MODIFIED", "DELETED"]),
    st.integers(0, 3), st.integers(0, 4), st.sampled_from(["Running", "Pending", "Succeeded"]),
    st.sampled_from(["r0", "r1"]), st.booleans()), max_size=40)


@settings(max_examples=150, deadline=None)
@given(events=_events)
def test_incremental_events_match_a_rebuild_from_the_final_objects(events):
    snapshot = ClusterSnapshot()
    nodes: dict[str, dict] = {}
    pods: dict[str, dict] = {}
    for kind, event, index, gpus, phase, rack, bound in events:
        if kind == "node":
            obj = node(f"n{index}", rack=rack, gpus=gpus + 4)
            snapshot.apply_node_event(event, obj)
            if event == "DELETED":
                nodes.pop(obj["metadata"]["name"], None)
            else:
                nodes[obj["metadata"]["name"]] = obj
        else:
            obj = pod(f"p{index}", f"n{gpus % 3}" if bound else None, gpus=gpus, phase=phase)
            snapshot.apply_pod_event(event, obj)
            if event == "DELETED":
                pods.pop(obj["metadata"]["name"], None)
            else:
                pods[obj["metadata"]["name"]] = obj
    rebuilt = ClusterSnapshot.from_objects(nodes.values(), pods.values())
    for name in nodes:
        mine, theirs = snapshot.row_of[name], rebuilt.row_of[name]
        for column in ("alloc_gpu", "used_gpu", "used_cpu", "used_mem", "used_pods", "flags"):
            assert getattr(snapshot, column)[mine] == getattr(rebuilt, column)[theirs], column
        assert snapshot.domain_path(2, int(snapshot.domain[2, mine])) == rebuilt.domain_path(
            2, int(rebuilt.domain[2, theirs]))
    assert snapshot.node_count == len(nodes)


# -- synthetic clusters ------------------------------------------------------------------------------------------


def test_synthetic_layout_deals_racks_round_robin_over_blocks():
    nodes = synthetic_nodes(zones=3, blocks_per_zone=8, racks=racks_for(1000), nodes_per_rack=16)
    assert len(nodes) == 1008
    racks = {n["metadata"]["labels"][KEYS.rack] for n in nodes}
    blocks = {(n["metadata"]["labels"][KEYS.zone], n["metadata"]["labels"][KEYS.block]) for n in nodes}
    assert len(racks) == 63 and len(blocks) == 24
    assert synthetic_nodes(racks=2, seed=3) == synthetic_nodes(racks=2, seed=3)


@pytest.mark.parametrize("pattern", FRAGMENTATIONS)
def test_fragmentation_patterns(pattern):
    snapshot = synthetic_cluster(racks=48, fragmentation=pattern, need=20)
    used = snapshot.used_gpu[: snapshot.size]
    alloc = snapshot.alloc_gpu[: snapshot.size]
    assert (used <= alloc).all() and (used >= 0).all()
    if pattern == "F0":
        assert used.sum() == 0
    if pattern == "F2":
        assert (used > 0).mean() > 0.8
    if pattern == "F3":
        racks = snapshot.domain[2, : snapshot.size]
        for rack in np.unique(racks):
            members = used[racks == rack]
            assert (members == 0).all() or (members == alloc[racks == rack]).all()
    if pattern == "F4":
        # 1–3 of 8 GPUs in use: no node can take an 8-GPU pod although most GPUs are free.
        assert ((used >= 1) & (used <= 3)).all() and ((alloc - used) < 8).all()
        assert (alloc - used).sum() >= 0.4 * alloc.sum()
    if pattern == "F5":
        zones = snapshot.domain[0, : snapshot.size]
        free_slots = sorted((((alloc - used)[zones == z]) // 8).sum() for z in np.unique(zones))
        assert free_slots == [17, 18, 19]


def test_variant_h_has_unhealthy_nodes_and_4_gpu_nodes():
    snapshot = synthetic_cluster(racks=100, variant_h=True, seed=1)
    n = snapshot.size
    assert (snapshot.alloc_gpu[:n] == 4).any()
    assert ((snapshot.flags[:n] & READY) == 0).any()
    assert (snapshot.flags[:n] & CORDONED).any()
    assert (snapshot.taint_code[:n] != 0).any()
    assert (snapshot.missing[:n] & 0b10).any()


def test_pickling_drops_caches_and_renews_version_stamps():
    import pickle

    from trainer_portal.placement.engine import PlacementRequest, place

    snapshot = synthetic_cluster(racks=4)
    place([PlacementRequest("g", 4, {"nvidia.com/gpu": 8}, topology_key=KEYS.rack)], snapshot)
    assert snapshot.shape_cache
    restored = pickle.loads(pickle.dumps(snapshot))
    assert restored.shape_cache == {} and restored.version != snapshot.version
    assert (restored.used_gpu == snapshot.used_gpu).all() and restored.row_of == snapshot.row_of
    assert place([PlacementRequest("g", 4, {"nvidia.com/gpu": 8}, topology_key=KEYS.rack)], restored).fits
