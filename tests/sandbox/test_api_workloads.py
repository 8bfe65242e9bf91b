"""scheduling.k8s.io Workload/PodGroup declarative validation and strategy, as kube-apiserver 1.37 (v1beta1) and
1.36 (v1alpha2) apply them (docs/reference/kubernetes-apis.md §2.5 item 11, §4.2–4.4)."""

from __future__ import annotations

import copy

import pytest
from kubernetes import client as k8s

from sandbox.testing import SandboxProcess
from tests.sandbox.api_support import raw, status_of

GROUP = "scheduling.k8s.io"
FINALIZER = "scheduling.k8s.io/podgroup-protection"
BETA = f"/apis/{GROUP}/v1beta1/namespaces/default"
ALPHA2 = f"/apis/{GROUP}/v1alpha2/namespaces/default"
MERGE = "application/merge-patch+json"


def template(name: str, policy: dict | None = None, **fields) -> dict:
    return {"name": name, "schedulingPolicy": policy or {"gang": {"minCount": 2}}, **fields}


def workload(name: str, *templates: dict, version: str = "v1beta1", **spec) -> dict:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "Workload", "metadata": {"name": name},
            "spec": {"controllerRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainJob", "name": "tj"},
                     "podGroupTemplates": list(templates) or [template("node")], **spec}}


def pod_group(name: str, version: str = "v1beta1", **spec) -> dict:
    ref = ({"workloadRef": {"workloadName": "wl", "templateName": "node"}} if version == "v1beta1" else
           {"podGroupTemplateRef": {"workload": {"workloadName": "wl", "podGroupTemplateName": "node"}}})
    body = {**ref, "schedulingPolicy": {"gang": {"minCount": 2}}, **spec}
    return {"apiVersion": f"{GROUP}/{version}", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {k: v for k, v in body.items() if v is not None}}


def _causes(code: int, body: dict) -> dict[str, dict]:
    assert (code, body["reason"]) == (422, "Invalid"), body
    return {c["field"]: c for c in body["details"]["causes"]}


@pytest.fixture(scope="module")
def dra_on():
    """An API-only sandbox with DRAWorkloadResourceClaims on: with it off (the 1.37 default) claims are dropped
    before validation, so their rules are only seen with it on."""
    with SandboxProcess(topology="none", controllers=False, gates={"DRAWorkloadResourceClaims": True}) as proc:
        yield proc


def _server_for(request, cluster, body: dict):
    """Return the sandbox a case runs against: the DRA-gated one when the body carries resourceClaims."""
    return request.getfixturevalue("dra_on") if "resourceClaims" in str(body) else cluster


@pytest.fixture
def scheduling(api_client) -> k8s.SchedulingV1beta1Api:
    return k8s.SchedulingV1beta1Api(api_client)


# -- Workload v1beta1: create -----------------------------------------------------------------------------------
def test_eight_templates_are_accepted_and_a_ninth_is_too_many(cluster):
    eight = [template(f"t{i}") for i in range(8)]
    assert raw(cluster.url, "POST", f"{BETA}/workloads", workload("eight", *eight))[0] == 201
    code, body = raw(cluster.url, "POST", f"{BETA}/workloads", workload("nine", *eight, template("t8")))
    cause = _causes(code, body)["spec.podGroupTemplates"]
    assert cause == {"reason": "FieldValueTooMany", "field": "spec.podGroupTemplates",
                     "message": "Too many: 9: must have at most 8 items"}
    assert body["message"].startswith('Workload.scheduling.k8s.io "nine" is invalid: spec.podGroupTemplates: Too many')
    assert body["details"]["kind"] == "Workload" and body["details"]["group"] == GROUP


