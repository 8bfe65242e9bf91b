"""'Apply to cluster' on a policy whose gang can never reach minCount (dependsOn inside one gang) asks for an explicit
confirmation, in the API and the HTML form, and the sync record keeps it; a runtime stored with v2.4 errors is not
applied at all."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from runtimes.choices import RevisionSource
from runtimes.domain.manifest import dump_yaml
from runtimes.models import RuntimePolicy
from runtimes.services import policies as services
from tests.domain.test_policy_cases import with_scheduling

pytestmark = pytest.mark.django_db
DEADLOCK = {"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"], "schedulingPolicy": {"gang": {}}}]}
IMPACT = "/cluster/runtimes/ds/impact/"
SYNC_HTML = "/cluster/runtimes/ds/sync/"
BASIC = {"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"], "schedulingPolicy": {"basic": {}}}]}


def _policy(alice, scheduling: dict, name: str = "ds"):
    manifest = with_scheduling("deepspeed", scheduling)
    manifest["metadata"]["name"] = name
    return services.policy_create(manifest=manifest, author=alice, source=RevisionSource.API)


@pytest.fixture
def api(alice):
    client = APIClient()
    client.force_authenticate(alice)
    return client


def test_the_api_refuses_an_unconfirmed_deadlocked_apply_naming_the_field(api, alice):
    _policy(alice, DEADLOCK)

    response = api.post("/api/v1/runtimes/ds/sync/", {}, format="json")

    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "startup_deadlock_unconfirmed"
    assert [f["path"] for f in error["fields"]] == [
        "confirmStartupDeadlock",
        "spec.scheduling.replicatedJobs[0].targetReplicatedJobs",  # the gang, with the lint's fix
    ]
    assert "never" in error["message"] and "confirmStartupDeadlock: true" in error["message"]
    row = RuntimePolicy.objects.get(name="ds")
    assert row.sync_state == "draft" and row.sync_startup_deadlock_confirmed is False


def test_a_level1_gang_with_sequenced_startup_applies_without_a_confirmation(
    api, alice, django_capture_on_commit_callbacks
):
    """KEP-3015: level 1 with dependsOn becomes one gang per ReplicatedJob — nothing to confirm, no 409."""
    _policy(alice, {"schedulingPolicy": {"gang": {}}})
    with django_capture_on_commit_callbacks():
        response = api.post("/api/v1/runtimes/ds/sync/", {}, format="json")

    assert response.status_code == 202, response.content
    assert RuntimePolicy.objects.get(name="ds").sync_startup_deadlock_confirmed is False


def test_a_confirmed_apply_is_queued_and_the_record_keeps_the_confirmation(
    api, alice, django_capture_on_commit_callbacks
):
    _policy(alice, DEADLOCK)
    with django_capture_on_commit_callbacks() as callbacks:
        response = api.post("/api/v1/runtimes/ds/sync/", {"confirmStartupDeadlock": True}, format="json")

    assert response.status_code == 202, response.content
    assert len(callbacks) == 1
    row = RuntimePolicy.objects.get(name="ds")
    assert row.sync_state == "queued" and row.sync_startup_deadlock_confirmed is True
    assert api.get("/api/v1/runtimes/ds/sync/").json()["startupDeadlockConfirmed"] is True


def test_a_policy_without_deadlock_needs_no_confirmation(api, alice, django_capture_on_commit_callbacks):
    _policy(alice, BASIC)
    with django_capture_on_commit_callbacks():
        response = api.post("/api/v1/runtimes/ds/sync/", {}, format="json")
    assert response.status_code == 202
    assert RuntimePolicy.objects.get(name="ds").sync_startup_deadlock_confirmed is False


def test_the_bulk_apply_names_the_deadlocked_policies(api, alice, django_capture_on_commit_callbacks):
    _policy(alice, DEADLOCK, "ds-gang")
    _policy(alice, BASIC, "ds-basic")

    refused = api.post("/api/v1/runtimes/sync/", {}, format="json")
    assert refused.status_code == 409
    assert "ds-gang" in refused.json()["error"]["message"] and "ds-basic" not in refused.json()["error"]["message"]

    with django_capture_on_commit_callbacks():
        accepted = api.post("/api/v1/runtimes/sync/", {"confirmStartupDeadlock": True}, format="json")
    assert accepted.status_code == 202
    assert RuntimePolicy.objects.get(name="ds-gang").sync_startup_deadlock_confirmed is True


def test_the_html_apply_asks_for_the_confirmation(client, alice, django_capture_on_commit_callbacks):
    _policy(alice, DEADLOCK)
    client.force_login(alice)

    impact = client.get(IMPACT).content.decode()
    assert 'name="confirm_startup_deadlock"' in impact and "never reach" in impact

    refused = client.post(SYNC_HTML, {"next": IMPACT}, follow=True)
    assert "confirm" in refused.content.decode().lower()
    assert RuntimePolicy.objects.get(name="ds").sync_state == "draft"

    with django_capture_on_commit_callbacks():
        client.post(SYNC_HTML, {"confirm_startup_deadlock": "on"})
    row = RuntimePolicy.objects.get(name="ds")
    assert row.sync_state == "queued" and row.sync_startup_deadlock_confirmed is True


def test_a_runtime_stored_with_v24_errors_is_not_applied(api, alice):
    manifest = with_scheduling("qwen", {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}]})
    services.policies_import(text=dump_yaml(manifest), author=alice)
    name = manifest["metadata"]["name"]

    response = api.post(f"/api/v1/runtimes/{name}/sync/", {"confirmStartupDeadlock": True}, format="json")

    assert response.status_code == 409
    assert "scheduling.untargeted_replicated_job" in [f["code"] for f in response.json()["error"]["fields"]]


def test_a_confirmed_apply_reaches_the_cluster_and_stays_recorded(cluster, alice):
    from runtimes.services import sync

    policy = _policy(alice, DEADLOCK)
    revision = sync.policy_sync_request(policy=policy, confirm_startup_deadlock=True)
    sync.policy_sync(policy_id=policy.pk, revision=revision)

    row = RuntimePolicy.objects.get(name="ds")
    assert (row.sync_state, row.applied_revision, row.sync_startup_deadlock_confirmed) == ("synced", 1, True)
