"""§1 DynamicClient end to end: create/get/list/patch/apply/watch/delete of custom and built-in resources."""

from __future__ import annotations

import pytest
from kubernetes.dynamic.exceptions import ConflictError, NotFoundError

from tests.sandbox.api_support import runtime, trainjob


def test_dynamic_client_crud_on_trainjobs(dynamic):
    jobs = dynamic.resources.get(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob")
    created = jobs.create(body=trainjob("dyn"), namespace="default")
    assert created.metadata.generation == 1
    assert [j.metadata.name for j in jobs.get(namespace="default").items] == ["dyn"]
    patched = jobs.patch(name="dyn", namespace="default", body={"spec": {"suspend": True}},
                         content_type="application/merge-patch+json")
    assert patched.spec.suspend is True and patched.metadata.generation == 2
    stale = created.to_dict()
    stale["spec"]["suspend"] = False
    with pytest.raises(ConflictError):
        jobs.replace(body=stale, namespace="default")
    jobs.delete(name="dyn", namespace="default")
    with pytest.raises(NotFoundError):
        jobs.get(name="dyn", namespace="default")


def test_dynamic_client_server_side_apply_of_a_runtime(dynamic):
    runtimes = dynamic.resources.get(api_version="trainer.kubeflow.org/v1alpha1", kind="ClusterTrainingRuntime")
    body = runtime("dyn-rt", {"schedulingPolicy": {"gang": {}}})
    applied = runtimes.server_side_apply(body=body, field_manager="trainer-portal")
    assert applied.to_dict()["spec"]["scheduling"]["schedulingPolicy"] == {"gang": {}}
    assert [m.manager for m in applied.metadata.managedFields] == ["trainer-portal"]
    dry = runtimes.server_side_apply(body=runtime("dyn-rt-2"), field_manager="trainer-portal", dry_run="All")
    assert dry.metadata.name == "dyn-rt-2"
    assert [r.metadata.name for r in runtimes.get().items] == ["dyn-rt"]


def test_dynamic_client_watch_sees_podgroup_status_changes(dynamic):
    groups = dynamic.resources.get(api_version="scheduling.k8s.io/v1beta1", kind="PodGroup")
    groups.create(namespace="default", body={
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}})
    rv = groups.get(namespace="default").metadata.resourceVersion
    groups.status.patch(name="pg", namespace="default", content_type="application/merge-patch+json", body={
        "status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False",
                                   "reason": "Unschedulable", "message": "0/4 nodes"}]}})
    events = []
    for event in groups.watch(namespace="default", resource_version=rv, timeout=2):
        events.append((event["type"], event["object"].status.conditions[0].reason))
        break
    assert events == [("MODIFIED", "Unschedulable")]
