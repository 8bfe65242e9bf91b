"""Golden placement cases: Kueue TAS examples (docs/reference/placement.md §1.4, §1.7), joint and composite
placement."""

from __future__ import annotations

import json

import pytest

from runtimes.domain.expansion import expand
from runtimes.domain.placement_adapter import job_requests, requests_from_expansion
from trainer_portal.placement.engine import PlacementInputError, PlacementRequest, place
from trainer_portal.placement.snapshot import ClusterSnapshot, TopologyKeys
from trainer_portal.placement.synthetic import synthetic_cluster

KEYS = TopologyKeys()
GPU = "nvidia.com/gpu"


def node(name: str, gpus: int, *, zone: str = "z", block: str = "b", rack: str | None = None, ready: bool = True,
         cordoned: bool = False, taint: bool = False, cpu: str = "64") -> dict:
    labels = {KEYS.zone: zone, KEYS.block: block, KEYS.rack: rack or f"r-{name}", KEYS.host: name}
    spec: dict = {"unschedulable": cordoned}
    if taint:
        spec["taints"] = [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]
    return {"metadata": {"name": name, "labels": labels}, "spec": spec,
            "status": {"allocatable": {GPU: str(gpus), "cpu": cpu, "memory": "512Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def snapshot_of(*nodes: dict) -> ClusterSnapshot:
    return ClusterSnapshot.from_objects(nodes, keys=KEYS)


def one(snapshot: ClusterSnapshot, count: int, *, gpus: int = 1, key: str | None = KEYS.block, **kwargs):
    result = place([PlacementRequest("g", count, {GPU: gpus}, topology_key=key, **kwargs)], snapshot)
    return result.groups[0]


def test_kueue_best_fit_3_3_2_1_with_7_pods_takes_3_3_1():
    snapshot = snapshot_of(*(node(f"n{i}", g) for i, g in enumerate([3, 3, 2, 1])))
    group = one(snapshot, 7)
    assert group.fits and group.pods_per_node == {"n0": 3, "n1": 3, "n3": 1}
    assert group.domain == {"level": "block", "key": KEYS.block, "value": "b", "path": ["z", "b"]}


def test_kueue_best_fit_with_slices_of_2_on_nodes_6_5_4_3_2_takes_6_4_2():
    snapshot = snapshot_of(*(node(f"n{i}", g) for i, g in enumerate([6, 5, 4, 3, 2])))
    group = one(snapshot, 12, slice_size=2, slice_topology_key=KEYS.host)
    assert group.fits and group.pods_per_node == {"n0": 6, "n2": 4, "n4": 2}


def test_required_level_picks_the_smallest_domain_that_fits():
    snapshot = snapshot_of(node("a1", 8, rack="ra"), node("a2", 8, rack="ra"), node("b1", 8, rack="rb"),
                           node("c1", 4, rack="rc"), node("c2", 3, rack="rc"))
    group = one(snapshot, 7, key=KEYS.rack)
    assert group.domain["value"] == "rc" and group.pods_per_node == {"c1": 4, "c2": 3}
    group = one(snapshot, 12, key=KEYS.rack)
    assert group.domain["value"] == "ra"


def test_ties_are_broken_by_label_values():
    snapshot = snapshot_of(node("x", 4, rack="r2"), node("y", 4, rack="r1"))
    assert one(snapshot, 4, key=KEYS.rack).domain["value"] == "r1"


@pytest.mark.parametrize(("count", "have"), [(10, 7), (8, 7)])
def test_fit_only_x_out_of_n(count, have):
    snapshot = snapshot_of(node("a", 4), node("b", 3))
    group = one(snapshot, count)
    assert not group.fits and group.placed == 0 and group.pods_per_node == {}
    assert (group.explanation.have, group.explanation.need) == (have, count)
    assert f"fits {have} of {count}" in group.message


def test_near_miss_zone_fits_63_of_64_and_suggests_dropping_the_zone():
    snapshot = synthetic_cluster(racks=48, fragmentation="F5", need=64)
    group = one(snapshot, 64, gpus=8, key=KEYS.zone)
    explanation = group.explanation
    assert not group.fits
    assert (explanation.binding_level, explanation.best_domain, explanation.have, explanation.need) == (
        "zone", "zone zone-a", 63, 64)
    assert "zone zone-a, fits 63 of 64" in group.message
    assert explanation.alternatives[0] == "fits if the zone constraint is dropped"
    assert "needs 1 more free 8-GPU node in zone zone-a" in explanation.alternatives
    assert explanation.excluded == {"insufficient nvidia.com/gpu": snapshot.size - 63 - 62 - 61}


def test_exclusions_are_counted_by_cause():
    snapshot = snapshot_of(node("ok", 2), node("down", 8, ready=False), node("cordoned", 8, cordoned=True),
                           node("tainted", 8, taint=True), node("small", 0))
    unlabelled = node("unlabelled", 8)
    del unlabelled["metadata"]["labels"][KEYS.block]
    snapshot.apply_node_event("ADDED", unlabelled)
    group = one(snapshot, 4)
    assert group.explanation.excluded == {"not ready": 1, "cordoned": 1, "taint 'maintenance'": 1,
                                          f"missing label {KEYS.block}": 1, "insufficient nvidia.com/gpu": 1}
    assert group.explanation.total_nodes == 6
    assert any("not-ready, cordoned or tainted" in advice for advice in group.explanation.alternatives)
    tolerated = one(snapshot, 4, tolerations=({"key": "maintenance", "operator": "Exists"},))
    assert tolerated.fits and set(tolerated.pods_per_node) <= {"ok", "tainted"}


def test_a_key_present_on_no_node_is_explained_not_raised():
    keys = TopologyKeys(block="example.com/nonexistent-block")
    snapshot = ClusterSnapshot.from_objects([node("a", 8)], keys=keys)
    result = place([PlacementRequest("g", 2, {GPU: 1}, topology_key=keys.block)], snapshot)
    group = result.groups[0]
    assert not group.fits
    assert group.explanation.excluded == {"missing label example.com/nonexistent-block": 1}
    assert "fits if the block constraint is relaxed to zone" in group.explanation.alternatives


def test_unknown_keys_and_bad_quantities_raise_input_errors():
    snapshot = snapshot_of(node("a", 8))
    with pytest.raises(PlacementInputError, match="unknown topology key"):
        place([PlacementRequest("g", 1, {GPU: 1}, topology_key="example.com/pod")], snapshot)
    with pytest.raises(PlacementInputError, match="whole units"):
        place([PlacementRequest("g", 1, {GPU: "4Gi"})], snapshot)
    with pytest.raises(PlacementInputError, match="quantity"):
        place([PlacementRequest("g", 1, {"memory": "abc"})], snapshot)


def test_even_an_empty_rack_is_too_small_for_a_level_3_trainer():
    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=8, nodes_per_rack=16)
    group = one(snapshot, 100, gpus=8, key=KEYS.rack)
    assert not group.fits
    assert "even an empty rack holds at most 16 of 100 pods" in " ".join(group.explanation.alternatives)
    assert group.explanation.alternatives[0] == "fits if the rack constraint is relaxed to block"


def test_earlier_groups_consume_capacity_and_the_snapshot_is_untouched():
    snapshot = snapshot_of(node("a", 8, rack="r1"), node("b", 8, rack="r2"))
    version = snapshot.version
    requests = [PlacementRequest("first", 8, {GPU: 1}, topology_key=KEYS.rack),
                PlacementRequest("second", 8, {GPU: 1}, topology_key=KEYS.rack),
                PlacementRequest("third", 1, {GPU: 1}, topology_key=KEYS.rack)]
    result = place(requests, snapshot)
    first, second, third = result.groups
    assert first.fits and second.fits and not third.fits
    assert set(first.pods_per_node) != set(second.pods_per_node)
    assert not result.fits
    assert snapshot.version == version and snapshot.used_gpu[:2].sum() == 0


def test_basic_groups_are_placed_partially():
    snapshot = snapshot_of(node("a", 3), node("b", 1))
    group = one(snapshot, 6, key=None, policy="basic")
    assert not group.fits and group.placed == 4
    assert group.pods_per_node == {"a": 3, "b": 1}
    assert "4 of 6" in group.message


def test_unconstrained_gangs_fill_the_fullest_nodes_first():
    snapshot = snapshot_of(node("big", 8), node("small", 2), node("mid", 4))
    group = one(snapshot, 5, key=None)
    assert group.fits and group.pods_per_node == {"small": 2, "mid": 3}


def test_a_torch_expansion_places_its_level_1_gang_in_one_zone():
    runtime = {"spec": {"mlPolicy": {"numNodes": 1, "torch": {}},
                        "scheduling": {"schedulingConstraints": {"topology": [{"key": KEYS.zone}]}},
                        "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {
                            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                            "spec": {"template": {"spec": {"containers": [{"name": "node"}]}}}}}]}}}}
    expansion = expand(runtime, trainjob_name="my-job", num_nodes=100, resources_per_node={GPU: 4})
    snapshot = synthetic_cluster(racks=48)
    result = place(job_requests(expansion), snapshot)
    (group,) = result.groups
    assert group.fits and group.name == expansion.pod_groups[0].name and group.placed == 100
    assert group.span["zones"] == 1 and group.span["nodes"] == 50
    assert all(pods == 2 for pods in group.pods_per_node.values())
    assert result.fragmentation_after.free_gpus == result.fragmentation_before.free_gpus - 400
    json.dumps(result.to_dict())


