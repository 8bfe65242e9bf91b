"""Fixtures for browser tests: a chromium browser (skipped when absent, unless CI requires it) and a page.

Debian's /usr/bin/chromium is used because Playwright's own browser download cannot work offline. Set
TRAINER_PORTAL_REQUIRE_BROWSER=1 (CI does) to turn a missing chromium into a failure instead of a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# One definition of the browser and its flags, shared with the README screenshot script.
from scripts.screenshots import CHROMIUM, CHROMIUM_ARGS

DEFAULT_TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def chromium_executable() -> str:
    """Return the chromium path; skip (or fail when TRAINER_PORTAL_REQUIRE_BROWSER=1) when it is missing."""
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} not found: install Debian chromium (make system-deps) to run browser tests"
        if os.environ.get("TRAINER_PORTAL_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium_executable):
    """Yield a headless chromium for the module's tests."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an asyncio loop running in this thread; Django then refuses ORM calls from the
    # test body ("async context") although they are plain synchronous calls. Allow them while the browser lives.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            launched = playwright.chromium.launch(executable_path=chromium_executable, args=CHROMIUM_ARGS)
            yield launched
            launched.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser, live_server):
    """Yield a fresh page (own cookies) whose relative URLs go to the live server."""
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1440, "height": 900})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    new_page = context.new_page()
    yield new_page
    context.close()


@pytest.fixture(autouse=True)
def _portal_roles(transactional_db):
    """Make sure the role groups exist: a transactional test flushes the data the roles migration created.

    `serialized_rollback` cannot restore it here: while Playwright's loop runs, Django sees a different (async
    context) connection object, which lacks the serialized contents, so the restore is silently skipped.
    """
    from django.contrib.auth.models import Group

    from trainer_portal.roles import ALL_ROLES

    for name in ALL_ROLES:
        Group.objects.get_or_create(name=name)
