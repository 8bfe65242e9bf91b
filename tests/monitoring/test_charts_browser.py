"""In a real browser at 390 px: the overview's and the policy page's charts fit the screen and keep their text
readable, under the strict CSP (no violation reported)."""

from __future__ import annotations

import datetime as dt
import os

import pytest
from django.utils import timezone

from runtimes.domain.manifest import new_runtime
from runtimes.services.policies import policy_create
from tests.browser.conftest import _portal_roles, browser, chromium_executable, page  # noqa: F401 — fixtures
from tests.browser.test_jobs import _heartbeat, _login
from tests.browser.test_jobs_layout import NARROW, _fits
from tests.jobs.factories import tracked_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_charts_fit_390_px_and_stay_readable(page, django_user_model):  # noqa: F811
    now = timezone.now()
    for i, (runtime, wait) in enumerate([("torch-gang", 40), ("torch-gang", 900), ("deepspeed-zero3-long", 4000)]):
        tracked_job("team-a", f"job-{i}", state="running", runtime=runtime,
                    submitted=now - dt.timedelta(hours=i + 1, seconds=wait), admitted=now - dt.timedelta(hours=i + 1))
    tracked_job("team-a", "waiting", state="queued", runtime="torch-gang")
    _heartbeat()
    _login(page, django_user_model, "alice", "platform-admin")
    policy_create(manifest=new_runtime("torch-gang"), author=django_user_model.objects.get(username="alice"),
                  message="first")
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.set_viewport_size({"width": NARROW, "height": 900})

    for url in ("/jobs/overview/", "/runtimes/torch-gang/"):
        page.goto(url)
        page.wait_for_selector("svg.chart--lines")
        if os.environ.get("TRAINER_PORTAL_SCREENSHOTS"):
            page.screenshot(path=f"{os.environ['TRAINER_PORTAL_SCREENSHOTS']}/{url.strip('/').replace('/', '-')}.png",
                            full_page=True)
        # The overview fits the phone; on the policy page the charts fit the card that holds them (the page's own
        # width is its manifest's business).
        if url.startswith("/jobs/"):
            _fits(page)
        card = page.eval_on_selector("svg.chart", "e => e.closest('section').getBoundingClientRect().right")
        charts = page.eval_on_selector_all("svg.chart", "els => els.map(e => [e.getBoundingClientRect().left, "
                                           "e.getBoundingClientRect().right])")
        assert len(charts) == 2 and all(0 <= left < right <= min(card, NARROW if url.startswith("/jobs/") else card)
                                        for left, right in charts), (url, charts, card)
        # The legend's text is drawn at ≥ 9 px on a phone.
        size = page.eval_on_selector("svg.chart--lines text", "t => t.getBoundingClientRect().height")
        assert size >= 9, (url, size)
    assert violations == []
