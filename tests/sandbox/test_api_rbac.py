"""RBAC served as kube-apiserver serves it: Roles, ClusterRoles and bindings through the official client, and
SubjectAccessReviews decided from them (allow, deny, a group binding, a ClusterRole through a RoleBinding)."""

from __future__ import annotations

import kubernetes.client as k8s
import pytest

GROUP = "trainer.kubeflow.org"


@pytest.fixture
def rbac_api(api_client) -> k8s.RbacAuthorizationV1Api:
    return k8s.RbacAuthorizationV1Api(api_client)


@pytest.fixture
def authz(api_client) -> k8s.AuthorizationV1Api:
    return k8s.AuthorizationV1Api(api_client)


def read_trainjobs() -> k8s.V1PolicyRule:
    return k8s.V1PolicyRule(api_groups=[GROUP], resources=["trainjobs"], verbs=["get", "list", "watch"])


def subject(kind: str, name: str) -> k8s.RbacV1Subject:
    return k8s.RbacV1Subject(kind=kind, name=name, api_group="rbac.authorization.k8s.io")


def may(authz, *, user: str = "", groups=(), verb: str = "list", namespace: str = "team-a",
        resource: str = "trainjobs", group: str = GROUP) -> bool:
    review = k8s.V1SubjectAccessReview(spec=k8s.V1SubjectAccessReviewSpec(
        user=user or None, groups=list(groups) or None,
        resource_attributes=k8s.V1ResourceAttributes(verb=verb, group=group, resource=resource,
                                                     namespace=namespace)))
    return authz.create_subject_access_review(review).status.allowed


@pytest.fixture
def bindings(rbac_api):
    for namespace in ("team-a", "team-b"):
        k8s.CoreV1Api(rbac_api.api_client).create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=namespace)))
    rbac_api.create_namespaced_role("team-a", k8s.V1Role(metadata=k8s.V1ObjectMeta(name="job-reader"),
                                                         rules=[read_trainjobs()]))
    rbac_api.create_namespaced_role_binding("team-a", k8s.V1RoleBinding(
        metadata=k8s.V1ObjectMeta(name="ada"), subjects=[subject("User", "ada")],
        role_ref=k8s.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="job-reader")))
    rbac_api.create_cluster_role(k8s.V1ClusterRole(metadata=k8s.V1ObjectMeta(name="trainjob-viewer"),
                                                   rules=[read_trainjobs()]))
    rbac_api.create_namespaced_role_binding("team-b", k8s.V1RoleBinding(
        metadata=k8s.V1ObjectMeta(name="researchers"), subjects=[subject("Group", "researchers")],
        role_ref=k8s.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole",
                               name="trainjob-viewer")))
    rbac_api.create_cluster_role_binding(k8s.V1ClusterRoleBinding(
        metadata=k8s.V1ObjectMeta(name="ops-view"), subjects=[subject("Group", "ops")],
        role_ref=k8s.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole",
                               name="trainjob-viewer")))


def test_the_rbac_objects_read_back_through_the_typed_client(rbac_api, bindings):
    assert [r.metadata.name for r in rbac_api.list_namespaced_role("team-a").items] == ["job-reader"]
    binding = rbac_api.read_namespaced_role_binding("researchers", "team-b")
    assert binding.role_ref.kind == "ClusterRole" and binding.subjects[0].name == "researchers"
    assert "ops-view" in [b.metadata.name for b in rbac_api.list_cluster_role_binding().items]


def test_subject_access_reviews_follow_the_bindings(authz, bindings):
    assert may(authz, user="ada")                                    # Role via RoleBinding
    assert not may(authz, user="ada", namespace="team-b")           # only in its namespace
    assert not may(authz, user="ada", verb="delete")
    assert may(authz, user="x", groups=["researchers"], namespace="team-b")   # ClusterRole via RoleBinding
    assert not may(authz, user="x", groups=["researchers"], namespace="team-a")
    assert may(authz, user="x", groups=["ops"], namespace="anywhere")          # ClusterRoleBinding
    assert not may(authz, user="mallory")                             # no binding: not allowed


def test_a_review_without_user_or_group_is_invalid_not_a_server_error(authz, bindings):
    review = k8s.V1SubjectAccessReview(spec=k8s.V1SubjectAccessReviewSpec(
        resource_attributes=k8s.V1ResourceAttributes(verb="list", resource="pods")))
    with pytest.raises(k8s.ApiException) as failure:
        authz.create_subject_access_review(review)
    assert failure.value.status == 422 and "at least one of user or group" in failure.value.body


def test_the_sandbox_admin_may_still_do_everything(authz, bindings):
    review = k8s.V1SelfSubjectAccessReview(spec=k8s.V1SelfSubjectAccessReviewSpec(
        resource_attributes=k8s.V1ResourceAttributes(verb="delete", resource="nodes")))
    assert authz.create_self_subject_access_review(review).status.allowed
