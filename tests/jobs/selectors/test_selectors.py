"""Reads behind the pages: visibility, statistics, longest waiting, runtime lists, tracking staleness."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from jobs import selectors
from jobs.errors import InvalidQuery, TrainJobNotFound
from jobs.models import TrackerStatus
from tests.jobs.factories import live_tracker, tracked_job

pytestmark = pytest.mark.django_db


def test_visibility_per_role(alice, bob, charlie, dana, django_user_model):
    superuser = django_user_model.objects.create_superuser("root", password="root-password-1")

    assert selectors.visible_namespaces(alice).everything
    assert selectors.visible_namespaces(bob).everything
    assert selectors.visible_namespaces(superuser).everything
    assert selectors.visible_namespaces(dana).namespaces == {"team-a"}
    assert selectors.visible_namespaces(charlie).nothing


def test_grants_to_a_group_the_data_scientist_is_not_in_do_not_count(dana):
    from tests.jobs.factories import grant

    grant("team-b-ml", "team-b")

    assert selectors.visible_namespaces(dana).namespaces == {"team-a"}


def test_a_gone_job_is_found_only_when_no_live_one_has_the_name(bob):
    gone = tracked_job("team-a", "llm", gone_at=timezone.now())
    assert selectors.trainjob_get(user=bob, namespace="team-a", name="llm") == gone
    live = tracked_job("team-a", "llm")
    assert selectors.trainjob_get(user=bob, namespace="team-a", name="llm") == live
    with pytest.raises(TrainJobNotFound):
        selectors.trainjob_get(user=bob, namespace="team-a", name="nope")


def test_admission_stats_per_runtime_and_level(bob):
    now = timezone.now()
    for wait in (10, 20, 30, 40, 100):
        submitted = now - dt.timedelta(hours=1)
        tracked_job(state="running", runtime="torch", level="trainjob", submitted=submitted,
                    admitted=submitted + dt.timedelta(seconds=wait))
    tracked_job(state="running", runtime="torch", submitted=now - dt.timedelta(days=3),
                admitted=now - dt.timedelta(days=2))  # outside the window

    (row,) = selectors.admission_stats(user=bob, hours=24, now=now)

    assert (row["runtime"], row["level"], row["jobs"]) == ("torch", "trainjob", 5)
    assert (row["p50Seconds"], row["p95Seconds"]) == (30.0, 100.0)
    with pytest.raises(InvalidQuery):
        selectors.admission_stats(user=bob, hours=0)


def test_longest_waiting_and_runtime_lists_respect_visibility(dana):
    now = timezone.now()
    tracked_job("team-a", "old-wait", state="unschedulable", submitted=now - dt.timedelta(hours=3))
    tracked_job("team-b", "older-wait-elsewhere", state="gang-pending", submitted=now - dt.timedelta(hours=5))
    tracked_job("team-a", "running", state="running", submitted=now - dt.timedelta(hours=9))

    assert [j.name for j in selectors.longest_waiting(user=dana, limit=5)] == ["old-wait"]
    assert [j.name for j in selectors.trainjobs_for_runtime(user=dana, runtime="torch-distributed")] == \
        ["old-wait", "running"]


def test_tracking_status_says_why_it_is_stale():
    now = timezone.now()
    assert selectors.tracking_status(now=now).stale
    live_tracker()
    assert not selectors.tracking_status().stale
    TrackerStatus.objects.update(heartbeat_at=now - dt.timedelta(minutes=5))
    status = selectors.tracking_status(now=now)
    assert status.stale and status.why == "the tracker stopped reporting"
    TrackerStatus.objects.update(heartbeat_at=now, synced=False)
    assert "first sync" in selectors.tracking_status(now=now).why


def test_the_change_token_moves_with_visible_rows_only(dana):
    live_tracker()
    job_b = tracked_job("team-b")
    token = selectors.trainjob_change_token(user=dana)
    job_b.change_seq = 10_000
    job_b.save()
    assert selectors.trainjob_change_token(user=dana) == token
    tracked_job("team-a")
    assert selectors.trainjob_change_token(user=dana) != token


def test_grants_are_created_validated_and_removed(dana):
    from django.contrib.auth.models import Group

    from jobs import services
    from jobs.errors import InvalidGrant

    Group.objects.get_or_create(name="team-a-ml")
    assert selectors.visible_namespaces(dana).namespaces == {"team-a"}
    services.namespace_grant_create(group_name="team-a-ml", namespace="team-c")
    del dana._jobs_visibility  # as in a new request
    assert selectors.visible_namespaces(dana).namespaces == {"team-a", "team-c"}
    for group, namespace, field in (("team-a-ml", "Team_C", "namespace"), ("nobody", "team-d", "group"),
                                    ("team-a-ml", "team-c", "namespace")):
        with pytest.raises(InvalidGrant) as caught:
            services.namespace_grant_create(group_name=group, namespace=namespace)
        assert caught.value.field == field
    assert services.namespace_grant_delete(group_name="team-a-ml", namespace="team-c")
    assert not services.namespace_grant_delete(group_name="team-a-ml", namespace="team-c")


def test_pruning_changes_the_change_token(bob):
    from jobs import services

    live_tracker()
    old = tracked_job("team-a", state="succeeded", finished_at=timezone.now() - dt.timedelta(days=90))
    tracked_job("team-a")
    old.change_seq = 1  # not the newest row: its removal does not move MAX(change_seq)
    old.save()
    token = selectors.trainjob_change_token(user=bob)

    assert services.prune_finished(days=30) == 1
    assert selectors.trainjob_change_token(user=bob) != token
