"""Dangerous cluster actions confirm with the change: bulk apply lists what it applies (drafts and deadlock
warnings called out, each excludable) and reports per policy; a forced re-apply shows its diff and the field
managers it overrides (a dry run: the page changes nothing)."""

from __future__ import annotations

import copy

import pytest

from runtimes.choices import SyncState
from runtimes.domain.constants import ANCESTOR_LABEL
from runtimes.models import PolicySync, RuntimePolicy
from runtimes.services import sync
from runtimes.services.policies import policy_create
from trainer_portal.kube.client import build_gateway
from trainer_portal.kube.config import KubeSettings

from .conftest import runtime_manifest

pytestmark = pytest.mark.django_db

CONFIRM = "/cluster/sync/"


def initializer_in_trainer_gang(name: str) -> dict:
    """A runtime whose one gang holds an initializer and the trainer that dependsOn it Complete (a real deadlock:
    the trainer's pods are created only after the initializer finished, so the gang never reaches minCount)."""
    manifest = runtime_manifest(name)
    rjobs = manifest["spec"]["template"]["spec"]["replicatedJobs"]
    initializer = copy.deepcopy(rjobs[0])
    initializer["name"] = "dataset-initializer"
    initializer["template"]["metadata"]["labels"][ANCESTOR_LABEL] = "dataset-initializer"
    initializer["template"]["spec"]["template"]["spec"]["containers"][0]["name"] = "dataset-initializer"
    rjobs.insert(0, initializer)
    rjobs[1] = {**rjobs[1], "dependsOn": [{"name": "dataset-initializer", "status": "Complete"}]}
    gang = [rjobs[0]["name"], rjobs[1]["name"]]
    entry = {"targetReplicatedJobs": gang, "schedulingPolicy": {"gang": {}}}
    manifest["spec"]["scheduling"] = {"replicatedJobs": [entry]}
    return manifest


@pytest.fixture
def three_policies(cluster, admin, make_policy):
    applied = make_policy("conf-applied")
    sync.policy_sync(policy_id=applied.pk, revision=sync.policy_sync_request(policy=applied))
    make_policy("conf-draft")
    policy_create(manifest=initializer_in_trainer_gang("conf-deadlock"), author=admin, message="sequenced")


def test_the_confirmation_lists_every_policy_and_calls_out_drafts_and_deadlocks(three_policies, client, alice):
    client.force_login(alice)
    response = client.get(CONFIRM)
    assert response.status_code == 200
    plan = {item["name"]: item for item in response.context["plan"]}
    assert plan["conf-applied"]["change"] == "reapply" and plan["conf-applied"]["up_to_date"]
    assert plan["conf-draft"]["draft"] and plan["conf-draft"]["change"] == "create"
    assert plan["conf-deadlock"]["deadlocks"] and "gang" in plan["conf-deadlock"]["deadlocks"][0]
    html = response.content.decode()
    assert "2 drafts" in html and "1 policy has deadlock warnings" in html
    for name in plan:
        assert f'name="names" value="{name}" id=' in html
    # Looking changes nothing.
    assert RuntimePolicy.objects.get(name="conf-draft").sync_state == SyncState.DRAFT


def test_only_the_ticked_policies_are_applied_and_each_result_is_shown(
    three_policies, client, alice, eager_celery, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(CONFIRM, {"confirmed": "1", "names": ["conf-draft", "conf-applied"]})
    assert response.status_code == 302
    assert RuntimePolicy.objects.get(name="conf-deadlock").sync_state == SyncState.DRAFT
    assert RuntimePolicy.objects.get(name="conf-draft").sync_state == SyncState.SYNCED
    page = client.get(response["Location"])
    items = {item["name"]: item for item in page.context["progress"]["items"]}
    assert set(items) == {"conf-draft", "conf-applied"}
    assert {item["status"] for item in items.values()} == {"succeeded"}
    html = page.content.decode()
    assert 'data-policy="conf-draft" data-status="succeeded"' in html
    assert 'href="/runtimes/conf-draft/"' in html


def test_a_failure_is_reported_with_the_clusters_message_and_links_to_fix_it(
    three_policies, cluster, client, alice, eager_celery, django_capture_on_commit_callbacks
):
    cluster.inject_fault(
        method="PATCH",
        path="clustertrainingruntimes/conf-draft",
        action="status",
        status=500,
        count=20,
        message="admission webhook denied the request",
    )
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(CONFIRM, {"confirmed": "1", "names": ["conf-draft"]})
    page = client.get(response["Location"])
    (item,) = page.context["progress"]["items"]
    assert item["status"] == "failed" and "admission webhook denied" in item["error"]
    html = page.content.decode()
    assert 'data-status="failed"' in html and "admission webhook denied" in html
    assert 'href="/runtimes/conf-draft/edit/"' in html and 'href="/cluster/runtimes/conf-draft/drift/"' in html


def test_an_empty_choice_is_refused_not_read_as_all(three_policies, client, alice):
    client.force_login(alice)
    response = client.post(CONFIRM, {"confirmed": "1"}, follow=True)
    assert response.redirect_chain == [("/cluster/sync/", 302)]
    assert "choose at least one policy" in response.content.decode()
    assert not PolicySync.objects.exclude(sync_state__in=[SyncState.DRAFT, SyncState.SYNCED]).exists()


def test_a_viewer_sees_no_confirmation(client, bob):
    client.force_login(bob)
    assert client.get(CONFIRM).status_code == 403


@pytest.fixture
def drifted(cluster, ctr, make_policy):
    policy = make_policy("conf-drift")
    sync.policy_sync(policy_id=policy.pk, revision=sync.policy_sync_request(policy=policy))
    other = build_gateway(KubeSettings(config_path=cluster.kubeconfig, field_manager="kubectl-edit"))
    other.apply(ctr, body=runtime_manifest("conf-drift", num_nodes=6), force=True)
    sync.policy_drift_check(policy_id=policy.pk)
    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.DRIFTED
    return policy


def test_force_reapply_shows_the_diff_and_the_managers_it_overrides_and_changes_nothing(
    drifted, gateway, ctr, client, alice
):
    client.force_login(alice)
    drift_page = client.get("/cluster/runtimes/conf-drift/drift/").content.decode()
    assert 'href="/cluster/runtimes/conf-drift/drift/reapply/"' in drift_page

    response = client.get("/cluster/runtimes/conf-drift/drift/reapply/")

    assert response.status_code == 200
    preview = response.context["preview"]
    assert preview["error"] == "" and preview["managers"] == ["kubectl-edit"]
    assert {"path": "spec.mlPolicy.numNodes", "op": "changed", "live": 6, "ours": 2} in preview["changes"]
    html = response.content.decode()
    assert '<code class="manager">kubectl-edit</code>' in html
    assert "spec.mlPolicy.numNodes" in html and 'value="reapply"' in html
    # A dry run: the cluster still has the other manager's value and the policy is still drifted.
    assert gateway.get(ctr, name="conf-drift")["spec"]["mlPolicy"]["numNodes"] == 6
    assert RuntimePolicy.objects.get(pk=drifted.pk).sync_state == SyncState.DRIFTED


def test_a_viewer_cannot_open_the_force_confirmation(drifted, client, bob):
    client.force_login(bob)
    assert client.get("/cluster/runtimes/conf-drift/drift/reapply/").status_code == 403
