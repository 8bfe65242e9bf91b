"""Project-wide fixtures: personas (alice = platform admin, bob = viewer, charlie = no role)."""

from __future__ import annotations

import pytest


@pytest.fixture
def alice(django_user_model):
    """A platform admin."""
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("alice", password="alice-password-1")
    user.groups.add(Group.objects.get(name="platform-admin"))
    return user


@pytest.fixture
def bob(django_user_model):
    """A viewer (read-only)."""
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("bob", password="bob-password-1")
    user.groups.add(Group.objects.get(name="viewer"))
    return user


@pytest.fixture
def charlie(django_user_model):
    """A logged-in user with no portal role."""
    return django_user_model.objects.create_user("charlie", password="charlie-password-1")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Hash test passwords with MD5: the real hasher costs ~0.5 s per login and proves nothing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
