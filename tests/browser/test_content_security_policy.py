"""In a real browser, under the portal's own Content-Security-Policy: the pages (htmx included) run without a
single violation, the API docs render from self-hosted assets, and nothing is fetched from another site."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from runtimes.domain.manifest import new_runtime
from runtimes.services import policies as services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def admin_page(page, django_user_model):
    from django.contrib.auth.models import Group

    alice = django_user_model.objects.create_user("alice", password="alice-password-1")
    alice.groups.add(Group.objects.get(name="platform-admin"))
    services.policy_create(manifest=new_runtime("csp-demo"), author=alice, message="first", source="api")
    violations: list[str] = []
    foreign: list[str] = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text else None)
    page.on("request", lambda request: foreign.append(request.url)
            if not request.url.startswith(("http://localhost", "http://127.0.0.1", "data:", "blob:")) else None)
    page.goto("/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-password-1")
    page.click("form button[type=submit]")
    page.wait_for_url(re.compile(r"/runtimes/$"))
    return page, violations, foreign


def test_the_pages_and_their_htmx_run_without_a_csp_violation(admin_page):
    page, violations, foreign = admin_page

    for path in ("/runtimes/", "/runtimes/csp-demo/", "/runtimes/csp-demo/edit/", "/runtimes/new/",
                 "/runtimes/import/", "/preview/?policy=csp-demo", "/account/tokens/", "/jobs/", "/jobs/overview/",
                 "/cluster/"):
        page.goto(path)  # waits for "load": scripts ran, so any violation is reported by now
        page.wait_for_timeout(300)  # not "networkidle": the TrainJob pages poll every second
    page.goto("/preview/?policy=csp-demo")
    with page.expect_response(lambda response: "/preview/results/" in response.url):
        page.click("#pv-composite")  # a checkbox re-runs the preview (the trigger needs no eval)
    page.goto("/runtimes/csp-demo/edit/")
    page.fill("#id_yaml", page.input_value("#id_yaml").replace("numNodes: 1", "numNodes: 2"))
    page.wait_for_load_state("networkidle")  # the editor's htmx round trips

    assert violations == []
    assert foreign == []


def test_the_swagger_docs_render_offline(admin_page):
    page, violations, foreign = admin_page

    page.goto("/api/docs/")

    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Trainer Portal API")
    assert violations == []
    assert foreign == []
