"""One measure: for a gang the engine reports unschedulable, the capacity line and every piece of "what would make
it fit" speak of the same best domain in the same unit, and each suggestion, applied to the snapshot, makes the
placement engine place the gang; "even an empty … holds at most" is checked by the engine on empty nodes.

Random topologies and gangs (hypothesis); the engine itself is the judge, never a re-implementation of it.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from jobs.domain import explain
from sandbox.controllers.fit import try_place
from trainer_portal.placement import ClusterSnapshot, PlacementRequest, place

ZONE = "topology.kubernetes.io/zone"
BLOCK = "cloud.provider.com/topology-block"
RACK = "topology.kubernetes.io/rack"
KEYS = {"zone": ZONE, "block": BLOCK, "rack": RACK}
GPU = "nvidia.com/gpu"

RELAX = re.compile(r"^fits if the (?P<level>\w+) constraint is (?:relaxed to (?P<to>\w+)|dropped)$")
FREE = re.compile(r"^fits once (?P<count>[\d,]+) more (?:8-GPU )?nodes? frees? in (?P<where>.+)$")
EMPTY = re.compile(r"^even an empty (?P<level>\w+) holds at most (?P<most>[\d,]+) of (?P<need>[\d,]+) pods")


def _node(zone: int, block: int, rack: int, index: int) -> dict:
    name = f"z{zone}-b{block}-r{rack}-n{index}"
    return {"metadata": {"name": name, "labels": {ZONE: f"zone-{zone}", BLOCK: f"z{zone}-b{block}",
                                                  RACK: f"z{zone}-b{block}-r{rack}", "kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"allocatable": {GPU: "8", "cpu": "64", "memory": "512Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, node: str, gpus: int) -> dict:
    return {"metadata": {"name": name, "namespace": "other", "uid": f"pod-{name}"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {GPU: str(gpus)}}}]},
            "status": {"phase": "Running"}}


@hs.composite
def clusters(draw):
    """Nodes in zones › blocks › racks, some of them partly or wholly used by other pods."""
    zones, blocks, racks = draw(hs.integers(1, 3)), draw(hs.integers(1, 2)), draw(hs.integers(1, 3))
    per_rack = draw(hs.integers(1, 4))
    nodes = [_node(z, b, r, i) for z in range(zones) for b in range(blocks) for r in range(racks)
             for i in range(per_rack)]
    used = draw(hs.lists(hs.sampled_from([0, 0, 4, 8]), min_size=len(nodes), max_size=len(nodes)))
    pods = [_pod(f"p{i}", node["metadata"]["name"], gpus)
            for i, (node, gpus) in enumerate(zip(nodes, used, strict=True)) if gpus]
    return nodes, pods


def _fits(nodes, pods, pod_count, gpus, key) -> bool:
    snapshot = ClusterSnapshot.from_objects(nodes, pods)
    request = PlacementRequest(name="g", pod_count=pod_count, resources={GPU: str(gpus)}, min_count=pod_count,
                               topology_key=key)
    return place([request], snapshot, with_fragmentation=False, details=False).groups[0].fits


def _domain_of(node: dict, where: str) -> bool:
    return where == "the cluster" or where in node["metadata"]["labels"].values()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), pod_count=hs.integers(1, 40), gpus=hs.sampled_from([4, 8]),
       level=hs.sampled_from([None, "zone", "block", "rack"]))
def test_every_suggestion_applied_to_the_snapshot_makes_the_engine_place_the_gang(cluster, pod_count, gpus, level):
    nodes, pods = cluster
    key = KEYS.get(level)
    group = {"name": "g", "policy": "gang", "minCount": pod_count, "members": pod_count, "topologyKey": key or ""}
    job = explain.JobShape("team-a", "g", pod_count, {GPU: str(gpus)}, [group])

    answer = explain.explain_wait(job, ClusterSnapshot.from_objects(nodes, pods))

    assert answer.available
    assert answer.fits == _fits(nodes, pods, pod_count, gpus, key)
    if answer.fits:
        return
    if answer.best_domain:  # the capacity line: the engine's best domain, in its unit (pods)
        assert answer.unit == ("pod" if pod_count == 1 else "pods")
        assert f" fits {answer.have:,} of {pod_count:,} {answer.unit}" in answer.message
    if key:  # the scheduler's "best <level> … fits N" (the sandbox's kube-scheduler) says the same number
        gang = [{"metadata": {"name": f"g-{i}", "namespace": "team-a"},
                 "spec": {"containers": [{"name": "c", "resources": {"requests": {GPU: str(gpus)}}}]}}
                for i in range(pod_count)]
        scheduler = try_place(gang, nodes, pods, key)
        assert not scheduler.fits
        assert scheduler.best_count == (answer.have or 0), (scheduler.message, answer.message)
    never = any(EMPTY.match(text) for text in answer.alternatives)
    for text in answer.alternatives:
        if match := RELAX.match(text):
            assert match["level"] == level
            assert _fits(nodes, pods, pod_count, gpus, KEYS.get(match["to"])), text
        elif match := FREE.match(text):
            assert not never, answer.alternatives  # freeing nodes cannot help what no empty domain holds
            where = match["where"]
            assert where == "the cluster" or answer.best_domain.endswith(where), (where, answer.best_domain)
            count = int(match["count"].replace(",", ""))
            used = {p["spec"]["nodeName"]: int(p["spec"]["containers"][0]["resources"]["requests"][GPU]) for p in pods}
            # Free the domain's fullest nodes first: uniform nodes, so the biggest gain first, as the advice counts.
            inside = sorted((n["metadata"]["name"] for n in nodes if _domain_of(n, where)),
                            key=lambda name: -used.get(name, 0))
            freed = set(inside[:count])
            assert _fits(nodes, [p for p in pods if p["spec"]["nodeName"] not in freed], pod_count, gpus, key), text
        elif match := EMPTY.match(text):
            assert match["level"] == level
            assert not _fits(nodes, [], pod_count, gpus, key), text  # the engine, on empty nodes
        else:
            raise AssertionError(f"advice nobody checks: {text!r}")