@pytest.mark.parametrize(
    ("templates", "spec", "field", "reason"),
    [
        ([template("node"), template("node")], {}, "spec.podGroupTemplates[1]", "FieldValueDuplicate"),
        ([], {"podGroupTemplates": None}, "spec", "FieldValueInvalid"),
        ([template("Node_1")], {}, "spec.podGroupTemplates[0].name", "FieldValueInvalid"),
        ([{"schedulingPolicy": {"basic": {}}}], {}, "spec.podGroupTemplates[0].name", "FieldValueRequired"),
        ([template("a", {"basic": {}, "gang": {"minCount": 1}})], {}, "spec.podGroupTemplates[0].schedulingPolicy",
         "FieldValueInvalid"),
        ([{"name": "a", "schedulingPolicy": {}}], {}, "spec.podGroupTemplates[0].schedulingPolicy",
         "FieldValueInvalid"),
        ([template("a", {"gang": {"minCount": 0}})], {}, "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount",
         "FieldValueInvalid"),
        ([template("a", {"gang": {}})], {}, "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount",
         "FieldValueRequired"),
        ([template("a", schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/zone"},
                                                            {"key": "topology.kubernetes.io/rack"}]})], {},
         "spec.podGroupTemplates[0].schedulingConstraints.topology", "FieldValueTooMany"),
        ([template("a", schedulingConstraints={"topology": [{"key": "not a label key"}]})], {},
         "spec.podGroupTemplates[0].schedulingConstraints.topology[0].key", "FieldValueInvalid"),
        ([template("a", resourceClaims=[{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)])], {},
         "spec.podGroupTemplates[0].resourceClaims", "FieldValueTooMany"),
        ([template("a", resourceClaims=[{"name": "c", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}])],
         {}, "spec.podGroupTemplates[0].resourceClaims[0]", "FieldValueInvalid"),
        ([template("a", disruptionMode={"single": {}, "all": {}})], {}, "spec.podGroupTemplates[0].disruptionMode",
         "FieldValueInvalid"),
        ([template("a", priority=1_000_000_001)], {}, "spec.podGroupTemplates[0].priority", "FieldValueInvalid"),
        ([template("a", priorityClassName="high"), template("b", priorityClassName="low")], {}, "spec",
         "FieldValueInvalid"),
        ([template("a")], {"controllerRef": {"apiGroup": "x"}}, "spec.controllerRef.kind", "FieldValueRequired"),
    ],
    ids=["duplicate-name", "no-templates", "bad-name", "no-name", "basic-and-gang", "no-policy", "minCount-0",
         "minCount-missing", "two-topology-keys", "bad-topology-key", "five-claims", "claim-both-sources",
         "disruption-both", "priority-too-high", "mixed-priorities", "controllerRef-without-kind"],
)
def test_workload_create_rules(request, cluster, templates, spec, field, reason):
    body = workload("w", *templates, **spec)
    if spec.get("podGroupTemplates", ()) is None:
        body["spec"].pop("podGroupTemplates")
    code, answer = raw(_server_for(request, cluster, body).url, "POST", f"{BETA}/workloads", body)
    assert _causes(code, answer)[field]["reason"] == reason


def test_duplicate_template_names_through_the_typed_client(scheduling):
    with pytest.raises(k8s.ApiException) as err:
        scheduling.create_namespaced_workload("default", workload("dup", template("node"), template("node")))
    status = status_of(err.value)
    assert err.value.status == 422
    assert status["details"]["causes"] == [{"reason": "FieldValueDuplicate", "field": "spec.podGroupTemplates[1]",
                                            "message": 'Duplicate value: {"name":"node"}'}]


