"""§1 validation of custom resources against the CRD openAPIV3Schema (types, required, enum, min/max,
maxItems/maxLength, pattern, CEL rules of docs/reference/kubernetes-apis.md) and the v2.4 `spec.scheduling` overlay."""

from __future__ import annotations

import copy

import pytest
from kubernetes import client as k8s

from tests.sandbox.api_support import TRAINER, runtime, status_of, trainjob


def _create_job(custom, body):
    return custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", body)


def _causes(exc: k8s.ApiException) -> list[tuple[str, str]]:
    status = status_of(exc)
    assert (exc.status, status["reason"]) == (422, "Invalid")
    return [(c["field"], c["reason"]) for c in status["details"]["causes"]]


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (lambda b: b["spec"].update(trainer={"numNodes": "many"}), "spec.trainer.numNodes", "FieldValueTypeInvalid"),
        (lambda b: b["spec"].update(trainer={"numNodes": -1}), "spec.trainer.numNodes", "FieldValueInvalid"),
        (lambda b: b["spec"].pop("runtimeRef"), "spec.runtimeRef", "FieldValueRequired"),
        (lambda b: b["spec"]["runtimeRef"].update(name=""), "spec.runtimeRef.name", "FieldValueInvalid"),
        (lambda b: b["spec"]["runtimeRef"].update(name="x" * 254), "spec.runtimeRef.name", "FieldValueTooLong"),
        (lambda b: b["spec"].update(trainer={"command": ["x"] * 129}), "spec.trainer.command", "FieldValueTooMany"),
        (lambda b: b["spec"].update(managedBy="someone/else"), "spec.managedBy", "FieldValueInvalid"),
        (lambda b: b["spec"].update(activeDeadlineSeconds=0), "spec.activeDeadlineSeconds", "FieldValueInvalid"),
        (lambda b: b["spec"].update(initializer={"dataset": {"storageUri": "not a uri"}}),
         "spec.initializer.dataset.storageUri", "FieldValueInvalid"),
        (lambda b: b["spec"].update(trainer={"numProcPerNode": 0}), "spec.trainer.numProcPerNode",
         "FieldValueInvalid"),
        (lambda b: b["metadata"].update(name="Upper-Case"), "<root>", "FieldValueInvalid"),
    ],
)
def test_trainjob_schema_violations_are_invalid_with_field_paths(custom, mutate, field, reason):
    body = trainjob("tj")
    mutate(body)
    with pytest.raises(k8s.ApiException) as err:
        _create_job(custom, body)
    assert (field, reason) in _causes(err.value)


def test_several_violations_are_reported_together(custom):
    body = trainjob("tj", trainer={"numNodes": -1}, activeDeadlineSeconds=0)
    with pytest.raises(k8s.ApiException) as err:
        _create_job(custom, body)
    assert {f for f, _ in _causes(err.value)} == {"spec.trainer.numNodes", "spec.activeDeadlineSeconds"}


def test_immutable_fields_reject_changes_on_update(custom):
    _create_job(custom, trainjob("imm"))
    with pytest.raises(k8s.ApiException) as err:
        custom.patch_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", "imm",
                                              {"spec": {"runtimeRef": {"name": "other"}}})
    assert ("spec.runtimeRef", "FieldValueInvalid") in _causes(err.value)


def test_schema_defaults_are_applied_and_unknown_fields_pruned(custom):
    created = _create_job(custom, trainjob("d", unknownField=1))
    assert created["spec"]["runtimeRef"] == {"name": "torch-distributed", "apiGroup": TRAINER,
                                             "kind": "ClusterTrainingRuntime"}
    assert created["spec"]["suspend"] is False and "unknownField" not in created["spec"]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda s: s["mlPolicy"].update(mpi={}), "spec.mlPolicy"),
        (lambda s: s["mlPolicy"].update(torch={"envInjection": {"targets": [{"jobName": "node",
                                                                             "containerNames": ["node"]}]}}),
         "spec.mlPolicy.torch.envInjection.targets[0].containerNames"),
        (lambda s: s["template"]["spec"].update(startupPolicy={"startupPolicyOrder": "InOrder"}) or
         s["template"]["spec"]["replicatedJobs"][0].update(dependsOn=[{"name": "x", "status": "Ready"}]),
         "spec.template.spec"),
        (lambda s: s["mlPolicy"].update(torch=None, mpi={"mpiImplementation": "Intel"}),
         "spec.mlPolicy.mpi.mpiImplementation"),
    ],
)
def test_runtime_cel_rules_and_enums(custom, mutate, field):
    body = runtime("r")
    mutate(body["spec"])
    with pytest.raises(k8s.ApiException) as err:
        custom.create_cluster_custom_object(TRAINER, "v1alpha1", "clustertrainingruntimes", body)
    assert field in [f for f, _ in _causes(err.value)]


