"""Fixtures of the notification tests: real receivers, a data scientist with a grant, and event makers."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from jobs.models import TrainJob, TrainJobTransition

from .receivers import HttpReceiver, SmtpReceiver

_uids = itertools.count(1)


@pytest.fixture
def receiver():
    server = HttpReceiver().start()
    yield server
    server.stop()


@pytest.fixture
def smtp(settings):
    server = SmtpReceiver().start()
    settings.NOTIFICATIONS_SMTP_HOST, settings.NOTIFICATIONS_SMTP_PORT = "127.0.0.1", server.port
    yield server
    server.stop()


@pytest.fixture
def quick_retries(settings):
    """Retries due at once (backoff is tested as a function, never by waiting)."""
    settings.NOTIFICATIONS_RETRY_INITIAL_SECONDS = 0
    settings.NOTIFICATIONS_HTTP_TIMEOUT_SECONDS = 0.5
    return settings


@pytest.fixture
def dora(django_user_model):
    """A data scientist granted team-a (not team-b)."""
    from jobs.models import NamespaceGrant

    user = django_user_model.objects.create_user("dora", password="dora-password-1", email="dora@example.org")
    user.groups.add(Group.objects.get_or_create(name="data-scientist")[0])
    group = Group.objects.get_or_create(name="team-a-ml")[0]
    user.groups.add(group)
    NamespaceGrant.objects.create(group=group, namespace="team-a")
    return user


def job(namespace: str = "team-a", name: str | None = None, *, state: str = "queued", creator: str = "",
        runtime: str = "torch", queue: str = "", since: dt.datetime | None = None) -> TrainJob:
    """A tracked TrainJob in ``state`` with its first transition."""
    n = next(_uids)
    since = since or timezone.now()
    row = TrainJob.objects.create(uid=f"n-uid-{n}", namespace=namespace, name=name or f"nj-{n}", runtime_name=runtime,
                                  queue_name=queue, creator=creator, state=state, since=since, submitted_at=since,
                                  change_seq=n)
    TrainJobTransition.objects.create(job=row, from_state="", to_state=state, at=since, seq=n)
    return row


def move(row: TrainJob, state: str, *, reason: str = "", message: str = "") -> TrainJobTransition:
    """Append the transition of ``row`` into ``state`` (what the tracker writes)."""
    now = timezone.now()
    previous = row.state
    TrainJob.objects.filter(pk=row.pk).update(state=state, since=now)
    row.state = state
    seq = (TrainJobTransition.objects.order_by("-seq").values_list("seq", flat=True).first() or 0) + 1
    return TrainJobTransition.objects.create(job=row, from_state=previous, to_state=state, reason=reason,
                                             message=message, at=now, seq=seq)
