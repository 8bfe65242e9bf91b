"""Single sign-on rules without a browser: claim mapping, configuration checks, account linking, group sync,
break-glass password login, and an unreachable provider (a message, never a 500)."""

from __future__ import annotations

import dataclasses

import pytest
from django.contrib.auth.models import Group

from trainer_portal.sso import config, discovery, mapping, services

SSO = config.SsoSettings(issuer="https://idp.example.com", client_id="portal",
                         admin_groups=frozenset({"ml-platform"}), viewer_groups=frozenset({"observers"}),
                         data_scientist_groups=frozenset({"researchers"}))


@pytest.mark.parametrize(("claims", "roles", "idp"), [
    ({"groups": ["ml-platform", "team-a"]}, {"platform-admin"}, {"ml-platform", "team-a"}),
    ({"groups": "observers"}, {"viewer"}, {"observers"}),
    ({"groups": ["researchers", "observers"]}, {"viewer", "data-scientist"}, {"researchers", "observers"}),
    ({"groups": ["marketing"]}, set(), {"marketing"}),
    ({"groups": None}, set(), set()),
    ({"groups": [1, {"a": 2}, "", "x\x00y", "a" * 151, "ok"]}, set(), {"ok"}),
    # An IdP group named like a portal role never grants it by name.
    ({"groups": ["platform-admin"]}, set(), set()),
    ({}, set(), set()),
])
def test_membership_maps_only_configured_groups(claims, roles, idp):
    result = mapping.membership(claims, SSO)
    assert result.roles == roles
    assert result.idp_groups == idp


def test_a_star_maps_every_signed_in_user():
    sso = dataclasses.replace(SSO, data_scientist_groups=frozenset({"*"}))
    assert mapping.membership({"groups": []}, sso).roles == {"data-scientist"}


def test_username_falls_back_from_the_configured_claim_to_email_then_sub():
    assert mapping.username({"preferred_username": "ada", "email": "a@x", "sub": "1"}, SSO) == "ada"
    assert mapping.username({"preferred_username": " ", "email": "a@x", "sub": "1"}, SSO) == "a@x"
    assert mapping.username({"sub": "1"}, SSO) == "1"


@pytest.mark.parametrize(("environ", "problem"), [
    ({"TRAINER_PORTAL_OIDC_ISSUER": "idp.example.com", "TRAINER_PORTAL_OIDC_CLIENT_ID": "p",
      "TRAINER_PORTAL_OIDC_ADMIN_GROUPS": "a"}, "must be an http(s) URL"),
    ({"TRAINER_PORTAL_OIDC_ISSUER": "https://idp", "TRAINER_PORTAL_OIDC_ADMIN_GROUPS": "a"}, "CLIENT_ID is required"),
    ({"TRAINER_PORTAL_OIDC_ISSUER": "https://idp", "TRAINER_PORTAL_OIDC_CLIENT_ID": "p"}, "map at least one"),
    ({"TRAINER_PORTAL_OIDC_ISSUER": "https://idp", "TRAINER_PORTAL_OIDC_CLIENT_ID": "p",
      "TRAINER_PORTAL_OIDC_ADMIN_GROUPS": "a", "TRAINER_PORTAL_LOCAL_LOGIN": "off"}, "LOCAL_LOGIN must be"),
])
def test_configuration_problems_are_named(environ, problem):
    assert any(problem in text for text in config.load(environ).problems())


def test_sso_is_off_without_an_issuer_and_complete_configuration_has_no_problem():
    assert not config.load({}).enabled and config.load({}).problems() == []
    good = config.load({"TRAINER_PORTAL_OIDC_ISSUER": "https://idp.example.com/", "TRAINER_PORTAL_OIDC_CLIENT_ID": "p",
                        "TRAINER_PORTAL_OIDC_ADMIN_GROUPS": "a, b"})
    assert good.issuer == "https://idp.example.com" and good.admin_groups == {"a", "b"} and good.problems() == []
    assert good.origins() == ["https://idp.example.com"]


@pytest.mark.django_db
def test_a_local_account_is_never_taken_over_by_a_provider_user_of_the_same_name(django_user_model):
    local = django_user_model.objects.create_user("ada", password="local-password-1")
    user = services.sso_user_create(issuer=SSO.issuer, subject="s-1", username="ada", email="", first_name="",
                                    last_name="", membership=mapping.membership({"groups": ["observers"]}, SSO))
    assert user.pk != local.pk and user.username == "ada@idp.example.com"
    assert local.check_password("local-password-1")


@pytest.mark.django_db
def test_a_new_sign_in_replaces_provider_groups_and_keeps_groups_an_admin_added(django_user_model):
    user = services.sso_user_create(issuer=SSO.issuer, subject="s-2", username="dora", email="", first_name="",
                                    last_name="", membership=mapping.membership({"groups": ["researchers",
                                                                                            "team-a"]}, SSO))
    user.groups.add(Group.objects.get_or_create(name="hand-added")[0])
    services.sso_user_update(user=user, email="", first_name="", last_name="",
                             membership=mapping.membership({"groups": ["observers", "team-b"]}, SSO))
    assert set(user.groups.values_list("name", flat=True)) == {"viewer", "observers", "team-b", "hand-added"}


@pytest.mark.django_db
def test_break_glass_mode_keeps_password_login_for_platform_admins_only(client, settings, alice, bob):
    settings.TRAINER_PORTAL_SSO = dataclasses.replace(SSO, local_login="break-glass")
    page = client.get("/login/")
    assert b"Sign in with" in page.content and b'name="password"' not in page.content
    assert b'name="password"' in client.get("/login/?local=1").content
    refused = client.post("/login/?local=1", {"username": "bob", "password": "bob-password-1"})
    assert refused.status_code == 200 and b"break-glass" in refused.content
    admitted = client.post("/login/?local=1", {"username": "alice", "password": "alice-password-1"})
    assert admitted.status_code == 302


@pytest.mark.django_db
def test_an_unreachable_provider_sends_the_user_back_with_the_reason(client, settings):
    discovery.forget()
    settings.TRAINER_PORTAL_SSO = dataclasses.replace(SSO, issuer="http://127.0.0.1:9", timeout_seconds=1)
    response = client.get("/oidc/authenticate/")
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert b"unavailable" in client.get("/login/").content
    # A callback with a forged state is refused as a bad request, not a server error.
    assert client.get("/oidc/callback/?code=x&state=forged").status_code in (302, 400)
