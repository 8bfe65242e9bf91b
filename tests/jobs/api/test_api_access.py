"""Who may use the API: every portal role gets a token, and a refusal names what the role may not do."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_a_data_scientist_gets_a_token_that_reads_their_trainjobs(dana):
    api = APIClient()

    response = api.post("/api/v1/auth/token/", {"username": "dana", "password": "dana-password-1"}, format="json")

    assert response.status_code == 200, response.content
    api.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    assert api.get("/api/v1/trainjobs/").status_code == 200


def test_a_data_scientist_reading_policies_is_told_the_role_may_not_see_them(dana):
    api = APIClient()
    api.force_authenticate(dana)

    response = api.get("/api/v1/runtimes/")

    assert response.status_code == 403
    message = response.json()["error"]["message"]
    assert "may not see policies" in message and "change" not in message
