"""In a real browser: a job over its queue's quota reads Inadmissible with the numbers, and a job whose initializers
run reads the startup-order wait — never "fits now". States written through the tracker's own service
(``jobs.services.apply_records``, as the cluster watcher writes them), queue facts through the ``jobfacts`` seam as
the queues app gives them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jobs import services
from tests.browser.conftest import _portal_roles, browser, chromium_executable, page  # noqa: F401 — fixtures
from tests.browser.test_jobs import _heartbeat, _login, _record
from trainer_portal import jobfacts

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KUEUE_TEXT = ("couldn't assign flavors to pod set node: insufficient quota for nvidia.com/gpu in flavor "
              "default-flavor, request > maximum capacity (24 > 16)")
STARTUP_TEXT = "node waits for dataset-initializer and model-initializer to complete; 1 of 2 done"


@pytest.fixture
def queued_jobs(settings):
    settings.TRAINER_PORTAL_TRACKING_STALE_SECONDS = 600
    big = replace(_record("team-a", "too-big-for-queue", "inadmissible", reason="ExceedsMaxQuota",
                          message=KUEUE_TEXT, num_nodes=3), queue_name="user-queue", pod_groups=[], workload={})
    init = replace(_record("team-a", "llm-init", "waiting-for-startup", reason="WaitingForStartupOrder",
                           message=f"{STARTUP_TEXT} (2 PodGroups scheduled; 2 / 2 member pods bound)"),
                   pods=[{"name": f"llm-init-{step}-0-0", "phase": "Running", "node": f"cpu-{i}", "podGroup": ""}
                         for i, step in enumerate(("dataset-initializer", "model-initializer"))])
    services.apply_records([big, init])
    _heartbeat()

    def queues(refs):
        return {ref: jobfacts.QueueFacts("user-queue", "cq-team-a", None, "", None, "unknown",
                                         (jobfacts.QuotaLine("nvidia.com/gpu", "default-flavor", 24, 16, 0, 0),))
                for ref in refs if ref.name == "too-big-for-queue"}

    jobfacts.register_queue_provider("browser-test", queues)
    yield
    jobfacts._queue_providers.pop("browser-test", None)


def test_over_quota_is_inadmissible_with_the_numbers_and_initializers_are_a_startup_wait(
        page, django_user_model, queued_jobs):  # noqa: F811
    _login(page, django_user_model, "dana", "data-scientist", "team-a-ml")
    page.goto("/jobs/")

    row = page.locator("#job-uid-team-a-too-big-for-queue")
    assert row.locator(".jobs-state").inner_text() == "Inadmissible"
    assert row.locator(".jobs-reason__line").inner_text() == "exceeds the queue's quota"
    startup_row = page.locator("#job-uid-team-a-llm-init")
    assert startup_row.locator(".jobs-state").inner_text() == "Waiting for startup order"
    assert "node waits for startup order (1 of 2 done)" in startup_row.locator(".jobs-reason__line").inner_text()

    page.goto("/jobs/team-a/too-big-for-queue/")
    card = page.locator(".jobs-reason-card").inner_text()
    assert "Cannot be admitted in cq-team-a as configured: needs 24 GPUs, the queue holds at most 16 (16 nominal, " \
           "nothing borrowable from the cohort)" in card, card
    assert "request > maximum capacity (24 > 16)" in card
    assert "Position unknown" in card and "fits" not in card.replace("fits on", "")

    page.goto("/jobs/team-a/llm-init/")
    card = page.locator(".jobs-reason-card").inner_text()
    assert STARTUP_TEXT in card, card
    assert "capacity is not why this job waits" in card.lower() and "fits on the cluster now" not in card
