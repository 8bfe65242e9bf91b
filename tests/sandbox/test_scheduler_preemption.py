"""Gang priority preemption, SchedulerError and kube-scheduler Events, end to end through a running demo sandbox
(64 nodes of 8 GPUs: zone-a 32 usable, zone-b 28 usable), plus a property test of the victim choice."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox.controllers.fit import free_resources, try_place
from sandbox.controllers.preemption import Holder, choose_victims
from sandbox.topology import NodeShape, make_node
from tests.sandbox.controllers_support import Cluster, condition, demo_runtime, is_true, trainjob

SCHEDULED = "PodGroupInitiallyScheduled"
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


@pytest.fixture
def cluster(sim_cluster: Cluster) -> Cluster:
    """The module's simulated cluster, freshly reset (``sim_cluster`` in tests/sandbox/conftest.py)."""
    return sim_cluster


def _priority_runtime(cluster: Cluster, name: str, priority_class: str, value: int) -> None:
    cluster.client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                             "metadata": {"name": priority_class}, "value": value})
    runtime = demo_runtime("torch_gang_zone.yaml")
    runtime["metadata"]["name"] = name
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    cluster.create_runtime(runtime)


def _group_of(cluster: Cluster, trainjob_name: str) -> dict | None:
    uid = (cluster.trainjob(trainjob_name) or {}).get("metadata", {}).get("uid")
    return next((g for g in cluster.pod_groups() if any(o["uid"] == uid for o in g["metadata"]["ownerReferences"])),
                None)


def _bound(cluster: Cluster, trainjob_name: str) -> int:
    return sum(1 for p in cluster.pods(trainjob_name) if p["spec"].get("nodeName")
               and not p["metadata"].get("deletionTimestamp"))


def test_a_high_priority_gang_evicts_whole_lower_priority_gangs_and_never_an_equal_one(cluster: Cluster):
    _priority_runtime(cluster, "zone-low", "low", 100)
    _priority_runtime(cluster, "zone-high", "high", 1000)
    for name, runtime, nodes in (("low-1", "zone-low", 16), ("low-2", "zone-low", 16), ("peer", "zone-high", 28)):
        cluster.submit(trainjob(name, runtime, num_nodes=nodes))
        cluster.wait(lambda n=name: is_true(_group_of(cluster, n), SCHEDULED))
    assert _group_of(cluster, "low-1")["spec"]["priorityClassName"] == "low"
    admitted_pods = {name: cluster.pods(name) for name in ("low-1", "low-2")}

    # 20 nodes fit nowhere; zone-b is held by an equal-priority gang, zone-a by two 16-node low-priority gangs.
    cluster.submit(trainjob("urgent", "zone-high", num_nodes=20))
    cluster.wait(lambda: is_true(_group_of(cluster, "urgent"), SCHEDULED), timeout=40)
    assert _bound(cluster, "urgent") == 20
    assert _bound(cluster, "peer") == 28 and condition(_group_of(cluster, "peer"), "DisruptionTarget") is None
    for victim in ("low-1", "low-2"):
        before = {p["metadata"]["name"] for p in admitted_pods[victim]}
        group = _group_of(cluster, victim)
        disruption = condition(group, "DisruptionTarget")
        assert (disruption["status"], disruption["reason"]) == ("True", "PreemptionByScheduler")
        assert "urgent" in disruption["message"] or _group_of(cluster, "urgent")["metadata"]["name"] in disruption[
            "message"]
        # Never part of a gang: the recreated pods wait as a whole (no room is left for 16 nodes anywhere).
        assert _bound(cluster, victim) == 0
        # The Job controller replaces evicted pods under new names.
        cluster.wait(lambda v=victim, b=before: len(p := cluster.pods(v)) == 16
                     and not b & {x["metadata"]["name"] for x in p})
    preemptor = _group_of(cluster, "urgent")["metadata"]["name"]
    preempted = [e for e in cluster.events() if e["reason"] == "Preempted"]
    assert {e["involvedObject"]["kind"] for e in preempted} == {"PodGroup", "Pod"}
    assert all(f"PodGroup default/{preemptor} (priority 1000)" in e["message"] for e in preempted)
    assert len([e for e in preempted if e["involvedObject"]["kind"] == "Pod"]) == 32


def test_a_gang_that_cannot_be_evaluated_gets_scheduler_error(cluster: Cluster):
    base = f"{cluster.scheduling}/podgroups"
    cluster.client.create(base, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                 "metadata": {"name": "unknown-class"},
                                 "spec": {"schedulingPolicy": {"gang": {"minCount": 1}},
                                          "priorityClassName": "does-not-exist"}})
    cluster.client.create("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "member"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}],
                 "schedulingGroup": {"podGroupName": "unknown-class"}}})
    group = cluster.wait(lambda: condition(g := cluster.client.get(f"{base}/unknown-class"), SCHEDULED) and g)
    found = condition(group, SCHEDULED)
    assert (found["status"], found["reason"]) == ("False", "SchedulerError")
    assert found["message"] == ("cannot evaluate PodGroup default/unknown-class: no PriorityClass with name "
                                "does-not-exist was found")
    event = cluster.wait(lambda: next((e for e in cluster.events() if e["involvedObject"]["name"] == "unknown-class"
                                       and e["reason"] == "FailedScheduling"), None))
    assert event["type"] == "Warning" and event["source"]["component"] == "default-scheduler"


