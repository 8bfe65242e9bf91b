"""API tokens: they expire, their owner lists and revokes them (page and API), and only a hash is stored."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from trainer_portal.tokens.models import ApiToken
from trainer_portal.tokens.services import token_issue

pytestmark = pytest.mark.django_db


def _api(key: str | None = None) -> APIClient:
    api = APIClient()
    if key:
        api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api


def test_a_token_works_until_it_expires_then_answers_401_saying_so(bob):
    fresh = token_issue(user=bob, name="ci")
    stale = token_issue(user=bob, name="old", now=timezone.now() - timedelta(days=31))

    assert _api(fresh.key).get("/api/v1/runtimes/").status_code == 200
    response = _api(stale.key).get("/api/v1/runtimes/")
    assert response.status_code == 401
    assert "expired" in response.json()["error"]["message"]
    assert response["WWW-Authenticate"] == "Token"


def test_the_password_exchange_issues_a_token_with_the_configured_lifetime(bob, settings):
    settings.API_TOKEN_LIFETIME_DAYS = 7

    response = _api().post("/api/v1/auth/token/", {"username": "bob", "password": "bob-password-1"}, format="json")

    assert response.status_code == 200
    body = response.json()
    token = ApiToken.objects.get(pk=body["id"])
    assert abs(token.expires_at - (timezone.now() + timedelta(days=7))) < timedelta(minutes=1)
    assert body["username"] == "bob" and body["token"].startswith(body["prefix"])


def test_only_a_hash_of_the_key_is_stored(bob):
    issued = token_issue(user=bob, name="ci")

    row = ApiToken.objects.values().get(pk=issued.token.pk)
    assert issued.key not in str(row)
    assert len(row["key_hash"]) == 64


def test_the_owner_lists_creates_and_revokes_tokens_through_the_api(alice, bob):
    own = token_issue(user=bob, name="laptop")
    token_issue(user=alice, name="alice's")
    api = _api(own.key)

    listed = api.get("/api/v1/auth/tokens/").json()
    created = api.post("/api/v1/auth/tokens/", {"name": "pipeline", "days": 3}, format="json")
    revoked = api.delete(f"/api/v1/auth/tokens/{created.json()['id']}/")

    assert [t["name"] for t in listed] == ["laptop"]
    assert set(listed[0]) == {"id", "name", "prefix", "createdAt", "expiresAt", "expired"}
    assert created.status_code == 201 and created.json()["token"].startswith("tp_")
    assert revoked.status_code == 204
    assert _api(created.json()["token"]).get("/api/v1/runtimes/").status_code == 401
    assert [t["name"] for t in api.get("/api/v1/auth/tokens/").json()] == ["laptop"]


def test_nobody_revokes_someone_elses_token(alice, bob):
    theirs = token_issue(user=alice, name="alice's")

    response = _api(token_issue(user=bob, name="mine").key).delete(f"/api/v1/auth/tokens/{theirs.token.pk}/")

    assert response.status_code == 404
    assert ApiToken.objects.filter(pk=theirs.token.pk).exists()


def test_a_too_long_lifetime_is_refused_naming_the_field(bob, settings):
    settings.API_TOKEN_MAX_DAYS = 90

    response = _api(token_issue(user=bob, name="x").key).post("/api/v1/auth/tokens/", {"name": "y", "days": 91},
                                                             format="json")

    assert response.status_code == 400
    assert response.json()["error"]["fields"][0]["path"] == "days"


def test_the_tokens_page_shows_a_new_key_once_and_revokes(client, bob):
    client.force_login(bob)

    created = client.post("/account/tokens/", {"name": "notebook", "days": 10})
    key = re.search(r'<code class="token-key">([^<]+)</code>', created.content.decode()).group(1)
    works = _api(key).get("/api/v1/runtimes/").status_code
    page = client.get("/account/tokens/")
    token = ApiToken.objects.get(user=bob)
    revoked = client.post(f"/account/tokens/{token.pk}/revoke/")

    assert created.status_code == 201
    assert works == 200
    assert key not in page.content.decode() and "notebook" in page.content.decode()
    assert revoked.status_code == 302
    assert not ApiToken.objects.filter(pk=token.pk).exists()
    assert _api(key).get("/api/v1/runtimes/").status_code == 401


def test_the_tokens_page_refuses_an_invalid_form_and_other_peoples_tokens(client, alice, bob):
    theirs = token_issue(user=alice, name="alice's")
    client.force_login(bob)

    invalid = client.post("/account/tokens/", {"name": "", "days": 0})
    foreign = client.post(f"/account/tokens/{theirs.token.pk}/revoke/")

    assert invalid.status_code == 400
    assert not ApiToken.objects.filter(user=bob).exists()
    assert foreign.status_code == 404
    assert ApiToken.objects.filter(pk=theirs.token.pk).exists()


def test_a_get_of_the_tokens_page_changes_nothing(client, bob):
    token_issue(user=bob, name="a")
    client.force_login(bob)
    before = list(ApiToken.objects.values())

    client.get("/account/tokens/")

    assert list(ApiToken.objects.values()) == before
