"""Visibility from the cluster's RBAC (TRAINER_PORTAL_VISIBILITY): a data scientist sees the namespaces the cluster's
RBAC lets their identity list TrainJobs in, asked with SubjectAccessReviews against the sandbox's RBAC."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from jobs import selectors
from tests.jobs.factories import grant, tracked_job
from trainer_portal.cluster.models import Cluster

pytestmark = pytest.mark.django_db
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def post(gateway, path: str, body: dict) -> None:
    gateway.request("POST", path, body=body)


@pytest.fixture
def cluster_rbac(gateway):
    """On the sandbox: the IdP group ``researchers`` may read TrainJobs in team-a (a ClusterRole through a
    RoleBinding), the user ``oidc:dora@example.com`` in team-c (a Role), nobody in team-b."""
    for namespace in ("team-a", "team-b", "team-c"):
        post(gateway, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    rule = {"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainjobs"], "verbs": ["get", "list", "watch"]}
    post(gateway, f"{RBAC}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                           "metadata": {"name": "trainjob-reader"}, "rules": [rule]})
    post(gateway, f"{RBAC}/namespaces/team-a/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "researchers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "trainjob-reader"},
        "subjects": [{"kind": "Group", "name": "oidc:researchers", "apiGroup": "rbac.authorization.k8s.io"}]})
    post(gateway, f"{RBAC}/namespaces/team-c/roles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                                                      "metadata": {"name": "reader"}, "rules": [rule]})
    post(gateway, f"{RBAC}/namespaces/team-c/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "dora"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "name": "oidc:dora@example.com", "apiGroup": "rbac.authorization.k8s.io"}]})


@pytest.fixture
def dora(django_user_model, settings):
    settings.TRAINER_PORTAL_RBAC_USER_PREFIX = "oidc:"
    settings.TRAINER_PORTAL_RBAC_GROUP_PREFIX = "oidc:"
    settings.TRAINER_PORTAL_RBAC_USERNAME_FROM = "email"
    user = django_user_model.objects.create_user("dora", email="dora@example.com", password="dora-password-1")
    user.groups.add(Group.objects.get_or_create(name="data-scientist")[0],
                    Group.objects.get_or_create(name="researchers")[0])
    for namespace in ("team-a", "team-b", "team-c"):
        tracked_job(namespace)
    return user


def visible(user) -> set[str]:
    fresh = type(user).objects.get(pk=user.pk)  # visibility is cached on the user object
    return selectors.visible_namespaces(fresh).all_namespaces


def test_rbac_mode_shows_what_the_clusters_rbac_allows(settings, cluster_rbac, dora):
    settings.TRAINER_PORTAL_VISIBILITY = "rbac"
    grant("researchers", "team-b")  # ignored: the cluster's RBAC alone decides
    assert visible(dora) == {"team-a", "team-c"}


def test_grants_mode_ignores_the_cluster_and_both_modes_add_up(settings, cluster_rbac, dora):
    grant("researchers", "team-b")
    settings.TRAINER_PORTAL_VISIBILITY = "grants"
    assert visible(dora) == {"team-b"}
    settings.TRAINER_PORTAL_VISIBILITY = "grants+rbac"
    assert visible(dora) == {"team-a", "team-b", "team-c"}


def test_the_api_lists_only_the_visible_jobs(client, settings, cluster_rbac, dora):
    settings.TRAINER_PORTAL_VISIBILITY = "rbac"
    client.force_login(dora)
    listed = client.get("/api/v1/trainjobs/").json()
    assert {item["namespace"] for item in listed["items"]} == {"team-a", "team-c"}


def test_an_unreachable_cluster_shows_nothing_more_and_answers_at_once(settings, cluster, dora):
    settings.TRAINER_PORTAL_VISIBILITY = "grants+rbac"
    grant("researchers", "team-b")
    cluster.inject_fault(method="POST", path="/apis/authorization.k8s.io/v1/subjectaccessreviews", action="status",
                         status=503, count=100)
    assert visible(dora) == {"team-b"}


def test_answers_are_cached_per_identity(settings, cluster_rbac, dora, cluster):
    settings.TRAINER_PORTAL_VISIBILITY = "rbac"
    assert visible(dora) == {"team-a", "team-c"}
    # The cluster now refuses every review: the cached answer stands for the cache's lifetime.
    cluster.inject_fault(method="POST", path="/apis/authorization.k8s.io/v1/subjectaccessreviews", action="status",
                         status=503, count=100)
    assert visible(dora) == {"team-a", "team-c"}
    assert Cluster.objects.get(is_default=True)
