"""Single sign-on end to end: a real browser, the portal's live server and a real OpenID provider (oidc-provider).

Covers: sign-in with PKCE, IdP groups → portal roles (and IdP groups kept for namespace grants), a user with no
mapped group, RP-initiated logout, and a session whose ID token's trust period ended (silent re-check, then the
provider's session gone).
"""

from __future__ import annotations

import dataclasses
import re
import time

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def sign_in(page, login: str) -> None:
    page.goto("/login/")
    page.get_by_test_id("sso-login").click()
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("any password")
    page.locator("button[type=submit]").click()


def role_shown(page) -> str:
    return page.locator(".role-badge__name").text_content().strip()


def test_sign_in_maps_idp_groups_to_roles_and_keeps_idp_groups(page, sso, live_server, django_user_model):
    sign_in(page, "ada")
    page.wait_for_url(re.compile(r"/runtimes/"))
    assert role_shown(page) == "platform admin"
    user = django_user_model.objects.get(username="ada")
    assert set(user.groups.values_list("name", flat=True)) == {"platform-admin", "ml-platform", "team-a"}
    assert not user.has_usable_password()
    assert user.sso_identity.issuer == sso.issuer and user.sso_identity.subject == "ada"


def test_a_data_scientist_lands_on_their_jobs_with_their_team_group(page, sso, django_user_model):
    sign_in(page, "dora")
    page.wait_for_url(re.compile(r"/jobs/"))
    assert role_shown(page) == "data scientist"
    # The IdP group "team-a" is a Django group: a NamespaceGrant on it gives dora that namespace.
    assert "team-a" in django_user_model.objects.get(username="dora").groups.values_list("name", flat=True)


def test_a_user_with_no_mapped_group_is_told_why_and_not_signed_in(page, sso, django_user_model):
    sign_in(page, "nobody")
    page.wait_for_url(re.compile(r"/login/"))
    message = page.get_by_test_id("sso-error").inner_text()
    assert "marketing" in message and "gives a role" in message
    assert not django_user_model.objects.filter(username="nobody").exists()
    page.goto("/jobs/")
    assert "/login/" in page.url


def test_logout_ends_the_session_at_the_provider_too(page, sso):
    sign_in(page, "vik")
    page.wait_for_url(re.compile(r"/runtimes/"))
    assert role_shown(page) == "viewer"
    page.locator("form[action='/logout/'] button").click()
    # RP-initiated logout: the provider asks to confirm, then sends the browser back to the portal's login page.
    page.wait_for_url(lambda url: url.startswith(sso.issuer))
    page.locator("button[name=logout][value=yes]").click()
    page.wait_for_url(re.compile(r"/login/"))
    page.goto("/runtimes/")
    assert "/login/" in page.url
    # The provider's session is gone too: signing in asks for the login again.
    page.goto("/login/")
    page.get_by_test_id("sso-login").click()
    assert page.locator("input[name=login]").is_visible()


def test_an_expired_session_is_rechecked_silently_then_ends_with_the_provider_session(page, sso, settings):
    settings.TRAINER_PORTAL_SSO = dataclasses.replace(sso, session_seconds=1)
    sign_in(page, "vik")
    page.wait_for_url(re.compile(r"/runtimes/"))
    time.sleep(1.5)
    # The ID token's trust period is over: the page goes through the provider (prompt=none) and comes back.
    with page.expect_request(lambda request: "prompt=none" in request.url):
        page.goto("/jobs/")
    page.wait_for_url(re.compile(r"/jobs/"))
    assert role_shown(page) == "viewer"
    # Without the provider's session (its cookies cleared), the next re-check signs the user out.
    provider_cookies = [c for c in page.context.cookies() if c["domain"] == "127.0.0.1" and c["name"].startswith("_")]
    assert provider_cookies
    page.context.clear_cookies(name=re.compile(r"^_"))
    time.sleep(1.5)
    page.goto("/jobs/")
    page.wait_for_url(re.compile(r"/login/"))
    page.goto("/jobs/")
    assert "/login/" in page.url
