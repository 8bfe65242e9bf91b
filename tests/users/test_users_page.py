"""The Users page: platform admins create users, change role, groups and state, reset passwords; nobody else may;
bad input is a 4xx naming the field; the last active platform admin cannot be demoted or disabled."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client

from trainer_portal import roles
from trainer_portal.users.errors import UserError
from trainer_portal.users.services import user_create, user_update

pytestmark = pytest.mark.django_db

GOOD_PASSWORD = "a-long-and-rare-passphrase-7"


@pytest.fixture
def admin_client(client, alice):
    client.force_login(alice)
    return client


def _create(client, **overrides):
    data = {"username": "erin", "password": GOOD_PASSWORD, "role": roles.DATA_SCIENTIST, "groups": "team-a-ml"}
    data.update(overrides)
    return client.post("/users/", data)


def test_an_admin_creates_a_data_scientist_who_can_then_sign_in_and_see_jobs(admin_client):
    response = _create(admin_client)

    assert response.status_code == 302 and response["Location"] == "/users/"
    erin = get_user_model().objects.get(username="erin")
    assert set(erin.groups.values_list("name", flat=True)) == {roles.DATA_SCIENTIST, "team-a-ml"}
    assert roles.role_of(erin) == roles.DATA_SCIENTIST
    page = admin_client.get("/users/")
    assert b"erin" in page.content and b"team-a-ml" in page.content
    erin_client = Client()
    assert erin_client.login(username="erin", password=GOOD_PASSWORD)
    assert erin_client.get("/jobs/").status_code == 200
    assert erin_client.get("/runtimes/").status_code == 403


def test_the_new_group_can_be_granted_a_namespace_without_django_admin(admin_client):
    _create(admin_client)

    response = admin_client.post("/jobs/grants/", {"group": Group.objects.get(name="team-a-ml").pk,
                                                   "namespace": "team-a"})

    assert response.status_code == 302
    assert b'href="/users/"' in admin_client.get("/jobs/grants/").content
    assert b"/admin/" not in admin_client.get("/jobs/grants/").content


@pytest.mark.parametrize("field, value, status", [
    ("username", "", 400), ("username", "has space", 400), ("username", "x" * 151, 400),
    ("username", "nul\x00", 400), ("password", "", 400), ("password", "password", 400),
    ("password", "erin", 400), ("role", "superuser", 400), ("groups", "viewer", 400),
    ("groups", "bad\x07name", 400),
])
def test_bad_input_is_refused_naming_the_field(admin_client, field, value, status):
    response = _create(admin_client, **{field: value})

    assert response.status_code == status, response.content[:300]
    assert response.context["form"].errors.get(field), response.context["form"].errors
    assert not get_user_model().objects.filter(username="erin").exists()


@pytest.mark.parametrize("username", ["bob", "BOB"])
def test_a_taken_username_is_a_conflict_not_a_500(admin_client, bob, username):
    response = _create(admin_client, username=username)

    assert response.status_code == 409
    assert "exists already" in " ".join(response.context["form"].errors["username"])


def test_an_admin_changes_role_and_groups_and_disables_a_user(admin_client, bob):
    response = admin_client.post(f"/users/{bob.pk}/", {"role": roles.DATA_SCIENTIST, "groups": "team-b-ml, x"})

    assert response.status_code == 302
    bob.refresh_from_db()
    assert set(bob.groups.values_list("name", flat=True)) == {roles.DATA_SCIENTIST, "team-b-ml", "x"}
    assert not bob.is_active  # the checkbox was not ticked
    assert not Client().login(username="bob", password="bob-password-1")

    admin_client.post(f"/users/{bob.pk}/", {"role": roles.VIEWER, "groups": "", "is_active": "on"})
    bob.refresh_from_db()
    assert bob.is_active and set(bob.groups.values_list("name", flat=True)) == {roles.VIEWER}


def test_a_disabled_users_tokens_stop_working(admin_client, bob):
    from rest_framework.test import APIClient

    from trainer_portal.tokens.services import token_issue

    key = token_issue(user=bob, name="ci").key
    admin_client.post(f"/users/{bob.pk}/", {"role": roles.VIEWER, "groups": ""})

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/runtimes/").status_code == 401


@pytest.mark.parametrize("change", [{"role": roles.VIEWER, "is_active": "on"}, {"role": roles.PLATFORM_ADMIN},
                                    {"role": roles.NONE, "is_active": "on"}])
def test_the_last_platform_admin_cannot_demote_or_disable_themselves(admin_client, alice, change):
    response = admin_client.post(f"/users/{alice.pk}/", {"groups": "", **change})

    assert response.status_code == 409
    errors = response.context["form"].errors
    assert "last active platform admin" in str(errors)
    alice.refresh_from_db()
    assert alice.is_active and roles.role_of(alice) == roles.PLATFORM_ADMIN


def test_an_admin_may_step_down_when_another_admin_remains(admin_client, alice, bob):
    bob.groups.set([Group.objects.get(name=roles.PLATFORM_ADMIN)])

    response = admin_client.post(f"/users/{alice.pk}/", {"role": roles.VIEWER, "groups": "", "is_active": "on"})

    assert response.status_code == 302
    assert admin_client.get("/users/").status_code == 403  # alice is a viewer now


def test_a_password_reset_sets_a_validated_password(admin_client, bob):
    assert admin_client.post(f"/users/{bob.pk}/password/", {"password": "123"}).status_code == 400

    response = admin_client.post(f"/users/{bob.pk}/password/", {"password": GOOD_PASSWORD})

    assert response.status_code == 302
    assert Client().login(username="bob", password=GOOD_PASSWORD)


def test_an_admin_resetting_their_own_password_stays_signed_in(admin_client, alice):
    admin_client.post(f"/users/{alice.pk}/password/", {"password": GOOD_PASSWORD})

    assert admin_client.get("/users/").status_code == 200


def test_unknown_users_answer_404(admin_client):
    assert admin_client.get("/users/999999/").status_code == 404
    assert admin_client.post("/users/999999/", {"role": "viewer"}).status_code == 404
    assert admin_client.post("/users/999999/password/", {"password": GOOD_PASSWORD}).status_code == 404


@pytest.mark.parametrize("persona", ["bob", "charlie"])
def test_only_platform_admins_manage_users(client, persona, request, alice):
    client.force_login(request.getfixturevalue(persona))

    assert client.get("/users/").status_code == 403
    assert _create(client).status_code == 403
    assert client.post(f"/users/{alice.pk}/", {"role": roles.NONE}).status_code == 403
    assert client.post(f"/users/{alice.pk}/password/", {"password": GOOD_PASSWORD}).status_code == 403
    assert not get_user_model().objects.filter(username="erin").exists()


def test_the_forms_need_the_csrf_token(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    assert _create(client).status_code == 403
    assert not get_user_model().objects.filter(username="erin").exists()


def test_a_get_changes_nothing(admin_client, bob):
    admin_client.get(f"/users/{bob.pk}/", {"role": roles.NONE, "is_active": ""})
    admin_client.get("/users/", {"username": "erin", "password": GOOD_PASSWORD, "role": roles.VIEWER})

    bob.refresh_from_db()
    assert bob.is_active and roles.role_of(bob) == roles.VIEWER
    assert not get_user_model().objects.filter(username="erin").exists()


def test_a_superusers_role_is_not_changed_silently(alice, django_user_model):
    root = django_user_model.objects.create_superuser("root", password=GOOD_PASSWORD)

    with pytest.raises(UserError) as raised:
        user_update(user_id=root.pk, role=roles.VIEWER)

    assert raised.value.status == 409 and raised.value.field == "role"


@pytest.mark.django_db(transaction=True)
def test_two_admins_demoting_each_other_at_once_leave_one_admin(django_user_model):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite serialises writers; the row locks are PostgreSQL's (CI runs this there)")
    a = user_create(username="ann", password=GOOD_PASSWORD, role=roles.PLATFORM_ADMIN)
    b = user_create(username="ben", password=GOOD_PASSWORD, role=roles.PLATFORM_ADMIN)
    barrier = threading.Barrier(2)
    outcomes = []

    def demote(user_id):
        barrier.wait()
        try:
            user_update(user_id=user_id, role=roles.VIEWER)
            outcomes.append("ok")
        except UserError as exc:
            outcomes.append(exc.status)
        finally:
            connection.close()

    threads = [threading.Thread(target=demote, args=(pk,)) for pk in (a.pk, b.pk)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes, key=str) == [409, "ok"]
    admins = [u for u in django_user_model.objects.all() if roles.role_of(u) == roles.PLATFORM_ADMIN]
    assert len(admins) == 1
