"""Differential test: the sandbox's gang scheduler and the preview's placement engine must agree.

They are independent implementations on purpose — the scheduler tries each candidate domain and places pods
node by node (first fit); the engine counts slots bottom-up and descends BestFit (Kueue TAS style). For a
homogeneous gang with one required topology level both are exact, so on any cluster their "fits" verdicts
must be identical. Random small clusters include cordoned, NotReady and tainted nodes, nodes missing a
topology label, and GPUs already in use.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox.controllers.fit import try_place
from sandbox.topology import NodeShape, make_node
from trainer_portal.placement.engine import PlacementRequest, place
from trainer_portal.placement.snapshot import ClusterSnapshot, TopologyKeys

KEYS = TopologyKeys()
LEVEL_KEYS = [None, KEYS.zone, KEYS.block, KEYS.rack]


@st.composite
def clusters(draw):
    """Return (nodes, bound_pods): up to 12 nodes over 2 zones × 2 blocks × 2 racks with mixed health and usage."""
    nodes, bound = [], []
    for index in range(draw(st.integers(1, 12))):
        zone = draw(st.sampled_from(["zone-a", "zone-b"]))
        block = f"{zone}-b{draw(st.integers(0, 1))}"
        rack = f"{block}-r{draw(st.integers(0, 1))}"
        # Labels go missing from the fine end only (no rack; no block and rack; none at all). A node that lacks its
        # zone but carries a block label is a documented difference: the engine (Kueue semantics) keys domains by
        # their whole path, the scheduler (kube-scheduler semantics) by the one label — see docs/placement.md.
        missing = draw(st.sampled_from([None, None, None, None, "rack", "block", "zone"]))
        gpus = draw(st.sampled_from([4, 8]))
        health = draw(st.sampled_from(["ok"] * 6 + ["cordoned", "not-ready", "tainted"]))
        name = f"node-{index}"
        maintenance = [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]
        nodes.append(
            make_node(
                name,
                zone=None if missing == "zone" else zone,
                block=None if missing in ("zone", "block") else block,
                rack=None if missing in ("zone", "block", "rack") else rack,
                shape=NodeShape(gpus=gpus),
                unschedulable=health == "cordoned",
                ready=health != "not-ready",
                taints=maintenance if health == "tainted" else None,
            )
        )
        used = draw(st.integers(0, gpus))
        if used:
            bound.append(_pod(f"busy-{index}", gpus=used, node=name))
    return nodes, bound


def _pod(name: str, *, gpus: int, node: str | None = None) -> dict:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "node", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]},
        "status": {"phase": "Pending"},
    }
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"]["phase"] = "Running"
    return pod


@settings(max_examples=300, deadline=None)
@given(
    cluster=clusters(),
    pod_count=st.integers(1, 10),
    gpus_per_pod=st.sampled_from([1, 2, 4, 8]),
    topology_key=st.sampled_from(LEVEL_KEYS),
)
def test_the_scheduler_and_the_preview_engine_agree_on_whether_a_gang_fits(
    cluster, pod_count, gpus_per_pod, topology_key
):
    nodes, bound = cluster
    gang = [_pod(f"gang-{index}", gpus=gpus_per_pod) for index in range(pod_count)]

    scheduler = try_place(gang, nodes, bound, topology_key)
    snapshot = ClusterSnapshot.from_objects(nodes, bound, KEYS)
    request = PlacementRequest(
        name="gang", pod_count=pod_count, resources={"nvidia.com/gpu": str(gpus_per_pod)}, topology_key=topology_key
    )
    engine = place([request], snapshot, keys=KEYS)

    assert engine.fits == scheduler.fits, (scheduler.message, engine.to_dict()["groups"][0].get("explanation"))
    if scheduler.fits and topology_key:
        # Both keep the gang inside one domain of the level; the scheduler's assignment is checked for it here.
        labels = {node["metadata"]["name"]: node["metadata"]["labels"] for node in nodes}
        domains = {labels[node_name].get(topology_key) for node_name in scheduler.assignments.values()}
        assert len(domains) == 1 and None not in domains


def test_the_differential_check_can_fail_when_one_side_ignores_a_constraint():
    """Guard against a vacuous comparison: a rack gang that only fits across racks must be refused by both."""
    nodes = [
        make_node("n1", zone="z", block="b", rack="r1", shape=NodeShape(gpus=8)),
        make_node("n2", zone="z", block="b", rack="r2", shape=NodeShape(gpus=8)),
    ]
    gang = [_pod(f"g{i}", gpus=8) for i in range(2)]
    snapshot = ClusterSnapshot.from_objects(nodes, [], KEYS)
    request = PlacementRequest(name="g", pod_count=2, resources={"nvidia.com/gpu": "8"}, topology_key=KEYS.rack)

    assert try_place(gang, nodes, [], KEYS.rack).fits is False
    assert place([request], snapshot, keys=KEYS).fits is False
    assert try_place(gang, nodes, [], KEYS.block).fits is True
    assert place([request.__class__(**{**request.__dict__, "topology_key": KEYS.block})], snapshot, keys=KEYS).fits
