"""A jobs page updates live through its server-sent event stream (trainer_portal/live), not through polls: a real
uvicorn serves the pages and the stream, chromium shows the page, the change is written as the watcher writes it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs import services
from tests.browser.conftest import DEFAULT_TIMEOUT_MS, _portal_roles, browser, chromium_executable  # noqa: F401
from tests.browser.test_jobs import PENDING, _heartbeat
from tests.live.conftest import asgi_server  # noqa: F401 — fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_open_list_page_follows_a_change_over_its_stream(browser, asgi_server, django_user_model,  # noqa: F811
                                                            settings):
    settings.TRAINER_PORTAL_TRACKING_STALE_SECONDS = 600
    services.apply_records([PENDING])
    _heartbeat()
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("vic", password="vic-password-1")
    user.groups.add(Group.objects.get(name="viewer"))
    context = browser.new_context(base_url=asgi_server.url)
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    page = context.new_page()
    page.goto("/login/")
    page.fill("#id_username", "vic")
    page.fill("#id_password", "vic-password-1")
    page.click("form button[type=submit]")
    page.goto("/jobs/")
    expect(page.locator("html")).to_have_attribute("data-live", "stream")
    polls: list[str] = []
    page.on("request", lambda request: polls.append(request.url) if "/jobs/live/" in request.url else None)
    row = page.locator("#job-uid-team-a-llm-a")
    expect(row).to_have_attribute("data-state", "gang-pending")
    services.apply_records([replace(PENDING, state="admitted", reason="Admitted", message="all 3 members bound",
                                    observed_version="2", since=timezone.now())])
    expect(row).to_have_attribute("data-state", "admitted")
    assert polls == []  # the stream brought it: the page's own polls were paused
    context.close()
