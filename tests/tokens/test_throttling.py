"""The doors that take a password are rate-limited per client address: 429 with Retry-After."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_per_minute(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"auth": "3/min"}}


def test_the_token_endpoint_answers_429_with_retry_after_past_the_limit(alice, three_per_minute):
    api = APIClient()
    statuses = [api.post("/api/v1/auth/token/", {"username": "alice", "password": "wrong"}, format="json").status_code
                for _ in range(4)]
    right = api.post("/api/v1/auth/token/", {"username": "alice", "password": "alice-password-1"}, format="json")

    assert statuses == [400, 400, 400, 429]
    assert right.status_code == 429
    assert 1 <= int(right["Retry-After"]) <= 61
    assert right.json()["error"]["status"] == 429


def test_another_address_is_not_held_back(alice, three_per_minute):
    for _ in range(4):
        APIClient().post("/api/v1/auth/token/", {"username": "alice", "password": "wrong"}, format="json",
                         REMOTE_ADDR="10.0.0.1")

    response = APIClient().post("/api/v1/auth/token/", {"username": "alice", "password": "alice-password-1"},
                                format="json", REMOTE_ADDR="10.0.0.2")

    assert response.status_code == 200


def test_the_login_page_answers_429_without_checking_the_password(client, alice, three_per_minute):
    statuses = [client.post("/login/", {"username": "alice", "password": "wrong"}).status_code for _ in range(3)]
    blocked = client.post("/login/", {"username": "alice", "password": "alice-password-1"})

    assert statuses == [200, 200, 200]
    assert blocked.status_code == 429
    assert int(blocked["Retry-After"]) >= 1
    assert "Too many login attempts" in blocked.content.decode()
    assert "_auth_user_id" not in client.session  # the right password did not log in while throttled


def test_creating_tokens_counts_against_the_limit_but_listing_does_not(bob, three_per_minute):
    from trainer_portal.tokens.services import token_issue

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=bob, name='x').key}")
    lists = [api.get("/api/v1/auth/tokens/").status_code for _ in range(5)]
    creates = [api.post("/api/v1/auth/tokens/", {"name": "n"}, format="json").status_code for _ in range(4)]

    assert lists == [200] * 5
    assert creates == [201, 201, 201, 429]
