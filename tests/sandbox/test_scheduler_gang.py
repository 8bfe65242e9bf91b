"""The gang scheduler end to end through a running demo sandbox (64 nodes: 2 zones, 2 cordoned, 1 NotReady,
1 tainted, all in zone-b)."""

from __future__ import annotations

import re

import pytest

from tests.sandbox.controllers_support import Cluster, condition, demo_runtime, is_true, trainjob

SCHEDULED = "PodGroupInitiallyScheduled"
# kube-scheduler's FitError (sorted "<count> <reason>" strings), then DefaultPreemption's PostFilter result.
EXCLUDED = ("0/64 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, "
            "1 node(s) had untolerated taint {nvidia.com/gpu-maintenance: true}, 2 node(s) were unschedulable, ")
NO_VICTIMS = " preemption: 0/64 nodes are available: 64 No preemption victims found for incoming pod."
NEAR_MISS = (EXCLUDED + "60 node(s) didn't fit the gang: no domain fits 64 pods (best zone \"zone-a\" fits 63)."
             + NO_VICTIMS)


@pytest.fixture
def cluster(sim_cluster: Cluster) -> Cluster:
    """The module's simulated cluster, freshly reset (``sim_cluster`` in tests/sandbox/conftest.py)."""
    return sim_cluster


def _group_of(cluster: Cluster, trainjob_name: str) -> dict | None:
    return next((g for g in cluster.pod_groups() if g["metadata"]["name"].startswith(f"{trainjob_name}-")), None)


def _labels_of_pods(cluster: Cluster, trainjob_name: str, key: str) -> set[str]:
    nodes = cluster.nodes()
    return {nodes[p["spec"]["nodeName"]]["metadata"]["labels"][key] for p in cluster.pods(trainjob_name)}


@pytest.mark.parametrize("free_capacity_by", ["deleting the other trainjob", "the other pod completing"])
def test_it_keeps_a_63_of_64_zone_gang_queued_then_admits_it_when_capacity_frees(cluster: Cluster, free_capacity_by):
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    cluster.submit(trainjob("blocker", "torch-gang-zone", num_nodes=1, gpus="4"))
    cluster.wait(lambda: is_true(_group_of(cluster, "blocker"), SCHEDULED))
    (blocker_pod,) = cluster.pods("blocker")
    assert blocker_pod["spec"]["nodeName"] == "gpu-a1-r1-n1"

    cluster.submit(trainjob("big", "torch-gang-zone", num_nodes=64, gpus="4"))
    queued = cluster.wait(lambda: (g := _group_of(cluster, "big")) and condition(g, SCHEDULED) and g)
    assert condition(queued, SCHEDULED)["status"] == "False"
    assert condition(queued, SCHEDULED)["reason"] == "Unschedulable"
    assert condition(queued, SCHEDULED)["message"] == NEAR_MISS
    pods = cluster.pods("big")
    assert len(pods) == 64 and not any(p["spec"].get("nodeName") for p in pods)

    if free_capacity_by == "deleting the other trainjob":
        cluster.delete_trainjob("blocker")
    else:
        cluster.client.merge_patch(f"/api/v1/namespaces/default/pods/{blocker_pod['metadata']['name']}/status",
                                   {"status": {"phase": "Succeeded"}})
    admitted = cluster.wait(lambda: (g := _group_of(cluster, "big")) and is_true(g, SCHEDULED) and g)
    assert condition(admitted, SCHEDULED)["message"] == 'placed 64 pods in zone "zone-a"'
    assert all(p["spec"].get("nodeName") for p in cluster.pods("big"))
    assert _labels_of_pods(cluster, "big", "topology.kubernetes.io/zone") == {"zone-a"}