# -- Workload v1beta1: update -----------------------------------------------------------------------------------
@pytest.fixture
def stored_workload(cluster):
    zone = {"topology": [{"key": "topology.kubernetes.io/zone"}]}
    body = workload("wl", template("node", schedulingConstraints=zone), template("init", {"basic": {}}))
    code, created = raw(cluster.url, "POST", f"{BETA}/workloads", body)
    assert code == 201, created
    return created


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (lambda s: s["podGroupTemplates"].append(template("extra")), "spec.podGroupTemplates[2]",
         "FieldValueForbidden"),
        (lambda s: s["podGroupTemplates"].pop(1), 'spec.podGroupTemplates[name="init"]', "FieldValueForbidden"),
        (lambda s: s["controllerRef"].update(name="other"), "spec.controllerRef", "FieldValueInvalid"),
        (lambda s: s.pop("controllerRef"), "spec.controllerRef", "FieldValueInvalid"),
        (lambda s: s["podGroupTemplates"][0].update(schedulingPolicy={"basic": {}}),
         "spec.podGroupTemplates[0].schedulingPolicy.gang", "FieldValueForbidden"),
        (lambda s: s["podGroupTemplates"][1].update(schedulingPolicy={"gang": {"minCount": 1}}),
         "spec.podGroupTemplates[1].schedulingPolicy.gang", "FieldValueForbidden"),
        (lambda s: s["podGroupTemplates"][0].update(schedulingConstraints={"topology": [{"key": "rack"}]}),
         "spec.podGroupTemplates[0].schedulingConstraints", "FieldValueInvalid"),
        (lambda s: s["podGroupTemplates"][0].update(disruptionMode={"all": {}}),
         "spec.podGroupTemplates[0].disruptionMode", "FieldValueInvalid"),
    ],
    ids=["add-template", "remove-template", "change-controllerRef", "unset-controllerRef", "unset-gang", "set-gang",
         "change-constraints", "change-disruptionMode"],
)
def test_workload_update_rules_on_put(cluster, stored_workload, mutate, field, reason):
    body = copy.deepcopy(stored_workload)
    mutate(body["spec"])
    code, answer = raw(cluster.url, "PUT", f"{BETA}/workloads/wl", body)
    assert _causes(code, answer)[field]["reason"] == reason


