"""In a real browser at phone width: a data scientist adds a webhook channel, subscribes to her namespace, her job
is admitted, and the receiver gets the notification while the channel's log shows it delivered; a job in a
namespace she may not see sends nothing."""

from __future__ import annotations

import pytest

from notifications import services
from tests.notifications.conftest import dora, job, move, receiver  # noqa: F401  (fixtures)
from tests.sync.conftest import eager_celery  # noqa: F401  (fixture)

from .conftest import _portal_roles, browser, chromium_executable, page  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_subscribing_then_receiving_a_notification_for_an_admitted_job(page, dora, receiver, eager_celery):  # noqa: F811
    from playwright.sync_api import expect

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/login/?next=/notifications/")
    page.fill("#id_username", "dora")
    page.fill("#id_password", "dora-password-1")
    page.click("form button[type=submit]")
    page.wait_for_url("**/notifications/")
    page.fill("#id_name", "my hook")
    page.select_option("#id_kind", "webhook")
    page.fill("#id_target", receiver.url + "/hook")
    page.click("text=Add channel")
    expect(page.locator("main")).to_contain_text("signing secret")

    page.select_option("#id_scope", "namespace")
    page.fill("#id_value", "team-a")
    page.check("input[name=kinds][value=admitted]")
    page.click("button:has-text('Subscribe')")
    expect(page.locator("#subs-h + ul")).to_contain_text("team-a")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    move(job("team-b", "hidden"), "admitted")
    move(job("team-a", "bert"), "admitted")
    services.outbox_scan()  # what the beat tick runs
    services.deliveries_send_due()

    assert [d["event"]["subject"] for d in receiver.documents()] == ["team-a/bert"]
    page.click("text=my hook")
    entry = page.locator("li.delivery").first
    expect(entry).to_have_attribute("data-state", "delivered")
    expect(entry).to_contain_text("team-a/bert")
