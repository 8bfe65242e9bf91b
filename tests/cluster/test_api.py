"""GET /api/v1/cluster/: versions, served APIs, CRD probe and permissions, or why the cluster is unreachable."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from trainer_portal.cluster.tasks import cluster_check_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_bob(bob):
    client = APIClient()
    client.force_authenticate(bob)
    return client


def test_the_cluster_endpoint_reports_versions_apis_and_the_crd_probe(cluster, as_bob):
    cluster_check_task()
    body = as_bob.get("/api/v1/cluster/").json()
    assert body["reachable"] is True
    assert body["version"]["git_version"].startswith("v1.37")
    served = {api["group_version"]: api["served"] for api in body["apis"]}
    assert served["trainer.kubeflow.org/v1alpha1"] is True
    assert served["scheduling.k8s.io/v1beta1"] is True
    assert served["scheduling.k8s.io/v1alpha2"] is False
    assert next(api for api in body["apis"] if not api["served"])["hint"]
    assert body["crd_scheduling"]["accepted"] is True
    checked = {(p["verb"], p["resource"]) for p in body["permissions"]}
    assert ("patch", "clustertrainingruntimes.trainer.kubeflow.org") in checked


def test_the_cluster_endpoint_reports_an_unreachable_cluster_with_a_hint(settings, tmp_path, as_bob):
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:9'}\n"
        "users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
        "current-context: a\n"
    )
    settings.KUBE_CONFIG_PATH = str(config)
    cluster_check_task()
    body = as_bob.get("/api/v1/cluster/").json()
    assert body["reachable"] is False
    assert "connection" in body["error"]
    assert "kubeconfig" in body["hint"]