def test_it_records_scheduled_and_failed_scheduling_events_as_kube_scheduler_does(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    cluster.submit(trainjob("fits", "torch-gang-zone", num_nodes=2))
    cluster.wait(lambda: is_true(_group_of(cluster, "fits"), SCHEDULED))
    cluster.submit(trainjob("too-big", "torch-gang-zone", num_nodes=40))
    cluster.wait(lambda: condition(_group_of(cluster, "too-big"), SCHEDULED))

    def events_for(kind: str, reason: str) -> list[dict]:
        return [e for e in cluster.events() if e["involvedObject"]["kind"] == kind and e["reason"] == reason]

    scheduled = cluster.wait(lambda: len(e := events_for("Pod", "Scheduled")) == 2 and e)
    for event, pod in zip(sorted(scheduled, key=lambda e: e["involvedObject"]["name"]),
                          sorted(cluster.pods("fits"), key=lambda p: p["metadata"]["name"]), strict=True):
        assert event["type"] == "Normal"
        assert event["message"] == (f"Successfully assigned default/{pod['metadata']['name']} to "
                                    f"{pod['spec']['nodeName']}")
    message = condition(_group_of(cluster, "too-big"), SCHEDULED)["message"]
    assert message.startswith("0/64 nodes are available: ")  # kube-scheduler's FitError, always "0/<nodes>"
    assert "2 Insufficient nvidia.com/gpu" in message  # two nodes are full with the "fits" gang
    failed = cluster.wait(lambda: len(e := events_for("Pod", "FailedScheduling")) == 40 and e)
    assert {(e["type"], e["message"]) for e in failed} == {("Warning", message)}
    assert all(condition(p, "PodScheduled")["reason"] == "Unschedulable" for p in cluster.pods("too-big"))
    group_event = cluster.wait(lambda: events_for("PodGroup", "FailedScheduling"))
    assert group_event[0]["message"] == message


# -- the victim choice, as a property --------------------------------------------------------------------------------


def _pod(name: str, gpus: int, node: str | None = None) -> dict:
    pod = {"metadata": {"name": name, "namespace": "default"},
           "spec": {"containers": [{"name": "node", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]},
           "status": {"phase": "Running" if node else "Pending"}}
    if node:
        pod["spec"]["nodeName"] = node
    return pod


@st.composite
def crowded_clusters(draw):
    """Return (nodes, holders, preemptor pods, preemptor priority) on up to 6 nodes of 8 GPUs."""
    nodes = [make_node(f"n{i}", zone="z", block="b", rack=f"r{i % 2}", shape=NodeShape(gpus=8))
             for i in range(draw(st.integers(1, 6)))]
    left = {n["metadata"]["name"]: 8 for n in nodes}
    holders = []
    for index in range(draw(st.integers(0, 6))):
        pods = []
        for member in range(draw(st.integers(1, 3))):
            gpus = draw(st.sampled_from([1, 2, 4, 8]))
            node = next((n for n, free in sorted(left.items()) if free >= gpus), None)
            if node is None:
                break
            left[node] -= gpus
            pods.append(_pod(f"h{index}-{member}", gpus, node))
        if pods:
            holders.append(Holder(f"podgroup:default/h{index}", draw(st.integers(0, 3)), ("t", index), tuple(pods)))
    gang = [_pod(f"g{i}", draw(st.sampled_from([2, 4, 8]))) for i in range(draw(st.integers(1, 4)))]
    return nodes, holders, gang, draw(st.integers(0, 4))


@settings(max_examples=300, deadline=None)
@given(case=crowded_clusters(), key=st.sampled_from([None, "topology.kubernetes.io/rack"]))
def test_preemption_evicts_only_whole_lower_priority_gangs_and_only_what_is_needed(case, key):
    nodes, holders, gang, priority = case
    bound = [p for h in holders for p in h.pods]
    free = free_resources(nodes, bound)

    def fits(after: dict) -> bool:
        return try_place(gang, nodes, [], key, free=after).fits

    def fits_without(evicted: list[Holder]) -> bool:
        gone = {p["metadata"]["name"] for h in evicted for p in h.pods}
        return fits(free_resources(nodes, [p for p in bound if p["metadata"]["name"] not in gone]))

    victims = choose_victims(priority, holders, free, fits)
    lower = [h for h in holders if h.priority < priority]
    if victims is None:
        assert not fits_without(lower)  # nothing short of evicting higher or equal priority would help
        return
    assert all(v in holders and v.priority < priority for v in victims)  # whole holders, strictly lower priority
    assert fits_without(victims)
    for victim in victims:  # nothing evicted that the gang could do without
        assert not fits_without([v for v in victims if v is not victim])
