"""Property tests: the engine agrees with a brute-force oracle on small clusters (≤ 12 nodes, homogeneous pods).

The oracle shares no code with the engine: node capacity by counting up pod by pod, feasibility by subset-sum
dynamic programming over explicit sets of reachable pod totals, domains from the raw label values.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainer_portal.placement.engine import PlacementRequest, place
from trainer_portal.placement.snapshot import ClusterSnapshot, TopologyKeys

KEYS = TopologyKeys()
LEVEL_KEYS = {"zone": KEYS.zone, "block": KEYS.block, "rack": KEYS.rack, "host": KEYS.host, "none": None}
LEVEL_DEPTH = {"zone": 1, "block": 2, "rack": 3, "host": 4, "none": 0}
TAINT = {"key": "dedicated", "value": "infer", "effect": "NoSchedule"}


@st.composite
def clusters(draw):
    count = draw(st.integers(1, 12))
    nodes, pods, facts = [], [], []
    for index in range(count):
        zone = draw(st.sampled_from(["za", "zb"]))
        block = draw(st.sampled_from(["b0", "b0", "b1"]))
        rack = draw(st.sampled_from(["r0", "r0", "r1", "r2"]))
        gpus = draw(st.sampled_from([0, 1, 2, 3, 4, 8]))
        used = draw(st.integers(0, gpus))
        cpu = draw(st.sampled_from([8, 16, 32]))
        used_cpu = draw(st.integers(0, cpu))
        max_pods = draw(st.sampled_from([3, 110]))
        ready = draw(st.booleans() | st.just(True))
        cordoned = draw(st.just(False) | st.booleans())
        tainted = draw(st.just(False) | st.booleans())
        drop_block = draw(st.just(False) | st.just(False) | st.booleans())
        name = f"n{index:02d}"
        labels = {KEYS.zone: zone, KEYS.block: block, KEYS.rack: rack, KEYS.host: name}
        if drop_block:
            del labels[KEYS.block]
        node = {
            "metadata": {"name": name, "labels": labels},
            "spec": {"unschedulable": cordoned, **({"taints": [TAINT]} if tainted else {})},
            "status": {"allocatable": {"nvidia.com/gpu": str(gpus), "cpu": str(cpu), "memory": "64Gi",
                                       "pods": str(max_pods)},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
        }
        nodes.append(node)
        if used or used_cpu:
            pods.append({"metadata": {"name": f"busy-{name}", "namespace": "x"},
                         "spec": {"nodeName": name, "containers": [{"name": "c", "resources": {"requests": {
                             "nvidia.com/gpu": str(used), "cpu": str(used_cpu)}}}]},
                         "status": {"phase": "Running"}})
        facts.append({"name": name, "labels": labels, "free_gpu": gpus - used, "free_cpu": cpu - used_cpu,
                      "free_pods": max_pods - (1 if (used or used_cpu) else 0), "ready": ready,
                      "cordoned": cordoned, "tainted": tainted})
    return nodes, pods, facts


def _capacity(fact: dict, gpu: int, cpu: int, tolerate: bool) -> int:
    if not fact["ready"] or fact["cordoned"] or (fact["tainted"] and not tolerate):
        return 0
    pods = 0
    while (pods + 1) * gpu <= fact["free_gpu"] and (pods + 1) * cpu <= fact["free_cpu"] and \
            pods + 1 <= fact["free_pods"]:
        pods += 1
        if pods > 200:
            break
    return pods


def _reachable(capacities: list[int]) -> set[int]:
    totals = {0}
    for capacity in capacities:
        totals = {t + k for t in totals for k in range(capacity + 1)}
    return totals


def _label_path(fact: dict, depth: int) -> tuple | None:
    keys = KEYS.levels()[:depth]
    if any(key not in fact["labels"] for key in keys):
        return None
    return tuple(fact["labels"][key] for key in keys)


def oracle(facts: list[dict], gpu: int, cpu: int, tolerate: bool, level: str, count: int,
           slice_size: int = 1, slice_level: str | None = None) -> bool:
    """True when `count` pods (in slices of `slice_size` per `slice_level` domain) fit in one `level` domain."""
    depth = LEVEL_DEPTH[level]
    slice_depth = LEVEL_DEPTH[slice_level] if slice_level else 0
    # Nodes need the labels down to the group's level and the slice level; a host-level slice is the node itself.
    need_depth = max(depth, 0 if slice_level == "host" else slice_depth)
    domains: dict[tuple, list[dict]] = {}
    for fact in facts:
        if _label_path(fact, need_depth) is None:
            continue
        domains.setdefault(_label_path(fact, depth), []).append(fact)
    for members in domains.values():
        if slice_level is None:
            if count in _reachable([_capacity(f, gpu, cpu, tolerate) for f in members]):
                return True
            continue
        groups: dict[tuple, list[int]] = {}
        for fact in members:
            key = (fact["name"],) if slice_level == "host" else _label_path(fact, slice_depth)
            groups.setdefault(key, []).append(_capacity(fact, gpu, cpu, tolerate))
        totals = {0}
        for capacities in groups.values():
            options = {t for t in _reachable(capacities) if t % slice_size == 0}
            totals = {a + b for a in totals for b in options if a + b <= count}
        if count in totals:
            return True
    return False


def _check_invariants(result, facts, gpu, cpu, tolerate, level, count, slice_size=1, slice_level=None):
    group = result.groups[0]
    by_name = {f["name"]: f for f in facts}
    if not group.fits:
        assert group.pods_per_node == {}
        assert group.explanation is not None and group.explanation.need >= 1
        return
    assert sum(group.pods_per_node.values()) == count
    for name, pods in group.pods_per_node.items():
        assert 0 < pods <= _capacity(by_name[name], gpu, cpu, tolerate), name
    depth = LEVEL_DEPTH[level]
    paths = {_label_path(by_name[name], depth) for name in group.pods_per_node}
    assert len(paths) == 1 and None not in paths
    if slice_level:
        slice_depth = LEVEL_DEPTH[slice_level]
        per_domain: dict[tuple, int] = {}
        for name, pods in group.pods_per_node.items():
            key = (name,) if slice_level == "host" else _label_path(by_name[name], slice_depth)
            per_domain[key] = per_domain.get(key, 0) + pods
        assert all(total % slice_size == 0 for total in per_domain.values()), per_domain


SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cluster=clusters(), gpu=st.integers(0, 4), cpu=st.sampled_from([0, 1, 4]), count=st.integers(1, 24),
       level=st.sampled_from(["zone", "block", "rack", "host", "none"]), tolerate=st.booleans())
def test_it_agrees_with_the_oracle_for_one_required_level(cluster, gpu, cpu, count, level, tolerate):
    nodes, pods, facts = cluster
    snapshot = ClusterSnapshot.from_objects(nodes, pods, KEYS)
    tolerations = ({"key": "dedicated", "operator": "Exists"},) if tolerate else ()
    request = PlacementRequest("g", count, {"nvidia.com/gpu": gpu, "cpu": cpu}, topology_key=LEVEL_KEYS[level],
                               tolerations=tolerations)
    result = place([request], snapshot)
    expected = oracle(facts, gpu, cpu, tolerate, level, count)
    assert result.groups[0].fits == expected
    _check_invariants(result, facts, gpu, cpu, tolerate, level, count)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), gpu=st.integers(1, 3), slices=st.integers(1, 6), slice_size=st.integers(1, 4),
       parent=st.sampled_from(["zone", "block", "none"]), slice_level=st.sampled_from(["rack", "block", "host"]))
def test_it_agrees_with_the_oracle_for_jobs_in_slices_under_a_parent(cluster, gpu, slices, slice_size, parent,
                                                                        slice_level):
    if LEVEL_DEPTH[slice_level] <= LEVEL_DEPTH[parent]:
        slice_level = "host"
    nodes, pods, facts = cluster
    snapshot = ClusterSnapshot.from_objects(nodes, pods, KEYS)
    count = slices * slice_size
    request = PlacementRequest("jobs", count, {"nvidia.com/gpu": gpu}, topology_key=LEVEL_KEYS[parent],
                               slice_size=slice_size, slice_topology_key=LEVEL_KEYS[slice_level])
    result = place([request], snapshot)
    expected = oracle(facts, gpu, 0, False, parent, count, slice_size, slice_level)
    assert result.groups[0].fits == expected
    _check_invariants(result, facts, gpu, 0, False, parent, count, slice_size, slice_level)


@SETTINGS
@given(cluster=clusters(), first=st.integers(1, 12), second=st.integers(1, 12),
       level=st.sampled_from(["zone", "block", "rack"]))
def test_joint_placement_never_overcommits_a_node(cluster, first, second, level):
    nodes, pods, facts = cluster
    snapshot = ClusterSnapshot.from_objects(nodes, pods, KEYS)
    before = (snapshot.version, snapshot.used_gpu.copy())
    requests = [PlacementRequest("a", first, {"nvidia.com/gpu": 1}, topology_key=LEVEL_KEYS[level]),
                PlacementRequest("b", second, {"nvidia.com/gpu": 1}, topology_key=LEVEL_KEYS[level])]
    result = place(requests, snapshot)
    taken: dict[str, int] = {}
    for group in result.groups:
        for name, count in group.pods_per_node.items():
            taken[name] = taken.get(name, 0) + count
    by_name = {f["name"]: f for f in facts}
    for name, count in taken.items():
        assert count <= _capacity(by_name[name], 1, 0, False)
    assert result.groups[0].fits == oracle(facts, 1, 0, False, level, first)
    assert snapshot.version == before[0] and (snapshot.used_gpu == before[1]).all()
