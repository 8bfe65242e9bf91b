"""The impact page: it follows the sync live after "Apply", fits a 1440 px screen, shows each referencing
TrainJob's state, and is an impact view (no apply button) for viewers."""

from __future__ import annotations

import re

import pytest

from runtimes.choices import SyncState
from runtimes.models import RuntimePolicy
from runtimes.services import sync
from runtimes.services.policies import policy_create
from tests.ui import l2_l3_manifest
from trainer_portal import kube

from .test_policy_authoring import keep_screenshot, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IMPACT = "/cluster/runtimes/mpi-racks/impact/"


@pytest.fixture
def racks(cluster, gateway, alice):
    policy = policy_create(manifest=l2_l3_manifest(), author=alice, message="first")
    gateway.create(kube.CORE_NAMESPACE, body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    gateway.create(
        gateway.resolve(kube.TRAINJOB),
        body={
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "job-1", "namespace": "team-a"},
            "spec": {"runtimeRef": {"name": "mpi-racks"}},
        },
    )
    # The jobs app's admission tracking, as its informer records the TrainJob (the impact page shows its state).
    from django.utils import timezone

    from jobs.models import TrainJob

    now = timezone.now()
    TrainJob.objects.create(
        uid="uid-job-1",
        namespace="team-a",
        name="job-1",
        runtime_name="mpi-racks",
        state="running",
        since=now,
        submitted_at=now,
    )
    return policy


@pytest.fixture
def broker_without_worker(tmp_path):
    """Point the portal's Celery app at a private filesystem broker that no worker consumes: "Apply" queues the
    sync and the test plays the worker (the web process and the test thread share the app's configuration)."""
    from trainer_portal.celery import app

    saved, saved_url = app.conf.broker_transport_options, app.conf.get("broker_write_url")
    # Whatever broker the environment names (CI: Redis), this test publishes to files it can read.
    app.conf.broker_write_url = "atomicfs://"
    folders = {key: tmp_path / key for key in ("broker", "broker-processed", "broker-control")}
    for folder in folders.values():
        folder.mkdir()
    app.conf.broker_transport_options = {
        **saved,
        "data_folder_in": str(folders["broker"]),
        "data_folder_out": str(folders["broker"]),
        "processed_folder": str(folders["broker-processed"]),
        "control_folder": str(folders["broker-control"]),
    }
    _drop_connections(app)
    yield folders["broker"]
    _drop_connections(app)
    app.conf.broker_transport_options, app.conf.broker_write_url = saved, saved_url


def _drop_connections(app) -> None:
    """Forget the app's pooled broker connections, so the next publish connects with the current options."""
    if app._pool is not None:
        app._pool.force_close_all()
    app._pool = None
    app.amqp._producer_pool = None


def boxes_overlap(a: dict, b: dict) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"])


def test_the_impact_page_follows_the_sync_after_apply_and_fits_the_screen(
    page, alice, racks, broker_without_worker, tmp_path
):
    from playwright.sync_api import expect

    log_in(page, "alice", "alice-password-1")
    page.goto(IMPACT)
    expect(page.locator("h1")).to_have_text("Apply revision 1 of mpi-racks")
    # The TrainJobs card is the jobs app's partial: each referencing TrainJob with its tracked state.
    trainjobs = page.locator("#runtime-jobs")
    expect(trainjobs).to_contain_text("team-a/job-1")
    expect(trainjobs).to_contain_text("Running")
    expect(page.locator("body")).not_to_contain_text("keep running unchanged")

    # Layout: the two PodGroup tables sit side by side without overlapping, and nothing scrolls sideways.
    old, new = page.locator(".impact-groups").all()
    assert not boxes_overlap(old.bounding_box(), new.bounding_box())
    for table in page.locator(".impact-groups table").all():
        box, column = table.bounding_box(), table.locator("xpath=ancestor::div[contains(@class,'impact-groups')]")
        column_box = column.bounding_box()
        assert box["x"] + min(box["width"], column_box["width"]) <= column_box["x"] + column_box["width"] + 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 1440

    # Apply: the panel swaps in as queued and follows the sync without a reload.
    panel = page.locator(f"#sync-panel-{racks.pk}")
    expect(panel).to_contain_text("never applied")
    page.click("text=Apply to cluster")
    expect(panel).to_contain_text("Queued")
    assert any(broker_without_worker.iterdir()), "the sync task was queued for the worker"
    url = page.url
    row = RuntimePolicy.objects.get(pk=racks.pk)
    sync.policy_sync(policy_id=row.pk, revision=row.sync_requested_revision)  # what the worker does
    assert RuntimePolicy.objects.get(pk=racks.pk).sync_state == SyncState.SYNCED
    expect(panel).to_contain_text("Synced")
    expect(panel).to_contain_text("#1")
    expect(panel.locator("text=Apply to cluster…")).to_have_count(0)  # the page itself is where one applies
    assert page.url == url
    page.screenshot(path=str(tmp_path / "impact.png"), full_page=True)
    keep_screenshot(tmp_path / "impact.png", "impact.png")


def test_a_viewer_sees_an_impact_view_without_an_apply_button(page, bob, racks):
    from playwright.sync_api import expect

    log_in(page, "bob", "bob-password-1")
    page.goto(IMPACT)
    expect(page.locator("h1")).to_have_text("Impact of revision 1 of mpi-racks")
    assert re.match(r"Impact of mpi-racks", page.title())
    expect(page.locator("text=Apply to cluster")).to_have_count(0)
    expect(page.locator("#runtime-jobs")).to_contain_text("team-a/job-1")
