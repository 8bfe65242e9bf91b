"""Accounts: login/logout pages, API tokens, role checks shared by every interface."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_it_serves_the_login_page_to_anonymous_users(client):
    response = client.get("/login/")
    assert response.status_code == 200
    assert b'name="password"' in response.content


def test_it_sends_anonymous_users_from_home_to_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_it_issues_a_token_that_authenticates_api_calls(alice):
    api = APIClient()
    response = api.post("/api/v1/auth/token/", {"username": "alice", "password": "alice-password-1"}, format="json")
    assert response.status_code == 200
    token = response.json()["token"]
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert api.get("/api/v1/runtimes/").status_code == 200


def test_it_issues_a_token_for_a_form_encoded_post(alice):
    # What `curl -d username=… -d password=…` sends.
    response = APIClient().post("/api/v1/auth/token/", "username=alice&password=alice-password-1",
                                content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200, response.content
    assert response.json()["token"]


def test_it_issues_a_new_expiring_token_on_each_exchange(bob):
    api = APIClient()
    first = api.post("/api/v1/auth/token/", {"username": "bob", "password": "bob-password-1"}, format="json")
    second = api.post("/api/v1/auth/token/", {"username": "bob", "password": "bob-password-1"}, format="json")
    assert first.json()["token"] != second.json()["token"]
    assert first.json()["expiresAt"]


def test_it_refuses_a_token_to_users_without_a_role(charlie):
    response = APIClient().post(
        "/api/v1/auth/token/", {"username": "charlie", "password": "charlie-password-1"}, format="json"
    )
    assert response.status_code == 403
    assert "portal role" in response.json()["error"]["message"]


def test_it_rejects_wrong_credentials_with_a_structured_error(alice):
    response = APIClient().post("/api/v1/auth/token/", {"username": "alice", "password": "nope"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"


def test_it_rejects_an_unknown_token():
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Token 0000000000000000000000000000000000000000")
    assert api.get("/api/v1/runtimes/").status_code in (401, 403)


@pytest.mark.parametrize("persona", ["alice", "bob"])
def test_it_logs_users_out_with_a_post(client, persona, request):
    request.getfixturevalue(persona)
    client.login(username=persona, password=f"{persona}-password-1")
    response = client.post("/logout/")
    assert response.status_code == 302
    assert client.get("/runtimes/").status_code == 302


def test_the_healthz_probe_needs_no_login(client):
    assert client.get("/healthz").json() == {"status": "ok"}


def test_it_explains_a_403_to_a_user_without_a_role(client, charlie):
    client.login(username="charlie", password="charlie-password-1")
    response = client.get("/runtimes/")
    assert response.status_code == 403
    assert b"viewer" in response.content and b"platform-admin" in response.content
