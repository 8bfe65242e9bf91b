"""The /cluster/ page: connection, served APIs, CRD probe, permissions, snapshot, and the panels apps register."""

from __future__ import annotations

import html

import pytest

from runtimes.choices import SyncState
from runtimes.domain.manifest import new_runtime
from runtimes.models import PolicySync
from runtimes.services.policies import policy_create
from trainer_portal.cluster.tasks import cluster_check_task

pytestmark = pytest.mark.django_db


def test_the_cluster_page_shows_status_apis_probe_and_permissions(cluster, client, bob):
    cluster_check_task()
    client.force_login(bob)
    response = client.get("/cluster/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "reachable" in page and "v1.37.0-sandbox" in page
    assert "trainer.kubeflow.org/v1alpha1" in page and "scheduling.k8s.io/v1alpha3" in page
    assert "spec.scheduling" in page
    assert "clustertrainingruntimes.trainer.kubeflow.org" in page
    assert "Apply all policies" not in page  # viewers get no write buttons


def test_the_cluster_page_explains_an_unreachable_cluster(settings, tmp_path, client, bob):
    settings.KUBE_CONFIG_PATH = str(tmp_path / "absent")
    client.force_login(bob)
    assert "Not checked yet" in client.get("/cluster/").content.decode()
    cluster_check_task()
    page = client.get("/cluster/").content.decode()
    assert "(cluster unreachable)" in page
    assert "TRAINER_PORTAL_KUBECONFIG" in page


def test_no_role_gets_403(client, charlie):
    client.force_login(charlie)
    assert client.get("/cluster/").status_code == 403


def test_the_cluster_page_names_a_missing_permission_and_how_to_grant_it(cluster, client, bob):
    cluster.deny_access({"verb": "patch", "group": "trainer.kubeflow.org", "resource": "clustertrainingruntimes"})
    cluster_check_task()
    client.force_login(bob)
    page = html.unescape(client.get("/cluster/").content.decode())
    assert 'Grant "patch" on clustertrainingruntimes.trainer.kubeflow.org' in page
    assert "kubectl auth can-i patch" in page


def test_the_sync_overview_panel_of_the_policy_app_shows_on_the_cluster_page(cluster, client, alice):
    policy = policy_create(manifest=new_runtime("panel-failed", num_nodes=1, image="busybox"), author=alice,
                           message="test")
    PolicySync.objects.filter(policy=policy).update(sync_state=SyncState.FAILED, last_sync_error="boom: refused")
    client.force_login(alice)
    page = client.get("/cluster/?job=0123").content.decode()
    assert "Policies by sync state" in page and "Needs attention" in page
    assert 'href="/cluster/runtimes/panel-failed/drift/"' in page and "boom: refused" in page
    assert 'hx-get="/cluster/jobs/0123/"' in page  # the bulk apply progress the redirect asked for
    assert "Apply all policies" in page and "Adopt runtimes from " in page  # admin actions
