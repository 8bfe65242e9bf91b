"""In a real browser: the preview follows the user's typing (htmx, debounced), shows field errors in place, and
`static/js/preview.js` mounts the panel into a policy page's `#preview-panel` section."""

from __future__ import annotations

import re

import pytest

from runtimes.services import policies as policy_services
from tests.browser.conftest import _portal_roles, browser, chromium_executable, page  # noqa: F401 — fixtures
from tests.preview.test_service import level3

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SMALL = "zones=2&blocksPerZone=2&racksPerBlock=2&nodesPerRack=4&gpusPerNode=8"


@pytest.fixture
def viewer_page(page, django_user_model):  # noqa: F811 — `page` is the imported fixture
    """Return a page logged in as bob (viewer), with a level-3 (rack) policy saved."""
    from django.contrib.auth.models import Group

    bob = django_user_model.objects.create_user("bob", password="bob-password-1")
    bob.groups.add(Group.objects.get(name="viewer"))
    policy_services.policy_create(manifest=level3(), author=bob, message="first", source="api")
    page.goto("/login/")
    page.fill("#id_username", "bob")
    page.fill("#id_password", "bob-password-1")
    page.click("form button[type=submit]")
    page.wait_for_url(re.compile(r"/runtimes/$"))
    return page


def test_it_updates_the_verdict_as_the_user_types(viewer_page):
    viewer_page.goto(f"/preview/?policy=torch-l3&numNodes=4&{SMALL}")
    title = viewer_page.locator("#pv-verdict-title")
    assert title.inner_text() == "Fits"
    viewer_page.evaluate("window.__sameDocument = true")

    viewer_page.fill("#pv-numNodes", "5")

    viewer_page.wait_for_function("document.querySelector('#pv-verdict-title').textContent === 'Does not fit'")
    assert "fits 4 of 5" in viewer_page.locator(".pv-explanation").inner_text()
    assert viewer_page.evaluate("window.__sameDocument") is True  # swapped in place, no page load
    assert "does not fit" in viewer_page.locator("#pv-status").inner_text()


def test_it_shows_a_bad_quantity_next_to_its_field(viewer_page):
    viewer_page.goto(f"/preview/?policy=torch-l3&numNodes=4&{SMALL}")

    viewer_page.fill("#pv-gpu", "4Gi")

    viewer_page.wait_for_function("document.querySelector('#pv-err-gpu').textContent.includes('whole units')")
    viewer_page.fill("#pv-gpu", "4")
    viewer_page.wait_for_function("document.querySelector('#pv-err-gpu').textContent === ''")
    assert viewer_page.locator("#pv-verdict-title").inner_text() == "Fits"


def test_the_script_mounts_the_panel_into_the_policy_page(viewer_page):
    viewer_page.goto("/runtimes/torch-l3/")
    if not viewer_page.locator("script[src$='js/preview.js']").count():
        # Until the policy page includes preview/_panel_loader.html, load the script the way the loader does.
        viewer_page.add_script_tag(url="/static/js/preview.js")

    viewer_page.wait_for_selector("#preview-panel #pv-verdict-title")
    viewer_page.fill("#preview-panel #pv-numNodes", "64")

    viewer_page.wait_for_function("document.querySelector('#pv-verdict-title').textContent === 'Does not fit'")
    assert viewer_page.locator("#preview-panel input[name=policy]").get_attribute("value") == "torch-l3"