def test_workload_min_count_stays_mutable_and_rules_hold_on_patch_and_apply(cluster, stored_workload):
    body = copy.deepcopy(stored_workload)
    body["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] = 5
    code, updated = raw(cluster.url, "PUT", f"{BETA}/workloads/wl", body)
    assert code == 200 and updated["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 5}}
    code, answer = raw(cluster.url, "PATCH", f"{BETA}/workloads/wl",
                       {"spec": {"controllerRef": {"name": "other"}}}, MERGE)
    assert _causes(code, answer)["spec.controllerRef"]["message"].endswith("field is immutable")
    apply = "application/apply-patch+yaml"
    path = f"{BETA}/workloads/ap?fieldManager=tool"
    assert raw(cluster.url, "PATCH", path, workload("ap", template("node"), template("init")), apply)[0] == 201
    code, answer = raw(cluster.url, "PATCH", path, workload("ap", template("node")), apply)
    assert _causes(code, answer)['spec.podGroupTemplates[name="init"]']["message"] == \
        "Forbidden: items may not be removed"
    code, answer = raw(cluster.url, "PATCH", path, workload("ap", template("node", {"gang": {"minCount": 3}}),
                                                            template("init")), apply)
    assert code == 200 and answer["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] == 3


# -- PodGroup v1beta1 -------------------------------------------------------------------------------------------
def test_a_new_pod_group_gets_the_protection_finalizer_and_the_default_disruption_mode(scheduling):
    created = scheduling.create_namespaced_pod_group("default", pod_group("pg"))
    assert created.metadata.finalizers == [FINALIZER]
    assert created.spec.disruption_mode.single == {} and created.spec.disruption_mode.all is None
    dry = scheduling.create_namespaced_pod_group("default", pod_group("pg-dry"), dry_run="All")
    assert dry.metadata.finalizers == [FINALIZER]
    again = scheduling.patch_namespaced_pod_group("pg", "default", {"metadata": {"labels": {"a": "b"}}})
    assert again.metadata.finalizers == [FINALIZER]


def test_deleting_a_pod_group_waits_for_its_finalizer(cluster, scheduling):
    scheduling.create_namespaced_pod_group("default", pod_group("held"))
    scheduling.delete_namespaced_pod_group("held", "default")
    held = scheduling.read_namespaced_pod_group("held", "default")
    assert held.metadata.deletion_timestamp is not None
    scheduling.patch_namespaced_pod_group("held", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(k8s.ApiException) as err:
        scheduling.read_namespaced_pod_group("held", "default")
    assert err.value.status == 404


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ({"schedulingPolicy": None}, "spec.schedulingPolicy", "FieldValueRequired"),
        ({"workloadRef": {"workloadName": "wl"}}, "spec.workloadRef.templateName", "FieldValueRequired"),
        ({"workloadRef": {"workloadName": "WL!", "templateName": "node"}}, "spec.workloadRef.workloadName",
         "FieldValueInvalid"),
        ({"schedulingPolicy": {"gang": {"minCount": -1}}}, "spec.schedulingPolicy.gang.minCount", "FieldValueInvalid"),
        ({"disruptionMode": {"single": {}, "all": {}}}, "spec.disruptionMode", "FieldValueInvalid"),
        ({"resourceClaims": [{"name": "c", "resourceClaimName": "x"}, {"name": "c", "resourceClaimName": "y"}]},
         "spec.resourceClaims[1]", "FieldValueDuplicate"),
    ],
    ids=["no-policy", "ref-without-template", "bad-workload-name", "negative-minCount", "disruption-both",
         "duplicate-claim"],
)
def test_pod_group_create_rules(request, cluster, spec, field, reason):
    body = pod_group("pg", **spec)
    code, answer = raw(_server_for(request, cluster, body).url, "POST", f"{BETA}/podgroups", body)
    causes = _causes(code, answer)
    assert causes[field]["reason"] == reason
    assert answer["message"].startswith('PodGroup.scheduling.k8s.io "pg" is invalid:')


@pytest.mark.parametrize(
    ("patch", "field", "reason"),
    [
        ({"spec": {"workloadRef": {"templateName": "other"}}}, "spec.workloadRef", "FieldValueInvalid"),
        ({"spec": {"schedulingPolicy": {"gang": None, "basic": {}}}}, "spec.schedulingPolicy.gang",
         "FieldValueForbidden"),
        ({"spec": {"schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}}},
         "spec.schedulingConstraints", "FieldValueInvalid"),
        ({"spec": {"priorityClassName": "high"}}, "spec.priorityClassName", "FieldValueInvalid"),
    ],
    ids=["change-workloadRef", "gang-to-basic", "add-constraints", "change-priorityClassName"],
)
def test_pod_group_update_rules(cluster, patch, field, reason):
    assert raw(cluster.url, "POST", f"{BETA}/podgroups", pod_group("pg"))[0] == 201
    code, answer = raw(cluster.url, "PATCH", f"{BETA}/podgroups/pg", patch, MERGE)
    assert _causes(code, answer)[field]["reason"] == reason


def test_pod_group_min_count_is_mutable_and_basic_cannot_become_gang(cluster, scheduling):
    scheduling.create_namespaced_pod_group("default", pod_group("grow"))
    grown = scheduling.patch_namespaced_pod_group("grow", "default",
                                                  {"spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}})
    assert grown.spec.scheduling_policy.gang.min_count == 4
    scheduling.create_namespaced_pod_group("default", pod_group("solo", schedulingPolicy={"basic": {}}))
    with pytest.raises(k8s.ApiException) as err:
        scheduling.patch_namespaced_pod_group("solo", "default",
                                              {"spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}})
    causes = status_of(err.value)["details"]["causes"]
    assert {"reason": "FieldValueForbidden", "field": "spec.schedulingPolicy.gang",
            "message": "Forbidden: field cannot be set once created"} in causes


def test_status_writes_are_not_held_by_spec_rules(cluster, scheduling):
    scheduling.create_namespaced_pod_group("default", pod_group("st"))
    status = {"status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False",
                                         "reason": "Unschedulable", "message": "0/3 nodes",
                                         "lastTransitionTime": "2026-12-01T00:00:00Z"}]}}
    updated = scheduling.patch_namespaced_pod_group_status("st", "default", status)
    assert updated.status.conditions[0].reason == "Unschedulable"


# -- v1alpha2 on a 1.36 cluster ---------------------------------------------------------------------------------
def test_v1alpha2_workload_is_immutable_and_keeps_the_same_limits(sandbox_136):
    url = sandbox_136.url
    sandbox_136.reset()
    eight = [template(f"t{i}") for i in range(8)]
    code, created = raw(url, "POST", f"{ALPHA2}/workloads", workload("w", *eight, version="v1alpha2"))
    assert code == 201, created
    code, answer = raw(url, "POST", f"{ALPHA2}/workloads", workload("n", *eight, template("t8"), version="v1alpha2"))
    assert _causes(code, answer)["spec.podGroupTemplates"]["reason"] == "FieldValueTooMany"
    code, answer = raw(url, "POST", f"{ALPHA2}/workloads",
                       workload("d", template("a"), template("a"), version="v1alpha2"))
    assert _causes(code, answer)["spec.podGroupTemplates[1]"]["reason"] == "FieldValueDuplicate"
    code, answer = raw(url, "POST", f"{ALPHA2}/workloads",
                       workload("m", template("a", disruptionMode="All"), version="v1alpha2"))
    assert _causes(code, answer)["spec.podGroupTemplates[0].disruptionMode"]["message"] == \
        'Unsupported value: "All": supported values: "Pod", "PodGroup"'
    code, answer = raw(url, "POST", f"{ALPHA2}/workloads",
                       workload("m", template("a", disruptionMode={"single": {}}), version="v1alpha2"))
    assert (code, answer["reason"]) == (400, "BadRequest")
    assert answer["message"] == ('Workload in version "v1alpha2" cannot be handled as a Workload: json: cannot '
                                 "unmarshal object into Go struct field Workload.spec.podGroupTemplates."
                                 "disruptionMode of type string")
    body = copy.deepcopy(created)
    body["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] = 5
    code, answer = raw(url, "PUT", f"{ALPHA2}/workloads/w", body)
    assert _causes(code, answer)["spec.podGroupTemplates"]["message"].endswith("field is immutable")


def test_v1alpha2_pod_group_rules(sandbox_136):
    url = sandbox_136.url
    sandbox_136.reset()
    code, created = raw(url, "POST", f"{ALPHA2}/podgroups", pod_group("pg", "v1alpha2"))
    assert code == 201, created
    assert created["spec"]["disruptionMode"] == "Pod"
    assert FINALIZER not in (created["metadata"].get("finalizers") or [])  # 1.36: kube-controller-manager adds it
    code, answer = raw(url, "POST", f"{ALPHA2}/podgroups", pod_group("np", "v1alpha2", schedulingPolicy=None))
    assert _causes(code, answer)["spec.schedulingPolicy"]["reason"] == "FieldValueRequired"
    code, answer = raw(url, "POST", f"{ALPHA2}/podgroups",
                       pod_group("ref", "v1alpha2", podGroupTemplateRef={"workload": {"workloadName": "wl"}}))
    assert _causes(code, answer)["spec.podGroupTemplateRef.workload.podGroupTemplateName"]["reason"] == \
        "FieldValueRequired"
    for patch, field in [({"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}}, "spec.schedulingPolicy"),
                         ({"spec": {"podGroupTemplateRef": {"workload": {"podGroupTemplateName": "x"}}}},
                          "spec.podGroupTemplateRef")]:
        code, answer = raw(url, "PATCH", f"{ALPHA2}/podgroups/pg", patch, MERGE)
        assert _causes(code, answer)[field]["message"].endswith("field is immutable")


# -- typed decoding: wrong JSON types are 400, unknown fields are pruned ------------------------------------------
ODD_VALUES = ["x", 5, 8.5, True, [], {}, ["x"], [5], {"a": 1}]
WORKLOAD_FIELDS = [("spec",), ("spec", "controllerRef"), ("spec", "podGroupTemplates"),
                   ("spec", "podGroupTemplates", 0), ("spec", "podGroupTemplates", 0, "name"),
                   ("spec", "podGroupTemplates", 0, "schedulingPolicy"),
                   ("spec", "podGroupTemplates", 0, "schedulingPolicy", "gang", "minCount"),
                   ("spec", "podGroupTemplates", 0, "schedulingConstraints", "topology"),
                   ("spec", "podGroupTemplates", 0, "resourceClaims"), ("spec", "podGroupTemplates", 0, "priority"),
                   ("metadata", "labels"), ("metadata", "finalizers"), ("metadata", "ownerReferences")]


def _set(body: dict, path: tuple, value) -> dict:
    body = copy.deepcopy(body)
    node = body
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return body


@pytest.mark.parametrize("path", WORKLOAD_FIELDS, ids=[".".join(map(str, p)) for p in WORKLOAD_FIELDS])
def test_odd_json_types_never_cause_a_server_error(cluster, path):
    base = workload("odd", template("node", schedulingConstraints={"topology": [{"key": "k"}]},
                                    resourceClaims=[{"name": "c", "resourceClaimName": "x"}], priority=1))
    assert raw(cluster.url, "POST", f"{BETA}/workloads?dryRun=All", base)[0] == 201
    codes = set()
    for value in ODD_VALUES:
        for method, where in (("POST", f"{BETA}/workloads?dryRun=All"),
                              ("PATCH", f"{BETA}/workloads/odd?fieldManager=t&dryRun=All")):
            code, answer = raw(cluster.url, method, where, _set(base, path, value), "application/apply-patch+yaml"
                               if method == "PATCH" else "application/json")
            assert code < 500, (value, answer)
            codes.add(code)
    assert codes & {400, 422}


def test_a_wrong_json_type_is_a_bad_request_naming_the_go_field(cluster):
    body = workload("w", template("node"))
    body["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] = "two"
    code, answer = raw(cluster.url, "POST", f"{BETA}/workloads", body)
    assert (code, answer["reason"]) == (400, "BadRequest")
    assert answer["message"] == ('Workload in version "v1beta1" cannot be handled as a Workload: json: cannot '
                                 "unmarshal string into Go struct field Workload.spec.podGroupTemplates."
                                 "schedulingPolicy.gang.minCount of type int32")
    body["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] = 2.0
    code, answer = raw(cluster.url, "POST", f"{BETA}/workloads", body)
    assert code == 400 and "cannot unmarshal number 2.0 into" in answer["message"]  # typed int32: no float leniency


def test_unknown_fields_of_a_pod_group_are_pruned_with_a_warning(cluster, custom):
    body = pod_group("pg")
    body["spec"]["minMember"] = 3
    created, code, headers = custom.create_namespaced_custom_object_with_http_info(GROUP, "v1beta1", "default",
                                                                                   "podgroups", body)
    assert "minMember" not in created["spec"]
    assert code == 201 and headers.get("Warning") == '299 - "unknown field \\"spec.minMember\\""'
    code, answer = raw(cluster.url, "POST", f"{BETA}/podgroups?fieldValidation=Strict", pod_group("pg2") | {
        "spec": {**pod_group("pg2")["spec"], "minMember": 3}})
    assert code == 400 and 'strict decoding error: unknown field "spec.minMember"' in answer["message"]


def test_composite_templates_are_dropped_while_composite_pod_groups_are_not_served(cluster):
    body = workload("composite")
    body["spec"] = {"compositePodGroupTemplates": [{"name": "root", "schedulingPolicy": {"basic": {}},
                                                    "podGroupTemplates": [template("leaf")]}]}
    code, answer = raw(cluster.url, "POST", f"{BETA}/workloads", body)
    assert _causes(code, answer)["spec"]["message"] == ("Invalid value: null: must specify one of: "
                                                        "`compositePodGroupTemplates`, `podGroupTemplates`")
