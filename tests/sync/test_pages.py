"""HTML pages under /cluster/: status, impact, drift side by side, bulk progress, adoption, deletion, roles."""

from __future__ import annotations

import pytest

from runtimes.choices import SyncState
from runtimes.models import PolicySync, RuntimePolicy
from runtimes.services import sync
from trainer_portal import kube
from trainer_portal.kube.client import build_gateway
from trainer_portal.kube.config import KubeSettings

from .conftest import runtime_manifest

pytestmark = pytest.mark.django_db


def test_bulk_apply_redirects_to_live_progress(cluster, client, alice, make_policy, eager_celery,
                                               django_capture_on_commit_callbacks):
    make_policy("page-a")
    make_policy("page-b")
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/cluster/sync/")
    assert response.status_code == 302
    progress = client.get(response["Location"])
    assert "2 of 2" in progress.content.decode()
    partial = client.get(response["Location"], headers={"HX-Request": "true"})
    assert 'id="sync-progress"' in partial.content.decode()
    assert "<html" not in partial.content.decode()


def test_a_viewer_cannot_bulk_apply(client, bob, make_policy):
    make_policy("page-ro")
    client.force_login(bob)
    assert client.post("/cluster/sync/").status_code == 403


def test_the_impact_page_and_apply_button(cluster, client, alice, make_policy, eager_celery,
                                          django_capture_on_commit_callbacks):
    make_policy("page-impact")
    client.force_login(alice)
    page = client.get("/cluster/runtimes/page-impact/impact/").content.decode()
    assert "only affect TrainJobs created after" in page
    assert "Apply to cluster" in page
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/cluster/runtimes/page-impact/sync/")
    assert RuntimePolicy.objects.get(name="page-impact").sync_state == SyncState.SYNCED


def test_the_drift_page_shows_both_sides_and_resolves(cluster, ctr, client, alice, make_policy):
    policy = make_policy("page-drift")
    sync.policy_sync(policy_id=policy.pk, revision=sync.policy_sync_request(policy=policy))
    other = build_gateway(KubeSettings(config_path=cluster.kubeconfig, field_manager="kubectl-edit"))
    other.apply(ctr, body=runtime_manifest("page-drift", num_nodes=6), force=True)
    client.force_login(alice)

    page = client.post("/cluster/runtimes/page-drift/drift/", {"action": "check"}).content.decode()

    assert "Portal (applied revision)" in page and "Cluster (live)" in page
    assert "kubectl-edit" in page
    assert "Re-apply ours (force)" in page and "Adopt live as new revision" in page
    client.post("/cluster/runtimes/page-drift/drift/", {"action": "adopt"})
    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert (row.sync_state, row.version) == (SyncState.SYNCED, 2)


def test_the_sync_panel_lists_server_errors_by_field(client, bob, make_policy):
    policy = make_policy("page-err")
    PolicySync.objects.filter(policy=policy).update(
        sync_state=SyncState.FAILED, last_sync_error="is invalid",
        sync_error_fields=[{"path": "spec.mlPolicy.numNodes", "message": "must be an integer", "reason": "Invalid"}],
    )
    client.force_login(bob)
    page = client.get("/cluster/runtimes/page-err/panel/").content.decode()
    assert "spec.mlPolicy.numNodes" in page and "must be an integer" in page


def test_deleting_from_the_cluster_warns_about_trainjobs(cluster, gateway, ctr, client, alice, make_policy):
    policy = make_policy("page-del")
    sync.policy_sync(policy_id=policy.pk, revision=sync.policy_sync_request(policy=policy))
    gateway.create(gateway.resolve(kube.TRAINJOB), body={
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "uses-it", "namespace": "default"}, "spec": {"runtimeRef": {"name": "page-del"}},
    })
    client.force_login(alice)
    page = client.get("/cluster/runtimes/page-del/delete/").content.decode()
    assert "1 TrainJob reference" in page and "default/uses-it" in page
    client.post("/cluster/runtimes/page-del/delete/")
    assert gateway.get(ctr, name="page-del") is None
    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.DRAFT


def test_adopt_page(cluster, ctr, client, alice):
    other = build_gateway(KubeSettings(config_path=cluster.kubeconfig, field_manager="kubectl"))
    other.apply(ctr, body=runtime_manifest("page-live"))
    client.force_login(alice)
    page = client.post("/cluster/adopt/").content.decode()
    assert "page-live" in page
    assert RuntimePolicy.objects.filter(name="page-live").exists()


def test_the_impact_page_names_a_bad_num_nodes_instead_of_ignoring_it(cluster, client, bob, make_policy):
    make_policy("page-impact-bad")
    client.force_login(bob)
    for bad in ("abc", "0", "100001"):
        response = client.get(f"/cluster/runtimes/page-impact-bad/impact/?numNodes={bad}")
        assert response.status_code == 200
        assert "numNodes must be a whole number from 1 to 100000" in response.content.decode(), bad
    page = client.get("/cluster/runtimes/page-impact-bad/impact/?numNodes=3").content.decode()
    assert "PodGroups for numNodes 3" in page and "must be a whole number" not in page


def test_a_viewer_may_read_the_drift_page_but_not_act_on_it(cluster, client, bob, make_policy):
    policy = make_policy("page-drift-ro")
    sync.policy_sync(policy_id=policy.pk, revision=sync.policy_sync_request(policy=policy))
    client.force_login(bob)
    assert client.get("/cluster/runtimes/page-drift-ro/drift/").status_code == 200
    assert client.post("/cluster/runtimes/page-drift-ro/drift/", {"action": "adopt"}).status_code == 403
    assert RuntimePolicy.objects.get(pk=policy.pk).version == 1
