"""Tokens die with their user's credentials, never outlive the token that made them, and DRF's own token command
and plaintext-key admin are gone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command, get_commands
from django.utils import timezone

from trainer_portal.tokens.models import ApiToken
from trainer_portal.tokens.services import token_issue

pytestmark = pytest.mark.django_db


def api(client, key):
    return {"HTTP_AUTHORIZATION": f"Token {key}"}


def test_drf_create_token_is_gone_and_no_admin_shows_a_key():
    assert "drf_create_token" not in get_commands()
    with pytest.raises(CommandError):
        call_command("drf_create_token", "alice")
    from django.contrib import admin

    shown = {model._meta.label for model in admin.site._registry}
    assert "authtoken.Token" not in shown and "authtoken.TokenProxy" not in shown


def test_a_token_cannot_mint_a_longer_lived_token(client, alice):
    parent = token_issue(user=alice, name="short", lifetime=timedelta(days=2))
    refused = client.post("/api/v1/auth/tokens/", {"name": "longer", "days": 30}, content_type="application/json",
                          **api(client, parent.key))
    assert refused.status_code == 400
    assert "days" in str(refused.json())
    made = client.post("/api/v1/auth/tokens/", {"name": "default"}, content_type="application/json",
                       **api(client, parent.key))
    assert made.status_code == 201
    child = ApiToken.objects.get(name="default")
    assert child.expires_at <= parent.token.expires_at and child.minted_by_id == parent.token.pk


def test_revoking_a_token_revokes_what_it_minted(client, alice):
    parent = token_issue(user=alice, name="parent")
    child = token_issue(user=alice, name="child", minted_by=parent.token)
    grandchild = token_issue(user=alice, name="grandchild", minted_by=child.token)
    assert client.delete(f"/api/v1/auth/tokens/{parent.token.pk}/", **api(client, parent.key)).status_code == 204
    assert not ApiToken.objects.filter(pk__in=[child.token.pk, grandchild.token.pk]).exists()
    assert client.get("/api/v1/auth/tokens/", **api(client, grandchild.key)).status_code == 401


def test_a_password_change_revokes_the_users_tokens(client, alice, bob):
    mine, other = token_issue(user=alice, name="a"), token_issue(user=bob, name="b")
    alice.set_password("a-new-password-9")
    alice.save()
    assert not ApiToken.objects.filter(user=alice).exists()
    assert ApiToken.objects.filter(pk=other.token.pk).exists()
    assert client.get("/api/v1/auth/tokens/", **api(client, mine.key)).status_code == 401


def test_disabling_an_account_revokes_its_tokens_but_a_login_does_not(client, alice):
    token_issue(user=alice, name="a")
    alice.last_login = timezone.now()
    alice.save(update_fields=["last_login"])
    alice.first_name = "Alice"
    alice.save()
    assert ApiToken.objects.filter(user=alice).count() == 1
    alice.is_active = False
    alice.save()
    assert not ApiToken.objects.filter(user=alice).exists()


def test_losing_the_last_role_revokes_tokens_from_either_side_of_the_relation(alice, bob):
    token_issue(user=alice, name="a")
    token_issue(user=bob, name="b")
    alice.groups.add(Group.objects.get_or_create(name="team-a")[0])
    alice.groups.remove(Group.objects.get(name="team-a"))  # still a platform admin
    assert ApiToken.objects.filter(user=alice).exists()
    alice.groups.clear()
    assert not ApiToken.objects.filter(user=alice).exists()
    Group.objects.get(name="viewer").user_set.remove(bob)
    assert not ApiToken.objects.filter(user=bob).exists()
