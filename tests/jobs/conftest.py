"""Personas of the TrainJob pages: dana, a data scientist of team-a (granted through her group)."""

from __future__ import annotations

import pytest


@pytest.fixture
def dana(django_user_model):
    """A data scientist whose group ``team-a-ml`` is granted namespace team-a."""
    from django.contrib.auth.models import Group

    from tests.jobs.factories import grant

    user = django_user_model.objects.create_user("dana", password="dana-password-1")
    user.groups.add(Group.objects.get(name="data-scientist"))
    grant("team-a-ml", "team-a")
    user.groups.add(Group.objects.get(name="team-a-ml"))
    return user