def test_launcher_and_workers_are_placed_in_the_same_block():
    launcher = {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"template": {"spec": {"containers": [{"name": "node", "resources": {
                    "requests": {"cpu": "2"}}}]}}}}
    workers = {"spec": {"template": {"spec": {"containers": [{"name": "node", "resources": {
        "limits": {GPU: "8"}}}]}}}}
    runtime = {"spec": {
        "mlPolicy": {"numNodes": 1, "mpi": {"runLauncherAsNode": False}},
        "scheduling": {"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"],
                                           "schedulingConstraints": {"topology": [{"key": KEYS.block}]}}]},
        "template": {"spec": {"replicatedJobs": [
            {"name": "launcher", "template": launcher}, {"name": "node", "template": workers}]}}}}
    expansion = expand(runtime, trainjob_name="mpi", num_nodes=4)
    assert {p.replicated_job: p.resources_per_pod for p in expansion.pod_sets}["node"] == {GPU: "8"}
    (request,) = requests_from_expansion(expansion)
    assert request.pod_count == 4 and len(request.extra) == 1
    # Block b0 has 4 full 8-GPU nodes but no CPU left for the launcher; block b1 has room for everything.
    snapshot = snapshot_of(*(node(f"a{i}", 8, block="b0", cpu="1") for i in range(4)),
                           *(node(f"b{i}", 8, block="b1") for i in range(5)))
    (group,) = place(job_requests(expansion), snapshot).groups
    assert group.fits and group.placed == 5 and group.pod_count == 5
    assert group.domain["value"] == "b1" and all(name.startswith("b") for name in group.pods_per_node)