VALID_SCHEDULING = [
    {"schedulingPolicy": {"gang": {}}, "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
     "disruptionMode": {"all": {}}},
    {"replicatedJobs": [{"targetReplicatedJobs": ["dataset-initializer", "model-initializer"],
                         "schedulingPolicy": {"basic": {}}},
                        {"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}}]},
    {"replicatedJobs": [{"targetReplicatedJobs": ["node"],
                         "job": {"schedulingPolicy": {"gang": {}},
                                 "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
                                 "disruptionMode": {"all": {}},
                                 "resourceClaims": [{"name": "tpu", "resourceClaimTemplateName": "t"}]}}]},
]


@pytest.mark.parametrize("scheduling", VALID_SCHEDULING, ids=["level1", "level2", "level3"])
def test_the_v24_scheduling_overlay_accepts_each_level(custom, scheduling):
    created = custom.create_cluster_custom_object(TRAINER, "v1alpha1", "clustertrainingruntimes",
                                                  runtime("ok", copy.deepcopy(scheduling)))
    assert created["spec"]["scheduling"] == scheduling


@pytest.mark.parametrize(
    ("scheduling", "field", "reason"),
    [
        ({"schedulingPolicy": {"gang": {"minCount": 4}}}, "spec.scheduling.schedulingPolicy", "FieldValueInvalid"),
        ({"schedulingPolicy": {"gang": {}, "basic": {}}}, "spec.scheduling.schedulingPolicy", "FieldValueInvalid"),
        ({"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}},
         "spec.scheduling.schedulingConstraints.topology", "FieldValueTooMany"),
        ({"schedulingConstraints": {"topology": [{}]}}, "spec.scheduling.schedulingConstraints.topology[0].key",
         "FieldValueRequired"),
        ({"disruptionMode": {"single": {}, "all": {}}}, "spec.scheduling.disruptionMode", "FieldValueInvalid"),
        ({"replicatedJobs": [{"targetReplicatedJobs": ["node"],
                              "job": {"resourceClaims": [{"name": f"c{i}"} for i in range(5)]}}]},
         "spec.scheduling.replicatedJobs[0].job.resourceClaims", "FieldValueTooMany"),
        ({"replicatedJobs": [{"targetReplicatedJobs": [f"j{i}"]} for i in range(9)]},
         "spec.scheduling.replicatedJobs", "FieldValueTooMany"),
        ({"replicatedJobs": [{"targetReplicatedJobs": []}]}, "spec.scheduling.replicatedJobs[0].targetReplicatedJobs",
         "FieldValueInvalid"),
        ({"replicatedJobs": [{"targetReplicatedJobs": [f"j{i}" for i in range(9)]}]},
         "spec.scheduling.replicatedJobs[0].targetReplicatedJobs", "FieldValueTooMany"),
        ({"replicatedJobs": [{"targetReplicatedJobs": ["node", "node"]}]},
         "spec.scheduling.replicatedJobs[0].targetReplicatedJobs[1]", "FieldValueDuplicate"),
        ({"replicatedJobs": [{"targetReplicatedJobs": ["node"]}, {"targetReplicatedJobs": ["node", "x"]}]},
         "spec.scheduling", "FieldValueInvalid"),
        ({"replicatedJobs": [{"targetReplicatedJobs": ["node"],
                              "job": {"schedulingPolicy": {"gang": {"minCount": 2}}}}]},
         "spec.scheduling.replicatedJobs[0].job.schedulingPolicy", "FieldValueInvalid"),
    ],
)
def test_the_v24_scheduling_overlay_rejects_invalid_shapes(custom, scheduling, field, reason):
    with pytest.raises(k8s.ApiException) as err:
        custom.create_cluster_custom_object(TRAINER, "v1alpha1", "clustertrainingruntimes",
                                            runtime("bad", scheduling))
    assert (field, reason) in _causes(err.value)


def test_min_count_message_is_the_documented_one(custom):
    with pytest.raises(k8s.ApiException) as err:
        custom.create_cluster_custom_object(TRAINER, "v1alpha1", "clustertrainingruntimes",
                                            runtime("bad", {"schedulingPolicy": {"gang": {"minCount": 4}}}))
    assert "minCount must not be set" in status_of(err.value)["message"]


def test_scheduling_and_pod_group_policy_are_mutually_exclusive(custom):
    body = runtime("both", {"schedulingPolicy": {"gang": {}}}, podGroupPolicy={"coscheduling": {}})
    with pytest.raises(k8s.ApiException) as err:
        custom.create_cluster_custom_object(TRAINER, "v1alpha1", "clustertrainingruntimes", body)
    assert ("spec", "FieldValueInvalid") in _causes(err.value)


def test_the_overlay_is_marked_on_the_crd(api_client):
    crd = k8s.ApiextensionsV1Api(api_client).read_custom_resource_definition(
        "clustertrainingruntimes.trainer.kubeflow.org")
    assert crd.metadata.annotations["sandbox.trainer-portal.dev/overlay"] == "overlay-v2.4-scheduling.yaml"
    spec_schema = crd.spec.versions[0].schema.open_apiv3_schema.properties["spec"]
    assert "scheduling" in spec_schema.properties


def test_field_validation_strict_rejects_unknown_fields(cluster):
    from tests.sandbox.api_support import raw

    body = trainjob("strict", typoField=1)
    code, status = raw(cluster.url, "POST",
                       "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs?fieldValidation=Strict", body)
    assert code == 400 and 'unknown field "spec.typoField"' in status["message"]


def test_field_validation_warn_prunes_and_warns(cluster):
    import json
    import urllib.request

    request = urllib.request.Request(
        cluster.url + "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs?fieldValidation=Warn",
        data=json.dumps(trainjob("warn", typoField=1)).encode(), method="POST",
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        warning = response.headers.get("Warning")
        created = json.loads(response.read())
    assert warning == '299 - "unknown field \\"spec.typoField\\""'
    assert "typoField" not in created["spec"]
