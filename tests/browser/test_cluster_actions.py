"""An admin applies policies in bulk after reviewing them, and re-applies a drifted one after seeing what it
overrides; both in the browser against the sandbox cluster (Celery runs the sync inline)."""

from __future__ import annotations

import re

import pytest

from runtimes.choices import SyncState
from runtimes.models import RuntimePolicy
from runtimes.services import sync
from tests.sync.conftest import eager_celery, runtime_manifest  # noqa: F401  (fixture)
from tests.sync.test_confirmations import initializer_in_trainer_gang
from trainer_portal import kube
from trainer_portal.kube.client import build_gateway
from trainer_portal.kube.config import KubeSettings

from .test_policy_authoring import keep_screenshot, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def policies(cluster, alice):
    from runtimes.services.policies import policy_create

    for manifest in (runtime_manifest("bulk-a"), runtime_manifest("bulk-b"), initializer_in_trainer_gang("bulk-risky")):
        policy_create(manifest=manifest, author=alice, message="first")


def test_bulk_apply_confirms_the_policies_and_reports_each(page, alice, policies, eager_celery, tmp_path):  # noqa: F811
    from playwright.sync_api import expect

    log_in(page, "alice", "alice-password-1")
    page.goto("/cluster/")
    page.click("text=Apply all policies…")
    page.wait_for_url(re.compile(r"/cluster/sync/$"))
    expect(page.locator("#bulk-callouts")).to_contain_text("3 drafts")
    expect(page.locator("#bulk-callouts")).to_contain_text("1 policy has deadlock warnings")
    risky = page.locator("tr[data-policy=bulk-risky]")
    expect(risky).to_contain_text("deadlock")
    risky.locator("input[name=names]").uncheck()
    page.screenshot(path=str(tmp_path / "apply-all.png"), full_page=True)
    keep_screenshot(tmp_path / "apply-all.png", "apply-all.png")
    page.click("text=Apply the ticked policies")

    page.wait_for_url(re.compile(r"/cluster/jobs/[0-9a-f]+/$"))
    results = page.locator("#sync-results")
    expect(results.locator("tr[data-policy=bulk-a]")).to_have_attribute("data-status", "succeeded")
    expect(results.locator("tr[data-policy=bulk-b]")).to_contain_text("applied")
    expect(results.locator("tr[data-policy=bulk-risky]")).to_have_count(0)
    results.locator("tr[data-policy=bulk-a] a", has_text="bulk-a").click()
    page.wait_for_url(re.compile(r"/runtimes/bulk-a/$"))
    assert RuntimePolicy.objects.get(name="bulk-risky").sync_state == SyncState.DRAFT
    assert RuntimePolicy.objects.get(name="bulk-a").sync_state == SyncState.SYNCED


def test_force_reapply_shows_the_diff_and_the_overridden_manager_first(
    page, alice, cluster, gateway, eager_celery, tmp_path  # noqa: F811  (the fixture)
):
    from playwright.sync_api import expect

    from runtimes.services.policies import policy_create

    policy = policy_create(manifest=runtime_manifest("forced"), author=alice, message="first")
    sync.policy_sync(policy_id=policy.pk, revision=sync.policy_sync_request(policy=policy))
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    other = build_gateway(KubeSettings(config_path=cluster.kubeconfig, field_manager="kubectl-edit"))
    other.apply(ctr, body=runtime_manifest("forced", num_nodes=6), force=True)

    log_in(page, "alice", "alice-password-1")
    page.goto("/cluster/runtimes/forced/drift/")
    page.click("button[value=check]")  # opening the page checks nothing; the check is a POST
    page.click("text=Re-apply ours (force)…")
    page.wait_for_url(re.compile(r"/drift/reapply/$"))
    expect(page.locator("#reapply-managers")).to_contain_text("kubectl-edit")
    expect(page.locator("#reapply-changes")).to_contain_text("spec.mlPolicy.numNodes")
    expect(page.locator("#reapply-changes .diff")).to_contain_text("numNodes: 6")
    page.screenshot(path=str(tmp_path / "reapply.png"), full_page=True)
    keep_screenshot(tmp_path / "reapply.png", "reapply.png")
    assert gateway.get(ctr, name="forced")["spec"]["mlPolicy"]["numNodes"] == 6

    page.click("button[value=reapply]")
    page.wait_for_url(re.compile(r"/cluster/runtimes/forced/drift/$"))
    expect(page.locator(".messages")).to_contain_text("Re-applying")
    assert gateway.get(ctr, name="forced")["spec"]["mlPolicy"]["numNodes"] == 2
