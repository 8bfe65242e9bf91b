"""``/api/v1/users/``: platform admins list, create and change users; errors name the field; 409 for conflicts."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from trainer_portal import roles

pytestmark = pytest.mark.django_db

GOOD_PASSWORD = "a-long-and-rare-passphrase-7"


@pytest.fixture
def api(alice):
    client = APIClient()
    client.force_authenticate(alice)
    return client


def _fields(response) -> list[str]:
    return [f["path"] for f in response.json()["error"]["fields"]]


def test_an_admin_creates_lists_and_changes_a_user(api):
    created = api.post("/api/v1/users/", {"username": "erin", "password": GOOD_PASSWORD,
                                          "role": roles.DATA_SCIENTIST, "groups": ["team-a-ml"]}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["role"] == roles.DATA_SCIENTIST and body["groups"] == ["team-a-ml"] and body["isActive"]
    assert "password" not in body
    assert "erin" in [u["username"] for u in api.get("/api/v1/users/").json()]

    changed = api.patch(f"/api/v1/users/{body['id']}/", {"role": roles.VIEWER, "groups": [], "isActive": False},
                        format="json")
    assert changed.status_code == 200
    assert changed.json()["role"] == roles.VIEWER and changed.json()["groups"] == []
    assert not changed.json()["isActive"]


@pytest.mark.parametrize("body, field", [
    ({"username": "x y", "password": GOOD_PASSWORD, "role": "viewer"}, "username"),
    ({"username": "erin", "password": "short", "role": "viewer"}, "password"),
    ({"username": "erin", "password": GOOD_PASSWORD, "role": ["viewer"]}, "role"),
    ({"username": "erin", "password": GOOD_PASSWORD, "role": "viewer", "groups": "team"}, "groups"),
    ({"username": "erin", "password": GOOD_PASSWORD, "role": "viewer", "groups": [1]}, "groups"),
    ({"username": "erin", "password": GOOD_PASSWORD, "role": "viewer", "groups": ["platform-admin"]}, "groups"),
    ({"username": None, "password": GOOD_PASSWORD, "role": "viewer"}, "username"),
])
def test_bad_input_is_a_400_naming_the_field(api, body, field):
    response = api.post("/api/v1/users/", body, format="json")

    assert response.status_code == 400, response.content
    assert _fields(response) == [field]
    assert not get_user_model().objects.filter(username="erin").exists()


def test_a_body_that_is_not_an_object_is_a_400(api):
    assert api.post("/api/v1/users/", [1, 2], format="json").status_code == 400


def test_a_taken_username_is_a_409(api, bob):
    response = api.post("/api/v1/users/", {"username": "Bob", "password": GOOD_PASSWORD, "role": "viewer"},
                        format="json")

    assert response.status_code == 409 and _fields(response) == ["username"]


def test_the_last_platform_admin_cannot_be_disabled_or_demoted(api, alice):
    disabled = api.patch(f"/api/v1/users/{alice.pk}/", {"isActive": False}, format="json")
    demoted = api.patch(f"/api/v1/users/{alice.pk}/", {"role": roles.NONE}, format="json")

    assert disabled.status_code == 409 and _fields(disabled) == ["isActive"]
    assert demoted.status_code == 409 and _fields(demoted) == ["role"]


def test_a_refused_password_undoes_the_rest_of_the_patch(api, bob):
    response = api.patch(f"/api/v1/users/{bob.pk}/", {"role": roles.NONE, "password": "123"}, format="json")

    assert response.status_code == 400 and _fields(response) == ["password"]
    assert roles.role_of(get_user_model().objects.get(pk=bob.pk)) == roles.VIEWER


def test_unknown_fields_and_users(api, bob):
    assert api.patch(f"/api/v1/users/{bob.pk}/", {"superuser": True}, format="json").status_code == 400
    assert api.get("/api/v1/users/999999/").status_code == 404
    assert api.patch("/api/v1/users/999999/", {"role": "viewer"}, format="json").status_code == 404


@pytest.mark.parametrize("persona", ["bob", "charlie"])
def test_only_platform_admins_may_use_it(persona, request):
    client = APIClient()
    client.force_authenticate(request.getfixturevalue(persona))

    assert client.get("/api/v1/users/").status_code == 403
    assert client.post("/api/v1/users/", {"username": "erin", "password": GOOD_PASSWORD, "role": "platform-admin"},
                       format="json").status_code == 403
    assert APIClient().get("/api/v1/users/").status_code == 401
