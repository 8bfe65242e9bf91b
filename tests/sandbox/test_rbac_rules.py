"""The sandbox's RBAC authorizer decides as kube-apiserver's does (rules from the Kubernetes RBAC documentation)."""

from __future__ import annotations

import pytest

from sandbox.apiserver.rbac import Attributes, Policy, authorize


def role(name, namespace, *rules):
    return {"kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": list(rules)}


def cluster_role(name, *rules, labels=None, aggregate=None):
    obj = {"kind": "ClusterRole", "metadata": {"name": name, "labels": labels or {}}, "rules": list(rules)}
    if aggregate:
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": aggregate}]}
    return obj


def binding(name, namespace, ref_kind, ref_name, *subjects):
    kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind,
                                                           "name": ref_name}, "subjects": list(subjects)}


READ_JOBS = {"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainjobs"], "verbs": ["get", "list", "watch"]}
POLICY = Policy.of([
    role("job-reader", "team-a", READ_JOBS),
    binding("ada-reads", "team-a", "Role", "job-reader", {"kind": "User", "name": "ada"}),
    cluster_role("trainjob-viewer", READ_JOBS),
    binding("researchers-view", "team-b", "ClusterRole", "trainjob-viewer", {"kind": "Group", "name": "researchers"}),
    cluster_role("admin-all", {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
    binding("ops", "", "ClusterRole", "admin-all", {"kind": "Group", "name": "ops"}),
    cluster_role("status-only", {"apiGroups": [""], "resources": ["*/status"], "verbs": ["get"]}),
    binding("status", "", "ClusterRole", "status-only", {"kind": "User", "name": "sam"}),
    cluster_role("one-runtime", {"apiGroups": ["trainer.kubeflow.org"], "resources": ["clustertrainingruntimes"],
                                 "verbs": ["patch"], "resourceNames": ["torch"]}),
    binding("rt", "", "ClusterRole", "one-runtime", {"kind": "ServiceAccount", "name": "portal",
                                                     "namespace": "trainer-portal"}),
    cluster_role("aggregate", aggregate={"rbac.example.com/aggregate-to-jobs": "true"}),
    cluster_role("piece", {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
                 labels={"rbac.example.com/aggregate-to-jobs": "true"}),
    binding("agg", "", "ClusterRole", "aggregate", {"kind": "User", "name": "agg"}),
    binding("everyone", "shared", "ClusterRole", "trainjob-viewer", {"kind": "Group", "name": "system:authenticated"}),
])


def allowed(**kwargs) -> bool:
    defaults = {"verb": "list", "group": "trainer.kubeflow.org", "resource": "trainjobs"}
    return authorize(POLICY, Attributes(**{**defaults, **kwargs})).allowed


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"user": "ada", "namespace": "team-a"}, True),             # Role via RoleBinding, its namespace
    ({"user": "ada", "namespace": "team-b"}, False),            # not in another namespace
    ({"user": "ada", "namespace": ""}, False),                  # a RoleBinding never grants cluster-wide
    ({"user": "ada", "namespace": "team-a", "verb": "delete"}, False),
    ({"user": "x", "groups": ("researchers",), "namespace": "team-b"}, True),   # ClusterRole via RoleBinding
    ({"user": "x", "groups": ("researchers",), "namespace": "team-a"}, False),
    ({"user": "x", "groups": ("ops",), "namespace": "anything", "verb": "delete"}, True),  # wildcards
    ({"user": "x", "groups": ("ops",), "resource": "secrets", "group": ""}, True),
    ({"user": "sam", "group": "", "resource": "pods", "subresource": "status", "verb": "get"}, True),
    ({"user": "sam", "group": "", "resource": "pods", "verb": "get"}, False),   # */status is not the pod
    ({"user": "system:serviceaccount:trainer-portal:portal", "resource": "clustertrainingruntimes",
      "verb": "patch", "name": "torch"}, True),
    ({"user": "system:serviceaccount:trainer-portal:portal", "resource": "clustertrainingruntimes",
      "verb": "patch", "name": "deepspeed"}, False),           # resourceNames
    ({"user": "system:serviceaccount:other:portal", "resource": "clustertrainingruntimes", "verb": "patch",
      "name": "torch"}, False),
    ({"user": "agg", "group": "", "resource": "pods", "namespace": "n"}, True),  # aggregated ClusterRole
    ({"user": "anyone", "namespace": "shared"}, True),         # system:authenticated
    ({"user": "anyone", "namespace": "team-a"}, False),
])
def test_decisions(kwargs, expected):
    assert allowed(**kwargs) is expected


def test_the_reason_names_the_binding_and_role():
    decision = authorize(POLICY, Attributes(user="ada", verb="get", group="trainer.kubeflow.org",
                                            resource="trainjobs", namespace="team-a"))
    assert decision.reason == 'RBAC: allowed by RoleBinding "ada-reads/team-a" of Role "job-reader" to User "ada"'


def test_a_binding_to_a_missing_role_grants_nothing():
    policy = Policy.of([binding("dangling", "team-a", "Role", "gone", {"kind": "User", "name": "ada"})])
    assert not authorize(policy, Attributes(user="ada", verb="get", resource="pods", namespace="team-a")).allowed
