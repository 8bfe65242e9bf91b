"""Every built-in object the API server itself creates or fills deserializes with the official client's typed
models, with the fields a real kube-apiserver fills (Go zero values of non-omitempty fields, kind defaults)."""

from __future__ import annotations

import datetime

import pytest
from kubernetes import client as k8s

from sandbox.topology import make_node
from tests.sandbox.api_support import pod, raw

SCHEDULING_V1 = "/apis/scheduling.k8s.io/v1/priorityclasses"


def test_namespaces_read_and_list_as_typed_objects(core):
    created = core.create_namespace({"metadata": {"name": "team-a"}})
    assert created.metadata.labels == {"kubernetes.io/metadata.name": "team-a"}
    assert created.status.phase == "Active" and created.spec.finalizers == ["kubernetes"]
    listed = {ns.metadata.name: ns for ns in core.list_namespace().items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease", "team-a"} <= set(listed)
    default = core.read_namespace("default")
    assert default.metadata.labels["kubernetes.io/metadata.name"] == "default"
    assert isinstance(default.metadata.creation_timestamp, datetime.datetime) and default.metadata.uid
    assert default.metadata.generation is None  # namespaces have no spec/status generation
    assert isinstance(default.metadata.managed_fields[0].time, datetime.datetime)
    relabelled = core.patch_namespace("team-a", {"metadata": {"labels": {"kubernetes.io/metadata.name": "x"}}})
    assert relabelled.metadata.labels["kubernetes.io/metadata.name"] == "team-a"


def test_events_created_with_few_fields_list_as_typed_objects(cluster, core):
    code, body = raw(cluster.url, "POST", "/api/v1/namespaces/default/events",
                     {"metadata": {"name": "e1"}, "reason": "Scheduled", "message": "placed"})
    assert code == 201, body
    assert body["involvedObject"] == {} and body["source"] == {}
    assert (body["firstTimestamp"], body["lastTimestamp"], body["eventTime"]) == (None, None, None)
    assert (body["reportingComponent"], body["reportingInstance"]) == ("", "")
    core.create_namespaced_event("default", k8s.CoreV1Event(
        metadata=k8s.V1ObjectMeta(name="e2"), involved_object=k8s.V1ObjectReference(kind="Pod", name="p",
                                                                                   namespace="default"),
        reason="Started", type="Normal", count=1))
    events = {e.metadata.name: e for e in core.list_namespaced_event("default").items}
    assert events["e1"].involved_object == k8s.V1ObjectReference()
    assert events["e2"].involved_object.name == "p" and events["e2"].count == 1
    assert {e.metadata.name for e in core.list_event_for_all_namespaces().items} >= {"e1", "e2"}
    assert core.read_namespaced_event("e2", "default").metadata.generation is None


def test_an_event_for_an_object_in_another_namespace_is_invalid(cluster):
    code, body = raw(cluster.url, "POST", "/api/v1/namespaces/default/events",
                     {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "other"}})
    assert (code, body["details"]["causes"][0]["field"]) == (422, "involvedObject.namespace")
    assert body["details"]["causes"][0]["message"] == 'Invalid value: "other": does not match event.namespace'


def test_nodes_list_as_typed_objects_with_complete_node_info(cluster, core):
    assert raw(cluster.url, "POST", "/api/v1/nodes", make_node("gpu-1", zone="z1", block="b1", rack="r1"))[0] == 201
    assert raw(cluster.url, "POST", "/api/v1/nodes", {"metadata": {"name": "bare"}})[0] == 201
    nodes = {n.metadata.name: n for n in core.list_node().items}
    gpu, bare = nodes["gpu-1"], nodes["bare"]
    assert gpu.status.node_info.kubelet_version == "v1.37.0-sandbox"
    assert len(gpu.status.node_info.machine_id) == 32 and gpu.status.node_info.system_uuid
    assert gpu.status.daemon_endpoints.kubelet_endpoint.port == 10250
    assert bare.status.node_info.machine_id == "" and bare.status.daemon_endpoints.kubelet_endpoint.port == 0
    assert core.read_node("gpu-1").metadata.generation is None


def test_leases_read_and_list_as_typed_objects(cluster, api_client):
    coordination = k8s.CoordinationV1Api(api_client)
    assert raw(cluster.url, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
               {"metadata": {"name": "bare"}})[0] == 201
    coordination.create_namespaced_lease("default", k8s.V1Lease(
        metadata=k8s.V1ObjectMeta(name="watcher"), spec=k8s.V1LeaseSpec(holder_identity="pod-a",
                                                                       lease_duration_seconds=15)))
    leases = {lease.metadata.name: lease for lease in coordination.list_namespaced_lease("default").items}
    assert leases["bare"].spec == k8s.V1LeaseSpec()
    assert leases["watcher"].spec.holder_identity == "pod-a"
    assert coordination.read_namespaced_lease("watcher", "default").spec.lease_duration_seconds == 15


def test_priority_classes_include_the_system_ones_and_get_defaults(cluster, api_client):
    scheduling = k8s.SchedulingV1Api(api_client)
    assert raw(cluster.url, "POST", SCHEDULING_V1, {"metadata": {"name": "zero"}})[0] == 201
    scheduling.create_priority_class(k8s.V1PriorityClass(metadata=k8s.V1ObjectMeta(name="high"), value=1000))
    classes = {pc.metadata.name: pc for pc in scheduling.list_priority_class().items}
    assert classes["system-cluster-critical"].value == 2_000_000_000
    assert classes["system-node-critical"].value == 2_000_001_000
    assert (classes["zero"].value, classes["zero"].preemption_policy) == (0, "PreemptLowerPriority")
    assert classes["high"].value == 1000
    cluster.reset()
    assert {pc.metadata.name for pc in scheduling.list_priority_class().items} == {"system-cluster-critical",
                                                                                  "system-node-critical"}


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"metadata": {"name": "huge"}, "value": 1_000_000_001}, "value", "FieldValueForbidden"),
        ({"metadata": {"name": "system-mine"}, "value": 5}, "metadata.name", "FieldValueForbidden"),
        ({"metadata": {"name": "p"}, "value": 1, "preemptionPolicy": "Sometimes"}, "preemptionPolicy",
         "FieldValueNotSupported"),
    ],
    ids=["above-user-maximum", "reserved-prefix", "unknown-preemption-policy"],
)
def test_priority_class_rules(cluster, body, field, reason):
    code, answer = raw(cluster.url, "POST", SCHEDULING_V1, body)
    assert code == 422
    assert (answer["details"]["causes"][0]["field"], answer["details"]["causes"][0]["reason"]) == (field, reason)


def test_a_priority_class_value_cannot_change(cluster):
    assert raw(cluster.url, "POST", SCHEDULING_V1, {"metadata": {"name": "fixed"}, "value": 10})[0] == 201
    code, answer = raw(cluster.url, "PATCH", f"{SCHEDULING_V1}/fixed", {"value": 11}, "application/merge-patch+json")
    assert code == 422 and answer["details"]["causes"][0]["message"] == "Forbidden: may not be changed in an update."


def test_pods_keep_their_generation_and_read_as_typed_objects(core):
    created = core.create_namespaced_pod("default", pod("p"))
    assert created.metadata.generation == 1 and created.status.phase == "Pending"
    assert core.list_namespaced_pod("default").items[0].status.qos_class == "BestEffort"
