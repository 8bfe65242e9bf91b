"""Why it waits: the placement engine on a snapshot for exactly this gang, the advice, and who holds the capacity."""

from __future__ import annotations

import datetime as dt

from jobs.domain import explain
from trainer_portal.placement import ClusterSnapshot

ZONE = "topology.kubernetes.io/zone"
RACK = "topology.kubernetes.io/rack"


def _node(name: str, zone: str, rack: str, *, gpus: int = 8, cordoned: bool = False) -> dict:
    return {"metadata": {"name": name, "labels": {ZONE: zone, "cloud.provider.com/topology-block": f"{zone}-b1",
                                                  RACK: rack, "kubernetes.io/hostname": name}},
            "spec": {"unschedulable": cordoned},
            "status": {"allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "64", "memory": "512Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, node: str, gpus: int = 8) -> dict:
    return {"metadata": {"name": name, "namespace": "team-b", "uid": f"pod-{name}"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {
                "requests": {"nvidia.com/gpu": str(gpus)}}}]},
            "status": {"phase": "Running"}}


def _cluster(busy: int = 1) -> tuple[ClusterSnapshot, list[explain.Occupant]]:
    """Two zones of 4 nodes; zone-a has one cordoned node and ``busy`` nodes held by team-b/holder."""
    nodes = [_node(f"a{i}", "zone-a", f"ra{i // 2}", cordoned=i == 3) for i in range(4)]
    nodes += [_node(f"b{i}", "zone-b", f"rb{i // 2}") for i in range(4)]
    pods = [_pod(f"holder-{i}", f"a{i}") for i in range(busy)] + [_pod("other-0", "b0"), _pod("other-1", "b1")]
    snapshot = ClusterSnapshot.from_objects(nodes, pods)
    since = dt.datetime(2026, 12, 1, 11, 0, tzinfo=dt.UTC)
    occupants = [explain.Occupant("team-b", "holder", busy, 8, tuple(f"a{i}" for i in range(busy)), since, "grace"),
                 explain.Occupant("team-c", "secret", 2, 8, ("b0", "b1"), since, "", visible=False)]
    return snapshot, occupants


def _gang(nodes: int, key: str | None = ZONE) -> explain.JobShape:
    return explain.JobShape("team-a", "llm", nodes, {"nvidia.com/gpu": "8"},
                            [{"name": "llm-pg", "policy": "gang", "minCount": nodes, "members": nodes,
                              "topologyKey": key or ""}])


def test_it_says_what_the_gang_needs_and_what_the_best_domain_has():
    snapshot, occupants = _cluster()

    answer = explain.explain_wait(_gang(3), snapshot, occupants=occupants)

    assert answer.available and answer.fits is False
    assert answer.message.startswith("needs 3 nodes × 8 GPUs in one zone; the best zone, ")
    assert answer.message == ("needs 3 nodes × 8 GPUs in one zone; the best zone, zone-a, fits 2 of 3 pods; 1 node "
                              "cordoned")


def test_it_names_who_holds_the_best_domain_and_hides_invisible_jobs():
    snapshot, occupants = _cluster(busy=1)

    answer = explain.explain_wait(_gang(3), snapshot, occupants=occupants)

    assert answer.best_domain == "zone zone-a"
    assert [(h.namespace, h.name, h.nodes, h.gpus, h.creator) for h in answer.holders] == \
        [("team-b", "holder", 1, 8, "grace")]


def test_it_says_what_would_make_it_fit():
    snapshot, occupants = _cluster(busy=1)

    answer = explain.explain_wait(_gang(3), snapshot, occupants=occupants)

    assert any(a.startswith("fits once 1 more 8-GPU node frees in zone-a") for a in answer.alternatives), \
        answer.alternatives
    relaxed = explain.explain_wait(_gang(3, RACK), snapshot, occupants=occupants)
    assert relaxed.alternatives[0] == "fits if the rack constraint is dropped", relaxed.alternatives


def test_a_gang_that_fits_says_so():
    snapshot, occupants = _cluster(busy=0)

    answer = explain.explain_wait(_gang(2), snapshot, occupants=occupants)

    assert answer.fits is True and "fits on the cluster now" in answer.message


def test_an_unknown_topology_key_is_explained_not_raised():
    snapshot, _ = _cluster()

    answer = explain.explain_wait(_gang(2, "example.com/unknown"), snapshot)

    assert not answer.available and "example.com/unknown" in answer.message


def test_pod_locations_resolve_zone_block_rack():
    snapshot, _ = _cluster()

    assert explain.pod_locations(snapshot, ["a0", "nope"]) == {"a0": ("zone-a", "zone-a-b1", "ra0")}
