"""Every role that may mint a token may also list and revoke its own tokens (page and API): the data scientist
included; a user without a role may do none of it."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.jobs.conftest import dana  # noqa: F401 (fixture)
from trainer_portal.tokens.models import ApiToken
from trainer_portal.tokens.services import token_issue

pytestmark = pytest.mark.django_db


def test_a_data_scientist_lists_and_revokes_their_tokens_on_the_page(client, dana):  # noqa: F811
    client.force_login(dana)

    created = client.post("/account/tokens/", {"name": "notebook", "days": 7})
    assert created.status_code == 201
    token = ApiToken.objects.get(user=dana)
    assert b"notebook" in client.get("/account/tokens/").content

    revoked = client.post(f"/account/tokens/{token.pk}/revoke/")
    assert revoked.status_code == 302
    assert not ApiToken.objects.filter(pk=token.pk).exists()


def test_a_data_scientist_lists_and_revokes_their_tokens_over_the_api(dana, bob):  # noqa: F811
    exchanged = APIClient().post("/api/v1/auth/token/", {"username": "dana", "password": "dana-password-1"},
                                 format="json")
    assert exchanged.status_code == 200
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {exchanged.json()['token']}")
    others = token_issue(user=bob, name="bob's").token

    listed = api.get("/api/v1/auth/tokens/")
    assert listed.status_code == 200
    assert [t["name"] for t in listed.json()] == ["Password exchange"]
    assert api.post("/api/v1/auth/tokens/", {"name": "ci"}, format="json").status_code == 201
    assert api.delete(f"/api/v1/auth/tokens/{others.pk}/").status_code == 404  # not hers
    own = ApiToken.objects.get(user=dana, name="ci")
    assert api.delete(f"/api/v1/auth/tokens/{own.pk}/").status_code == 204
    assert ApiToken.objects.filter(pk=others.pk).exists()


def test_the_data_scientist_is_shown_the_tokens_link_and_it_opens(client, dana):  # noqa: F811
    client.force_login(dana)

    page = client.get("/jobs/")

    assert b'href="/account/tokens/"' in page.content
    assert client.get("/account/tokens/").status_code == 200


def test_a_user_without_a_role_is_not_shown_tokens_and_may_not_use_them(client, charlie):
    client.force_login(charlie)
    token = token_issue(user=charlie, name="old").token  # minted before the role was taken away

    assert b'href="/account/tokens/"' not in client.get("/").content
    assert client.get("/account/tokens/").status_code == 403
    assert client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 403
