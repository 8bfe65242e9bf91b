"""CRD `x-kubernetes-validations` evaluated by a real CEL interpreter: any rule a CRD carries (not only the ones the
sandbox ships), `messageExpression`, `fieldPath`, `reason` and transition rules with `oldSelf`."""

from __future__ import annotations

import pytest

from sandbox.apiserver import cel
from tests.sandbox.api_support import raw

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


def _crd() -> dict:
    spec_schema = {
        "type": "object",
        "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
                       "mode": {"type": "string", "x-kubernetes-validations": [
                           {"rule": "self == oldSelf", "message": "mode is immutable"}]},
                       "tags": {"type": "array", "items": {"type": "string"}}},
        "x-kubernetes-validations": [
            {"rule": "!has(self.replicas) || !has(self.maxReplicas) || self.replicas <= self.maxReplicas",
             "messageExpression": "'replicas ' + string(self.replicas) + ' exceeds maxReplicas ' + "
                                  "string(self.maxReplicas)",
             "fieldPath": ".replicas", "reason": "FieldValueForbidden"},
            {"rule": "!has(self.tags) || self.tags.all(t, t.startsWith('team-'))",
             "message": "every tag starts with team-"},
        ],
    }
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "properties": {"spec": spec_schema}}}}]}}


def _widget(name: str, **spec) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def widgets(cluster):
    code, body = raw(cluster.url, "POST", CRDS, _crd())
    assert code == 201, body
    return cluster


def _causes(answer: dict) -> dict[str, dict]:
    return {c["field"]: c for c in answer["details"]["causes"]}


def test_a_rule_of_a_crd_created_at_run_time_is_evaluated_with_its_message_expression(widgets):
    code, answer = raw(widgets.url, "POST", WIDGETS, _widget("w", replicas=5, maxReplicas=3))
    assert code == 422, answer
    cause = _causes(answer)["spec.replicas"]
    assert cause["reason"] == "FieldValueForbidden"
    assert cause["message"].endswith("replicas 5 exceeds maxReplicas 3")
    assert raw(widgets.url, "POST", WIDGETS, _widget("ok", replicas=3, maxReplicas=3))[0] == 201


def test_macros_and_string_functions_work(widgets):
    code, answer = raw(widgets.url, "POST", WIDGETS, _widget("t", tags=["team-a", "ops"]))
    assert code == 422 and "every tag starts with team-" in _causes(answer)["spec"]["message"]
    assert raw(widgets.url, "POST", WIDGETS, _widget("t", tags=["team-a", "team-b"]))[0] == 201


def test_a_transition_rule_runs_on_update_only(widgets):
    assert raw(widgets.url, "POST", WIDGETS, _widget("m", mode="fast"))[0] == 201
    code, answer = raw(widgets.url, "PATCH", f"{WIDGETS}/m", {"spec": {"mode": "slow"}},
                       content_type="application/merge-patch+json")
    assert code == 422 and "mode is immutable" in _causes(answer)["spec.mode"]["message"]
    assert raw(widgets.url, "PATCH", f"{WIDGETS}/m", {"spec": {"replicas": 1}},
               content_type="application/merge-patch+json")[0] == 200


@pytest.mark.parametrize(("rule", "value", "expected"), [
    ("self.replicatedJobs.all(e, self.replicatedJobs.filter(o, sets.intersects(o.targets, e.targets)).size() == 1)",
     {"replicatedJobs": [{"targets": ["a"]}, {"targets": ["b"]}]}, True),
    ("self.replicatedJobs.all(e, self.replicatedJobs.filter(o, sets.intersects(o.targets, e.targets)).size() == 1)",
     {"replicatedJobs": [{"targets": ["a"]}, {"targets": ["a", "b"]}]}, False),
    ("self.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')", {"name": "Bad_Name"}, False),
    ("self.missing == 1", {}, False),  # a runtime error fails the rule, as in kube-apiserver
])
def test_the_interpreter_covers_the_kubernetes_libraries_the_crds_use(rule, value, expected):
    assert cel.holds(rule, value) is expected


def test_list_join_of_the_strings_library():
    assert cel.message("self.names.join(', ')", {"names": ["a", "b"]}) == "a, b"
