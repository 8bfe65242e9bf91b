"""REST endpoints of cluster sync: 202 + status URL, bulk progress, cluster status, adopt, drift resolve, roles."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from runtimes.choices import SyncState
from runtimes.models import RuntimePolicy
from runtimes.services import sync
from trainer_portal.kube.client import build_gateway
from trainer_portal.kube.config import KubeSettings

from .conftest import runtime_manifest

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_alice(alice):
    client = APIClient()
    client.force_authenticate(alice)
    return client


@pytest.fixture
def as_bob(bob):
    client = APIClient()
    client.force_authenticate(bob)
    return client


def test_it_accepts_a_sync_with_a_status_url_and_applies_on_commit(
    cluster, gateway, ctr, make_policy, as_alice, eager_celery, django_capture_on_commit_callbacks
):
    make_policy("api-one")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = as_alice.post("/api/v1/runtimes/api-one/sync/")
    assert response.status_code == 202
    body = response.json()
    assert (body["revision"], body["state"], body["statusUrl"]) == (1, "queued", "http://testserver/api/v1/runtimes/api-one/sync/")
    assert response["Location"] == body["statusUrl"]
    assert len(callbacks) == 1

    status = as_alice.get(body["statusUrl"]).json()
    live = gateway.get(ctr, name="api-one")
    assert (status["state"], status["appliedRevision"], status["upToDate"]) == ("synced", 1, True)
    assert status["resourceVersion"] == live["metadata"]["resourceVersion"]


def test_the_runtime_representation_shows_the_sync_state(cluster, make_policy, as_alice, eager_celery):
    policy = make_policy("api-repr")
    sync.policy_sync(policy_id=policy.pk, revision=sync.policy_sync_request(policy=policy))
    body = as_alice.get("/api/v1/runtimes/api-repr/").json()
    assert body["sync"]["state"] == "synced"
    assert body["sync"]["appliedRevision"] == 1


def test_a_viewer_may_read_but_not_sync(make_policy, as_bob):
    make_policy("api-ro")
    assert as_bob.get("/api/v1/runtimes/api-ro/sync/").status_code == 200
    assert as_bob.post("/api/v1/runtimes/api-ro/sync/").status_code == 403
    assert as_bob.post("/api/v1/runtimes/sync/", {}, format="json").status_code == 403
    assert RuntimePolicy.objects.get(name="api-ro").sync_state == SyncState.DRAFT


def test_no_role_sees_nothing(charlie, make_policy):
    make_policy("api-hidden")
    client = APIClient()
    client.force_authenticate(charlie)
    assert client.get("/api/v1/runtimes/api-hidden/sync/").status_code == 403
    assert client.get("/api/v1/cluster/").status_code == 403


def test_syncing_an_unknown_policy_is_404(as_alice):
    response = as_alice.post("/api/v1/runtimes/nope/sync/")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "No policy named 'nope'."


def test_bulk_sync_reports_progress(cluster, make_policy, as_alice, eager_celery, django_capture_on_commit_callbacks):
    for name in ("bulk-a", "bulk-b", "bulk-c"):
        make_policy(name)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = as_alice.post("/api/v1/runtimes/sync/", {"names": ["bulk-a", "bulk-c"]}, format="json")
    assert response.status_code == 202
    url = response.json()["statusUrl"]
    before = as_alice.get(url).json()
    assert (before["total"], before["done"], before["finished"]) == (2, 0, False)

    for callback in callbacks:
        callback()

    after = as_alice.get(url).json()
    assert (after["done"], after["succeeded"], after["failed"], after["finished"]) == (2, 2, [], True)
    assert RuntimePolicy.objects.get(name="bulk-b").sync_state == SyncState.DRAFT


def test_bulk_sync_names_unknown_policies(make_policy, as_alice):
    make_policy("bulk-known")
    response = as_alice.post("/api/v1/runtimes/sync/", {"names": ["bulk-known", "ghost"]}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"][0]["path"] == "names"


def test_an_unknown_sync_batch_is_404_on_both_paths(as_alice):
    for path in ("/api/v1/sync-batches/0123/", "/api/v1/sync-jobs/0123/", f"/api/v1/sync-batches/{'f' * 32}/"):
        response = as_alice.get(path)
        assert response.status_code == 404, path
        assert response.json()["error"]["code"] == "not_found"


def test_the_deprecated_sync_jobs_path_answers_like_sync_batches(make_policy, as_alice):
    make_policy("alias-a")
    accepted = as_alice.post("/api/v1/runtimes/sync/", {}, format="json").json()
    assert accepted["statusUrl"] == f"http://testserver/api/v1/sync-batches/{accepted['batch']}/"
    assert accepted["job"] == accepted["batch"]
    new = as_alice.get(accepted["statusUrl"]).json()
    old = as_alice.get(f"/api/v1/sync-jobs/{accepted['job']}/").json()
    assert new == old
    assert (new["total"], new["id"]) == (1, accepted["batch"])






def test_adopt_endpoint_is_idempotent(cluster, ctr, as_alice):
    other = build_gateway(KubeSettings(config_path=cluster.kubeconfig, field_manager="kubectl"))
    other.apply(ctr, body=runtime_manifest("live-one"))
    first = as_alice.post("/api/v1/cluster/adopt/").json()
    second = as_alice.post("/api/v1/cluster/adopt/").json()
    assert first["created"] == ["live-one"]
    assert (second["created"], second["unchanged"]) == ([], ["live-one"])


def test_drift_resolve_adopt_and_reapply(cluster, gateway, ctr, make_policy, as_alice, eager_celery,
                                         django_capture_on_commit_callbacks):
    policy = make_policy("api-drift")
    sync.policy_sync(policy_id=policy.pk, revision=sync.policy_sync_request(policy=policy))
    other = build_gateway(KubeSettings(config_path=cluster.kubeconfig, field_manager="kubectl-edit"))
    other.apply(ctr, body=runtime_manifest("api-drift", num_nodes=9), force=True)

    check = as_alice.post("/api/v1/runtimes/api-drift/drift/check/").json()
    assert check["drifted"] is True and check["managers"] == ["kubectl-edit"]

    bad = as_alice.post("/api/v1/runtimes/api-drift/drift/resolve/", {"action": "merge"}, format="json")
    assert bad.status_code == 400

    with django_capture_on_commit_callbacks(execute=True):
        response = as_alice.post("/api/v1/runtimes/api-drift/drift/resolve/", {"action": "reapply"}, format="json")
    assert response.status_code == 202
    assert gateway.get(ctr, name="api-drift")["spec"]["mlPolicy"]["numNodes"] == 2
    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.SYNCED

    again = as_alice.post("/api/v1/runtimes/api-drift/drift/resolve/", {"action": "adopt"}, format="json")
    assert again.status_code == 409  # not drifted any more


def test_impact_endpoint(cluster, make_policy, as_bob):
    make_policy("api-impact", num_nodes=3)
    body = as_bob.get("/api/v1/runtimes/api-impact/sync/impact/?numNodes=5").json()
    assert body["numNodes"] == body["num_nodes"] == 5  # the snake_case spelling stays for one release
    assert body["new"]["totalPods"] == 5
    assert body["old"]["error"] == "Not applied yet."
    camel = as_bob.get("/api/v1/runtimes/api-impact/sync/impact/?numNodes=5&dialect=camel").json()
    assert "num_nodes" not in camel and "podGroups" in camel["new"]
    assert as_bob.get("/api/v1/runtimes/api-impact/sync/impact/?numNodes=zero").status_code == 400