def test_composite_job_in_a_zone_groups_in_blocks_jobs_in_racks():
    def rjob(name: str, parallelism: int, replicas: int = 1) -> dict:
        return {"name": name, "replicas": replicas, "template": {"spec": {"parallelism": parallelism, "template": {
            "spec": {"containers": [{"name": name, "resources": {"requests": {GPU: "8"}}}]}}}}}
    runtime = {"spec": {
        "scheduling": {"schedulingConstraints": {"topology": [{"key": KEYS.zone}]},
                       "replicatedJobs": [
                           {"targetReplicatedJobs": ["ps"],
                            "schedulingConstraints": {"topology": [{"key": KEYS.block}]}},
                           {"targetReplicatedJobs": ["worker"],
                            "schedulingConstraints": {"topology": [{"key": KEYS.block}]},
                            "job": {"schedulingConstraints": {"topology": [{"key": KEYS.rack}]}}}]},
        "template": {"spec": {"replicatedJobs": [rjob("ps", 2), rjob("worker", 4, replicas=3)]}}}}
    expansion = expand(runtime, trainjob_name="big", composite=True)
    # zone-a: one block with racks of 3 free nodes (too small for a 4-pod Job); zone-b: racks of 4.
    nodes = [node(f"a{r}{i}", 8, zone="zone-a", block="a0", rack=f"ra{r}") for r in range(4) for i in range(3)]
    nodes += [node(f"b{r}{i}", 8, zone="zone-b", block="b0", rack=f"rb{r}") for r in range(3) for i in range(4)]
    nodes += [node(f"c{i}", 8, zone="zone-b", block="b1", rack="rc") for i in range(2)]
    result = place(job_requests(expansion), ClusterSnapshot.from_objects(nodes, keys=KEYS))
    by_name = {g.name: g for g in result.groups}
    root, ps, workers, *jobs = expansion.pod_groups
    assert result.fits
    assert by_name[root.name].domain["value"] == "zone-b"
    assert by_name[ps.name].domain["value"] == "b1"
    assert by_name[workers.name].domain["value"] == "b0"
    racks = [by_name[job.name].domain["value"] for job in jobs]
    assert sorted(racks) == ["rb0", "rb1", "rb2"]
    for job in jobs:
        assert by_name[job.name].placed == 4 and by_name[job.name].span["racks"] == 1


