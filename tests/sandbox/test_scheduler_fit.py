"""Pure tests of the sandbox gang scheduler's placement core (`try_place`) on plain dicts."""

from __future__ import annotations

import pytest

from sandbox.controllers.fit import free_resources, try_place
from sandbox.controllers.resources import parse_quantity, pod_requests
from sandbox.topology import RACK_KEY, ZONE_KEY, NodeShape, make_node, preset_nodes

MAINTENANCE = {"key": "nvidia.com/gpu-maintenance", "value": "true", "effect": "NoSchedule"}


def pod(name: str, gpus: int = 8, *, node: str | None = None, phase: str = "Pending", tolerations=None,
        cpu: str = "8", memory: str = "64Gi", selector=None) -> dict:
    spec = {"containers": [{"name": "node", "resources": {"requests": {
        "nvidia.com/gpu": str(gpus), "cpu": cpu, "memory": memory}}}]}
    if node:
        spec["nodeName"] = node
    if tolerations:
        spec["tolerations"] = tolerations
    if selector:
        spec["nodeSelector"] = selector
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": {"phase": phase}}


def gang(n: int, gpus: int = 8, prefix: str = "p", **kw) -> list[dict]:
    return [pod(f"{prefix}{i:03d}", gpus, **kw) for i in range(n)]


def racks(count: int, nodes_per_rack: int = 4, zone_of=lambda r: "zone-a") -> list[dict]:
    return [make_node(f"n-r{r}-{i}", zone=zone_of(r), block="block-1", rack=f"r{r}")
            for r in range(count) for i in range(nodes_per_rack)]


def test_it_places_a_gang_that_fits_and_reports_every_pod():
    attempt = try_place(gang(4), racks(1), [], None)
    assert attempt.fits
    assert sorted(attempt.assignments) == ["p000", "p001", "p002", "p003"]
    assert len(set(attempt.assignments.values())) == 4


def test_it_keeps_a_rack_constrained_gang_on_one_rack():
    nodes = racks(3)
    bound = [pod("busy", 8, node="n-r0-0", phase="Running")]
    attempt = try_place(gang(8, 4), nodes, bound, RACK_KEY)
    assert attempt.fits
    racks_used = {next(n for n in nodes if n["metadata"]["name"] == a)["metadata"]["labels"][RACK_KEY]
                  for a in attempt.assignments.values()}
    assert len(racks_used) == 1
    # r0 has 3 free nodes x 2 slots = 6 < 8, so first fit moves on to r1.
    assert racks_used == {"r1"} and attempt.domain == "r1"


def test_it_refuses_a_gang_spanning_two_racks_and_names_the_best_rack():
    nodes = racks(2)
    bound = [pod("busy", 4, node="n-r1-0", phase="Running")]
    attempt = try_place(gang(8), nodes, bound, RACK_KEY)
    assert not attempt.fits and attempt.assignments == {}
    # kube-scheduler's FitError: always "0/<nodes>", "<count> <reason>" strings sorted, a full stop.
    assert attempt.message == (
        "0/8 nodes are available: 1 Insufficient nvidia.com/gpu, 7 node(s) didn't fit the gang: no domain fits "
        '8 pods (best rack "r0" fits 4).'
    )


def test_it_explains_the_63_of_64_near_miss_with_exclusion_counts():
    nodes = preset_nodes("demo")
    bound = [pod("other", 4, node="gpu-a1-r1-n1", phase="Running")]
    attempt = try_place(gang(64, 4), nodes, bound, ZONE_KEY)
    assert not attempt.fits
    assert attempt.best_domain == "zone-a" and attempt.best_count == 63
    assert attempt.message == (
        "0/64 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, "
        "1 node(s) had untolerated taint {nvidia.com/gpu-maintenance: true}, 2 node(s) were unschedulable, "
        "60 node(s) didn't fit the gang: no domain fits 64 pods (best zone \"zone-a\" fits 63)."
    )


def test_it_admits_the_same_gang_once_the_other_pod_completes():
    nodes = preset_nodes("demo")
    bound = [pod("other", 4, node="gpu-a1-r1-n1", phase="Succeeded")]
    attempt = try_place(gang(64, 4), nodes, bound, ZONE_KEY)
    assert attempt.fits and attempt.domain == "zone-a"


@pytest.mark.parametrize(
    ("node_kwargs", "fragment"),
    [
        ({"unschedulable": True}, "1 node(s) were unschedulable"),
        ({"ready": False}, "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }"),
        ({"taints": [MAINTENANCE]}, "1 node(s) had untolerated taint {nvidia.com/gpu-maintenance: true}"),
        ({"taints": [{"key": "x", "effect": "NoExecute"}]}, "1 node(s) had untolerated taint {x: }"),
        ({"shape": NodeShape(gpus=4)}, "1 Insufficient nvidia.com/gpu"),
        ({"shape": NodeShape(cpu="4")}, "1 Insufficient cpu"),
        ({"shape": NodeShape(memory="16Gi")}, "1 Insufficient memory"),
        ({"shape": NodeShape(pods=0)}, "1 Insufficient pods"),
    ],
)
def test_it_excludes_an_unusable_node_and_says_why(node_kwargs, fragment):
    nodes = [make_node("bad", zone="z", block="b", rack="r", **node_kwargs)]
    attempt = try_place([pod("p", 8)], nodes, [], None)
    assert not attempt.fits
    assert attempt.message == f"0/1 nodes are available: {fragment}."


