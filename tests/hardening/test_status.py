"""Status that is true at a glance, and GETs that change nothing (against the sandbox cluster, over HTTP).

Two separate facts, as Argo CD shows them: the sync status (is the current revision the applied one?) and the
cluster status (is the live object there, and does it match?). The portal's own bookkeeping annotation and the
CRD's defaults are never drift, and adopt and drift agree on what "different" means.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from runtimes.choices import RevisionSource
from runtimes.domain.manifest import new_runtime
from runtimes.models import PolicyRevision, PolicySync, RuntimePolicy
from runtimes.services import policies as services
from tests.hardening.conftest import stored_digest
from trainer_portal import kube
from trainer_portal.kube.client import build_gateway
from trainer_portal.kube.config import KubeSettings

pytestmark = pytest.mark.django_db


@pytest.fixture
def ctr(gateway):
    return gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)


@pytest.fixture
def other(cluster):
    """A second client with another field manager, playing `kubectl edit`."""
    return build_gateway(KubeSettings(config_path=cluster.kubeconfig, field_manager="kubectl-edit"))


@pytest.fixture
def api(alice):
    client = APIClient()
    client.force_login(alice)
    return client


@pytest.fixture
def viewer_api(bob):
    client = APIClient()
    client.force_login(bob)
    return client


@pytest.fixture
def eager(settings):
    from trainer_portal.celery import app

    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, False
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


def manifest(name: str, num_nodes: int = 2) -> dict:
    return new_runtime(name, num_nodes=num_nodes, image="busybox:1.37")


def synced_policy(api, alice, django_capture_on_commit_callbacks, name: str = "calm"):
    """Create `name` and apply its revision 1 through the API (the Celery task runs inline on commit)."""
    services.policy_create(manifest=manifest(name), author=alice, message="first", source=RevisionSource.API)
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/api/v1/runtimes/{name}/sync/").status_code == 202
    body = api.get(f"/api/v1/runtimes/{name}/").json()
    assert body["sync"]["state"] == "synced", body["sync"]
    return body


def status_of(api, name: str) -> dict:
    return api.get(f"/api/v1/runtimes/{name}/").json()


# ----------------------------------------------------------------------------------------------- GET is safe


def test_opening_the_drift_page_changes_nothing(
    cluster, eager, api, alice, bob, client, ctr, other, django_capture_on_commit_callbacks
):
    synced_policy(api, alice, django_capture_on_commit_callbacks)
    other.apply(ctr, body=manifest("calm", num_nodes=7), force=True)  # a check would now find drift
    before = stored_digest()

    for user in (bob, alice):
        client.force_login(user)
        response = client.get("/cluster/runtimes/calm/drift/")
        assert response.status_code == 200
        assert stored_digest() == before, f"GET as {user.username} changed the policy"
    assert RuntimePolicy.objects.get(name="calm").sync_state == "synced"
    assert 'name="action" value="check"' in response.content.decode()  # the check is a button (POST)


def test_the_drift_check_is_an_admin_post(
    cluster, eager, api, alice, bob, client, ctr, other, django_capture_on_commit_callbacks
):
    synced_policy(api, alice, django_capture_on_commit_callbacks)
    other.apply(ctr, body=manifest("calm", num_nodes=7), force=True)

    client.force_login(bob)
    assert client.post("/cluster/runtimes/calm/drift/", {"action": "check"}).status_code == 403
    assert status_of(api, "calm")["cluster"]["status"] != "drifted"

    client.force_login(alice)
    response = client.post("/cluster/runtimes/calm/drift/", {"action": "check"})
    assert response.status_code in (200, 302)
    assert status_of(api, "calm")["cluster"]["status"] == "drifted"


# ----------------------------------------------------------------------------------------------- two facts


def test_synced_only_when_the_current_revision_is_applied(
    cluster, eager, api, alice, client, django_capture_on_commit_callbacks
):
    synced_policy(api, alice, django_capture_on_commit_callbacks)
    assert status_of(api, "calm")["sync"]["status"] == "synced"

    response = api.put("/api/v1/runtimes/calm/", {"manifest": manifest("calm", 3), "version": 1}, format="json")
    assert response.status_code == 200

    body = status_of(api, "calm")
    assert body["sync"]["status"] == "out_of_sync"
    assert body["sync"]["label"] == "Out of sync (revision 2 not applied)"
    client.force_login(alice)
    for page in ("/runtimes/", "/runtimes/calm/"):
        html = client.get(page).content.decode()
        assert "Out of sync (revision 2 not applied)" in html, page
        assert not re.search(r'<span class="badge[^"]*"[^>]*>Synced</span>', html), page
    assert [p["name"] for p in api.get("/api/v1/runtimes/?sync_status=out_of_sync").json()["results"]] == ["calm"]
    assert api.get("/api/v1/runtimes/?sync_status=synced").json()["results"] == []
    listed = client.get("/runtimes/?sync_status=out_of_sync").content.decode()
    assert 'href="/runtimes/calm/"' in listed
    assert 'href="/runtimes/calm/"' not in client.get("/runtimes/?sync_status=synced").content.decode()


def test_sync_status_and_cluster_status_are_separate_facts(
    cluster, eager, api, alice, client, ctr, other, django_capture_on_commit_callbacks
):
    synced_policy(api, alice, django_capture_on_commit_callbacks)
    assert status_of(api, "calm")["cluster"]["status"] == "matches"
    other.apply(ctr, body=manifest("calm", num_nodes=7), force=True)

    assert api.post("/api/v1/runtimes/calm/drift/check/").status_code == 200

    body = status_of(api, "calm")
    assert (body["sync"]["status"], body["cluster"]["status"]) == ("synced", "drifted")
    assert [p["name"] for p in api.get("/api/v1/runtimes/?cluster_status=drifted").json()["results"]] == ["calm"]
    assert api.get("/api/v1/runtimes/?cluster_status=matches").json()["results"] == []
    client.force_login(alice)
    html = client.get("/runtimes/calm/").content.decode()
    assert re.search(r'<span class="badge[^"]*"[^>]*>Synced</span>', html)
    assert re.search(r'<span class="badge[^"]*"[^>]*>Drifted</span>', html)
    assert 'href="/runtimes/calm/"' in client.get("/runtimes/?cluster_status=drifted").content.decode()


def test_a_vanished_object_is_missing_and_offers_reapply_only(
    cluster, eager, api, alice, client, ctr, gateway, django_capture_on_commit_callbacks
):
    synced_policy(api, alice, django_capture_on_commit_callbacks)
    gateway.delete(ctr, name="calm")

    assert api.post("/api/v1/runtimes/calm/drift/check/").status_code == 200

    assert status_of(api, "calm")["cluster"]["status"] == "missing"
    client.force_login(alice)
    html = client.get("/cluster/runtimes/calm/drift/").content.decode()
    assert "Missing on the cluster" in html
    assert reverse("runtimes:drift-reapply", args=["calm"]) in html
    assert 'value="adopt"' not in html
    assert "Unified diff" not in html  # nothing to compare: no diff that the change list would contradict


def test_the_change_list_and_the_unified_diff_agree(
    cluster, eager, api, alice, client, ctr, other, django_capture_on_commit_callbacks
):
    synced_policy(api, alice, django_capture_on_commit_callbacks)
    other.apply(ctr, body=manifest("calm", num_nodes=7), force=True)
    client.force_login(alice)

    html = client.post("/cluster/runtimes/calm/drift/", {"action": "check"}, follow=True).content.decode()

    assert "<code>spec.mlPolicy.numNodes</code>" in html
    assert "numNodes: 7" in html and "numNodes: 2" in html


# ----------------------------------------------------------------------------------------------- what is drift


def test_the_portals_revision_annotation_is_never_drift(cluster, eager, api, alice, ctr, other):
    other.apply(ctr, body=manifest("found"))  # created outside the portal: no revision annotation
    assert api.post("/api/v1/cluster/adopt/").json()["created"] == ["found"]
    # Forget the resourceVersion shortcut, so the check compares the objects themselves.
    PolicySync.objects.filter(policy__name="found").update(applied_resource_version="")

    body = api.post("/api/v1/runtimes/found/drift/check/").json()

    assert body["drifted"] is False, body
    assert status_of(api, "found")["cluster"]["status"] == "matches"


def test_adopt_and_drift_agree_on_crd_defaults(cluster, eager, api, alice, django_capture_on_commit_callbacks):
    synced_policy(api, alice, django_capture_on_commit_callbacks)
    PolicySync.objects.filter(policy__name="calm").update(applied_resource_version="")
    assert api.post("/api/v1/runtimes/calm/drift/check/").json()["drifted"] is False

    result = api.post("/api/v1/cluster/adopt/").json()

    assert result["unchanged"] == ["calm"], result  # the live groupName/replicas defaults are no difference
    assert PolicyRevision.objects.filter(policy__name="calm").count() == 1