def test_composite_reports_the_best_zone_when_no_zone_holds_all_groups():
    def rjob(name: str, parallelism: int) -> dict:
        return {"name": name, "template": {"spec": {"parallelism": parallelism, "template": {
            "spec": {"containers": [{"name": name, "resources": {"requests": {GPU: "8"}}}]}}}}}
    runtime = {"spec": {
        "scheduling": {"schedulingConstraints": {"topology": [{"key": KEYS.zone}]},
                       "replicatedJobs": [{"targetReplicatedJobs": ["a"]}, {"targetReplicatedJobs": ["b"]}]},
        "template": {"spec": {"replicatedJobs": [rjob("a", 3), rjob("b", 3)]}}}}
    expansion = expand(runtime, trainjob_name="j", composite=True)
    nodes = [node(f"x{i}", 8, zone="zx") for i in range(4)] + [node(f"y{i}", 8, zone="zy") for i in range(3)]
    result = place(job_requests(expansion), ClusterSnapshot.from_objects(nodes, keys=KEYS))
    root = result.groups[0]
    assert not result.fits and not root.fits
    assert "no zone holds all 2 groups together" in root.message and "zone zx" in root.message


def test_identical_input_gives_identical_output():
    def run() -> dict:
        snapshot = synthetic_cluster(racks=30, fragmentation="F1", seed=4)
        requests = [PlacementRequest("g", 40, {GPU: 4}, topology_key=KEYS.block),
                    PlacementRequest("h", 9, {GPU: 8}, topology_key=KEYS.rack)]
        return place(requests, snapshot).to_dict()
    first, second = run(), run()
    assert first.pop("snapshotVersion") != second.pop("snapshotVersion")  # version stamps are unique
    assert first == second


def test_preferred_mode_falls_back_to_a_coarser_level_then_spreads():
    snapshot = snapshot_of(node("a", 4, rack="r1", block="b1"), node("b", 4, rack="r2", block="b1"),
                           node("c", 4, rack="r3", block="b2"))
    in_rack = one(snapshot, 4, key=KEYS.rack, preferred=True)
    assert in_rack.fits and in_rack.domain["level"] == "rack"
    in_block = one(snapshot, 6, key=KEYS.rack, preferred=True)
    assert in_block.fits and in_block.domain == {"level": "block", "key": KEYS.block, "value": "b1",
                                                 "path": ["z", "b1"]}
    assert "preferred rack not possible" in in_block.message
    spread = one(snapshot, 12, key=KEYS.rack, preferred=True)
    assert spread.fits and spread.span["blocks"] == 2
    too_big = one(snapshot, 13, key=KEYS.rack, preferred=True)
    assert not too_big.fits and too_big.explanation.binding_level == "rack"


@pytest.mark.parametrize(("pattern", "key"), [("F1", KEYS.block), ("F3", KEYS.zone), ("F4", None)])
def test_fragmentation_after_placement_matches_a_rebuilt_snapshot(pattern, key):
    snapshot = synthetic_cluster(racks=40, fragmentation=pattern, seed=2)
    resources = {GPU: "4", "cpu": "8", "memory": "32Gi"}
    requests = [PlacementRequest("a", 30, resources, topology_key=key),
                PlacementRequest("b", 12, resources, topology_key=KEYS.rack)]
    result = place(requests, snapshot)
    assert result.groups[0].fits
    rebuilt = snapshot.copy()
    index = 0
    for group in result.groups:
        for name, pods in group.pods_per_node.items():
            for _ in range(pods):
                index += 1
                rebuilt.apply_pod_event("ADDED", {
                    "metadata": {"name": f"p{index}", "namespace": "x"},
                    "spec": {"nodeName": name, "containers": [{"name": "c", "resources": {"requests": resources}}]},
                    "status": {"phase": "Running"}})
    probe = place([PlacementRequest("probe", 1, resources)], rebuilt)
    assert probe.fragmentation_before == result.fragmentation_after
    assert result.fragmentation_after.free_gpus == result.fragmentation_before.free_gpus - 4 * index