def test_it_ignores_prefer_no_schedule_taints():
    nodes = [make_node("n", zone="z", block="b", rack="r",
                       taints=[{"key": "soft", "value": "1", "effect": "PreferNoSchedule"}])]
    assert try_place([pod("p")], nodes, [], None).fits


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "nvidia.com/gpu-maintenance", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu-maintenance", "operator": "Exists"},
        {"operator": "Exists"},
        {"key": "nvidia.com/gpu-maintenance", "value": "true"},
    ],
)
def test_it_places_on_a_tainted_node_when_the_pod_tolerates_it(toleration):
    nodes = [make_node("n", zone="z", block="b", rack="r", taints=[MAINTENANCE])]
    assert try_place([pod("p", tolerations=[toleration])], nodes, [], None).fits


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "nvidia.com/gpu-maintenance", "operator": "Equal", "value": "false"},
        {"key": "other", "operator": "Exists"},
        {"key": "nvidia.com/gpu-maintenance", "operator": "Exists", "effect": "NoExecute"},
    ],
)
def test_it_refuses_a_tainted_node_when_the_toleration_does_not_match(toleration):
    nodes = [make_node("n", zone="z", block="b", rack="r", taints=[MAINTENANCE])]
    assert not try_place([pod("p", tolerations=[toleration])], nodes, [], None).fits


def test_it_counts_only_non_terminal_bound_pods_against_capacity():
    nodes = [make_node("n", zone="z", block="b", rack="r")]
    for phase, fits in (("Running", False), ("Pending", False), ("Succeeded", True), ("Failed", True)):
        assert try_place([pod("p", 4)], nodes, [pod("old", 6, node="n", phase=phase)], None).fits is fits


def test_it_ignores_bound_pods_on_unknown_nodes():
    nodes = [make_node("n", zone="z", block="b", rack="r")]
    assert try_place([pod("p", 8)], nodes, [pod("ghost", 8, node="elsewhere", phase="Running")], None).fits


def test_it_excludes_nodes_missing_the_topology_label():
    nodes = [make_node("a", zone="z", block="b", rack=None), make_node("b", zone="z", block="b", rack="r1")]
    attempt = try_place(gang(2), nodes, [], RACK_KEY)
    assert not attempt.fits
    assert "1 node(s) didn't have the topology label topology.kubernetes.io/rack" in attempt.message
    assert try_place(gang(2), nodes, [], None).fits


def test_it_honours_the_node_selector():
    nodes = [make_node("a", zone="z1", block="b", rack="r"), make_node("b", zone="z2", block="b", rack="r")]
    attempt = try_place([pod("p", selector={ZONE_KEY: "z2"})], nodes, [], None)
    assert attempt.assignments == {"p": "b"}


def test_it_restricts_to_the_given_domain():
    nodes = racks(2, nodes_per_rack=1)
    attempt = try_place([pod("p")], nodes, [], RACK_KEY, domain="r1")
    assert attempt.assignments == {"p": "n-r1-0"}
    full = [pod("busy", 8, node="n-r1-0", phase="Running")]
    refused = try_place([pod("p")], nodes, full, RACK_KEY, domain="r1")
    assert not refused.fits and 'node(s) were outside the gang\'s rack "r1"' in refused.message


def test_it_packs_big_pods_first_so_mixed_gangs_fit():
    nodes = [make_node("a", zone="z", block="b", rack="r"), make_node("b", zone="z", block="b", rack="r")]
    pods = [pod("small-1", 2), pod("small-2", 2), pod("big", 8), pod("mid", 4)]
    attempt = try_place(pods, nodes, [], RACK_KEY)
    assert attempt.fits
    assert attempt.assignments["big"] != attempt.assignments["mid"]


def test_it_is_deterministic_and_all_or_nothing():
    nodes = preset_nodes("demo")
    first = try_place(gang(100, 8), nodes, [], None)
    assert first == try_place(gang(100, 8), nodes, [], None)
    assert not first.fits and first.assignments == {}
    assert "the cluster fits 60 of 100 pods" in first.message


def test_it_accepts_an_empty_gang():
    assert try_place([], racks(1), [], RACK_KEY).fits


def test_it_reports_when_no_nodes_exist():
    attempt = try_place([pod("p")], [], [], ZONE_KEY)
    assert not attempt.fits
    assert attempt.message.startswith("0/0 nodes are available")


@pytest.mark.parametrize(("quantity", "milli"), [("500m", 500), ("8", 8000), (4, 4000), ("1Ki", 1_024_000),
                                                 ("1.5", 1500), ("1e3", 1_000_000), ("2G", 2 * 10**12)])
def test_it_parses_quantities_to_milli_units(quantity, milli):
    assert parse_quantity(quantity) == milli


@pytest.mark.parametrize("bad", ["", "abc", "4 GPUs", "1Xi", True])
def test_it_rejects_malformed_quantities(bad):
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity(bad)


def test_it_takes_limits_as_requests_and_the_max_of_init_containers():
    spec = {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
                           {"name": "b", "resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4"}}}]}
    assert pod_requests({"spec": spec}) == {"nvidia.com/gpu": 2000, "cpu": 4000, "pods": 1000}


def test_it_subtracts_bound_pods_from_free_resources():
    nodes = [make_node("n", zone="z", block="b", rack="r")]
    free = free_resources(nodes, [pod("x", 3, node="n", phase="Running")])
    assert free["n"]["nvidia.com/gpu"] == 5000 and free["n"]["pods"] == 109_000


def test_a_node_short_of_several_resources_counts_once_per_resource_as_kube_scheduler_does():
    nodes = [make_node("small", zone="z", block="b", rack="r", shape=NodeShape(gpus=4, cpu="4"))]
    attempt = try_place([pod("p", 8)], nodes, [], None)
    assert attempt.message.startswith("0/1 nodes are available: 1 Insufficient ")
    assert "1 Insufficient cpu" in attempt.message and "1 Insufficient nvidia.com/gpu" in attempt.message