def test_it_does_not_rewrite_an_unchanged_unschedulable_condition(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    cluster.submit(trainjob("huge", "torch-gang-zone", num_nodes=40))
    queued = cluster.wait(lambda: (g := _group_of(cluster, "huge")) and condition(g, SCHEDULED) and g)
    version = queued["metadata"]["resourceVersion"]
    # An ungrouped pod makes the scheduler run more passes; once it is bound, those passes have happened.
    cluster.client.create("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    cluster.wait(lambda: any(p["spec"].get("nodeName") for p in cluster.pods() if p["metadata"]["name"] == "probe"))
    assert _group_of(cluster, "huge")["metadata"]["resourceVersion"] == version


def test_it_keeps_every_pod_of_a_rack_gang_on_one_rack(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_rack.yaml"))
    for index in range(3):
        cluster.submit(trainjob(f"rack-{index}", "torch-gang-rack", num_nodes=4))
    for index in range(3):
        cluster.wait(lambda i=index: is_true(_group_of(cluster, f"rack-{i}"), SCHEDULED))
    racks = [_labels_of_pods(cluster, f"rack-{i}", "topology.kubernetes.io/rack") for i in range(3)]
    assert all(len(r) == 1 for r in racks)
    assert len(set.union(*racks)) == 3  # each rack (4 nodes x 8 GPUs) is full after one job

    cluster.submit(trainjob("too-wide", "torch-gang-rack", num_nodes=5))
    refused = cluster.wait(lambda: (g := _group_of(cluster, "too-wide")) and condition(g, SCHEDULED) and g)
    assert re.search(r'no domain fits 5 pods \(best rack "rack-[ab]\d-r\d" fits 4\)',
                     condition(refused, SCHEDULED)["message"])


def test_it_retries_when_a_node_is_uncordoned(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_distributed.yaml"))
    runtime = demo_runtime("torch_gang_zone.yaml")
    runtime["metadata"]["name"] = "torch-gang"
    del runtime["spec"]["scheduling"]["schedulingConstraints"]
    cluster.create_runtime(runtime)
    cluster.submit(trainjob("all-in", "torch-gang", num_nodes=61))
    queued = cluster.wait(lambda: (g := _group_of(cluster, "all-in")) and condition(g, SCHEDULED) and g)
    assert condition(queued, SCHEDULED)["message"] == (
        EXCLUDED + "60 node(s) didn't fit the gang: the cluster fits 60 of 61 pods." + NO_VICTIMS)
    cluster.client.merge_patch("/api/v1/nodes/gpu-b1-r1-n1", {"spec": {"unschedulable": False}})
    cluster.wait(lambda: is_true(_group_of(cluster, "all-in"), SCHEDULED))
    assert len({p["spec"]["nodeName"] for p in cluster.pods("all-in")}) == 61


def test_it_admits_waiting_gangs_in_fifo_order_when_capacity_frees(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    cluster.submit(trainjob("hog-a", "torch-gang-zone", num_nodes=32))
    cluster.wait(lambda: is_true(_group_of(cluster, "hog-a"), SCHEDULED))
    cluster.submit(trainjob("hog-b", "torch-gang-zone", num_nodes=28))
    cluster.wait(lambda: is_true(_group_of(cluster, "hog-b"), SCHEDULED))
    # Both zones are full. "zulu" queues first, then "alpha" (whose name sorts first).
    for name in ("zulu", "alpha"):
        cluster.submit(trainjob(name, "torch-gang-zone", num_nodes=20))
        cluster.wait(lambda n=name: condition(_group_of(cluster, n), SCHEDULED))
    cluster.delete_trainjob("hog-b")
    # zone-b's 28 usable nodes take exactly one of the two 20-node gangs: FIFO gives them to "zulu".
    cluster.wait(lambda: is_true(_group_of(cluster, "zulu"), SCHEDULED))
    assert condition(_group_of(cluster, "alpha"), SCHEDULED)["reason"] == "Unschedulable"
    assert "best zone" in condition(_group_of(cluster, "alpha"), SCHEDULED)["message"]


def test_it_marks_an_unschedulable_ungrouped_pod_and_binds_a_schedulable_one(cluster: Cluster):
    def plain(name: str, gpus: str) -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"containers": [{"name": "main", "image": "busybox",
                                         "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}

    cluster.client.create("/api/v1/namespaces/default/pods", plain("too-big", "16"))
    cluster.client.create("/api/v1/namespaces/default/pods", plain("fits", "8"))
    pods = cluster.wait(lambda: (p := {x["metadata"]["name"]: x for x in cluster.pods()}) and condition(
        p.get("too-big"), "PodScheduled") and p["fits"]["spec"].get("nodeName") and p)
    refused = condition(pods["too-big"], "PodScheduled")
    assert (refused["status"], refused["reason"]) == ("False", "Unschedulable")
    assert refused["message"] == EXCLUDED + "60 Insufficient nvidia.com/gpu."
    assert is_true(pods["fits"], "PodScheduled")