def test_composite_jobs_without_a_topology_key_may_spread_over_nodes():
    runtime = {"spec": {
        "scheduling": {"schedulingConstraints": {"topology": [{"key": KEYS.zone}]},
                       "replicatedJobs": [{"targetReplicatedJobs": ["worker"], "job": {}}]},
        "template": {"spec": {"replicatedJobs": [{"name": "worker", "replicas": 2, "template": {"spec": {
            "parallelism": 3, "template": {"spec": {"containers": [{"name": "w", "resources": {
                "requests": {GPU: "8"}}}]}}}}}]}}}}
    expansion = expand(runtime, trainjob_name="j", composite=True)
    nodes = [node(f"n{i}", 8, zone="z", rack=f"r{i}") for i in range(6)]
    result = place(job_requests(expansion), ClusterSnapshot.from_objects(nodes, keys=KEYS))
    jobs = [g for g in result.groups if g.level == 3]
    assert result.fits and [job.placed for job in jobs] == [3, 3]
    assert all(job.span["nodes"] == 3 and job.domain is None for job in jobs)
    assert set(jobs[0].pods_per_node).isdisjoint(jobs[1].pods_per_node)


@pytest.mark.parametrize("key", [KEYS.zone, KEYS.rack, KEYS.host, None])
def test_an_empty_cluster_is_explained(key):
    result = place([PlacementRequest("g", 4, {GPU: 1}, topology_key=key)], ClusterSnapshot())
    group = result.groups[0]
    assert not group.fits and group.explanation.total_nodes == 0
    assert "Total nodes: 0" in group.message
    json.dumps(result.to_dict())
    nothing = place([PlacementRequest("g", 0, {GPU: 1}, topology_key=key)], ClusterSnapshot()).groups[0]
    assert nothing.fits and nothing.placed == 0


def test_queue_explanations_independent_and_sequential():
    from trainer_portal.placement.engine import explain_queue

    snapshot = snapshot_of(node("a", 8, rack="r1"), node("b", 8, rack="r2"))
    jobs = [[PlacementRequest(f"job{i}", 8, {GPU: 1}, topology_key=KEYS.rack)] for i in range(3)]
    independent = explain_queue(jobs, snapshot)
    assert [r.fits for r in independent] == [True, True, True]
    assert independent[0].groups[0].pods_per_node == {}  # fit/domain only
    sequential = explain_queue(jobs, snapshot, sequential=True)
    assert [r.fits for r in sequential] == [True, True, False]
    assert "fits 0 of 8" in sequential[2].groups[0].message
    assert snapshot.used_gpu[:2].sum() == 0


def test_sequential_queue_with_patched_caches_matches_a_rebuild_after_every_admission():
    from trainer_portal.placement.engine import explain_queue

    snapshot = synthetic_cluster(racks=30, fragmentation="F1", seed=5)
    shapes = [{GPU: "4", "cpu": "8"}, {GPU: "8", "cpu": "16"}, {GPU: "2"}]
    keys = [KEYS.zone, KEYS.block, KEYS.rack, None]
    jobs = []
    for index in range(40):
        request = PlacementRequest(f"job{index}", [8, 16, 40, 3][index % 4], shapes[index % 3],
                                   topology_key=keys[index % 4],
                                   slice_size=8 if index % 5 == 0 and index % 4 != 3 else None,
                                   slice_topology_key=KEYS.rack if index % 5 == 0 and index % 4 < 2 else None)
        if request.slice_size and request.pod_count % 8:
            request = PlacementRequest(request.name, 16, request.resources, topology_key=request.topology_key)
        jobs.append([request])
    fast = explain_queue(jobs, snapshot, sequential=True)
    reference = snapshot.copy()
    admitted = 0
    for job, result in zip(jobs, fast, strict=True):
        expected = place(job, reference, with_fragmentation=False)
        assert result.fits == expected.fits, job[0].name
        assert result.groups[0].pods_per_node == expected.groups[0].pods_per_node, job[0].name
        if expected.fits:
            admitted += 1
            for name, pods in expected.groups[0].pods_per_node.items():
                for copy in range(pods):
                    reference.apply_pod_event("ADDED", {
                        "metadata": {"name": f"{job[0].name}-{name}-{copy}", "namespace": "q"},
                        "spec": {"nodeName": name, "containers": [{"name": "c", "resources": {
                            "requests": dict(job[0].resources)}}]},
                        "status": {"phase": "Running"}})
    assert 5 < admitted < len(jobs)
    assert snapshot.used_gpu.sum() == synthetic_cluster(racks=30, fragmentation="F1", seed=5).used_gpu.sum()
