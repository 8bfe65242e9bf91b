"""Heartbeats of the worker and beat, as the cluster page and API read them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from trainer_portal.health.models import Heartbeat, Process
from trainer_portal.health.selectors import background_health, queued_sync_warning
from trainer_portal.health.services import heartbeat_record

pytestmark = pytest.mark.django_db


def test_it_says_nothing_was_ever_seen_on_a_fresh_install():
    health = background_health()

    assert health.as_api() == {
        "worker": {"lastSeen": None, "alive": False},
        "beat": {"lastRun": None, "alive": False},
        "queueDepth": None,
    }


def test_it_reports_the_latest_heartbeats_and_the_queue_depth():
    now = timezone.now()
    heartbeat_record(process=Process.WORKER, hostname="celery@a", queue_depth=7, now=now - timedelta(seconds=3))
    heartbeat_record(process=Process.BEAT, hostname="a", now=now - timedelta(seconds=8))

    health = background_health(now=now)

    assert health.as_api() == {
        "worker": {"lastSeen": now - timedelta(seconds=3), "alive": True},
        "beat": {"lastRun": now - timedelta(seconds=8), "alive": True},
        "queueDepth": 7,
    }


def test_a_worker_silent_for_three_heartbeats_is_not_alive():
    now = timezone.now()
    heartbeat_record(process=Process.WORKER, queue_depth=0, now=now - timedelta(seconds=31))

    assert background_health(now=now).worker_alive is False
    assert background_health(now=now - timedelta(seconds=2)).worker_alive is True


def test_beat_keeps_the_depth_the_worker_measured_and_the_newest_writer_wins():
    now = timezone.now()
    heartbeat_record(process=Process.WORKER, hostname="celery@a", queue_depth=4, now=now - timedelta(seconds=5))
    heartbeat_record(process=Process.WORKER, hostname="celery@b", now=now)

    row = Heartbeat.objects.get(process=Process.WORKER)
    assert (row.hostname, row.queue_depth, row.last_seen) == ("celery@b", 4, now)
    assert Heartbeat.objects.count() == 1


def test_a_sync_queued_too_long_without_a_live_worker_says_so():
    now = timezone.now()
    long_ago = now - timedelta(minutes=5)

    assert queued_sync_warning(queued_since=long_ago, health=background_health(now=now)) == (
        "Queued, but no worker has ever reported in: start the Celery worker."
    )
    heartbeat_record(process=Process.WORKER, now=now - timedelta(minutes=3))
    assert queued_sync_warning(queued_since=long_ago, health=background_health(now=now)) == (
        "Queued, but no worker has been seen for 3 min: check the Celery worker."
    )


def test_a_recent_sync_or_a_live_worker_gives_no_warning():
    now = timezone.now()
    assert queued_sync_warning(queued_since=now - timedelta(seconds=20), health=background_health(now=now)) == ""
    heartbeat_record(process=Process.WORKER, now=now - timedelta(seconds=5))
    assert queued_sync_warning(queued_since=now - timedelta(hours=2), health=background_health(now=now)) == ""


def test_without_a_queue_time_the_worker_must_have_been_gone_long_enough():
    now = timezone.now()
    assert queued_sync_warning(health=background_health(now=now)).startswith("Queued, but no worker has ever")
    heartbeat_record(process=Process.WORKER, now=now - timedelta(seconds=45))  # restarting, not gone
    assert queued_sync_warning(health=background_health(now=now)) == ""
    assert queued_sync_warning(health=background_health(now=now + timedelta(minutes=2))) == (
        "Queued, but no worker has been seen for 2 min: check the Celery worker."
    )
