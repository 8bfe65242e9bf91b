"""In a real browser: a waiting job's estimated start shows its range and what it rests on; a what-if started from
a policy's page shows the current and the candidate setting side by side."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from forecast import services
from tests.browser.conftest import _portal_roles, browser, chromium_executable, page  # noqa: F401 — fixtures
from tests.browser.test_jobs import _login
from tests.forecast.conftest import make_queue
from tests.jobs.factories import tracked_job
from trainer_portal.cluster.models import Cluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_waiting_job_shows_its_likely_start_range_and_basis(page, django_user_model):  # noqa: F811
    make_queue()
    services.compute_estimates(Cluster.objects.get(is_default=True))
    _login(page, django_user_model, "alice", "platform-admin")

    page.goto("/forecast/")

    row = page.locator('[data-estimate="team-a/waiter"]')
    expect(row.locator("[data-range]")).to_contain_text("likely")
    expect(row.locator("[data-basis]")).to_contain_text("1 running job ends by its history; you are 1st in line")


def test_a_whatif_from_the_policy_page_shows_before_and_after(page, django_user_model):  # noqa: F811
    from runtimes.services import policies
    from tests.runtimes.test_services import level1
    from trainer_portal.celery import app

    make_queue(runtime="torch-gang")
    now = timezone.now()
    for index in range(4):  # four 2-node jobs that arrived together yesterday and queued on the 2 nodes
        tracked_job("team-a", f"past-{index}", state="succeeded", num_nodes=2, runtime="torch-gang",
                    resources_per_node={"nvidia.com/gpu": "8"}, submitted=now - dt.timedelta(hours=20),
                    admitted=now - dt.timedelta(hours=20 - index), finished_at=now - dt.timedelta(hours=19 - index))
    _login(page, django_user_model, "alice", "platform-admin")
    policies.policy_create(manifest=level1("torch-gang"), author=None, message="first")
    saved = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        page.goto("/runtimes/torch-gang/")
        page.get_by_role("link", name="What if…").click()
        expect(page.locator("#id_runtime")).to_have_value("torch-gang")
        page.select_option("#id_level", "rack")
        page.fill("#id_domain", "zone-a")
        page.fill("#id_count", "2")
        page.fill("#id_days", "2")
        page.get_by_role("button", name="Simulate").click()
    finally:
        app.conf.task_always_eager = saved

    result = page.locator("[data-whatif-result]")
    expect(page.locator("[data-status]")).to_have_text("Done")
    waits = result.locator("tr", has_text="Time to admission p95")
    expect(waits.locator("[data-before]")).not_to_have_text("—")
    assert waits.locator("[data-before]").inner_text() != waits.locator("[data-after]").inner_text()
