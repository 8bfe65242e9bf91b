"""A policy queued while no worker is alive says so on its page and sync panel (from the policy selector)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from runtimes.choices import SyncState
from runtimes.domain.manifest import new_runtime
from runtimes.models import PolicySync
from runtimes.selectors import policy_get
from runtimes.services.policies import policy_create
from trainer_portal.health.models import Process
from trainer_portal.health.services import heartbeat_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(alice):
    policy = policy_create(manifest=new_runtime("stuck"), author=alice, message="first")
    PolicySync.objects.filter(policy=policy).update(sync_state=SyncState.QUEUED, sync_requested_revision=1)
    return policy


def test_a_queued_policy_without_any_worker_says_so(queued, client, bob):
    client.force_login(bob)

    panel = client.get("/cluster/runtimes/stuck/panel/").content.decode()
    page = client.get("/runtimes/stuck/").content.decode()

    for html in (panel, page):
        assert "Queued, but no worker has ever reported in: start the Celery worker." in html


def test_a_worker_gone_for_minutes_is_named_with_its_age(queued):
    heartbeat_record(process=Process.WORKER, now=timezone.now() - timedelta(minutes=4))

    assert policy_get(name="stuck").sync_warning == (
        "Queued, but no worker has been seen for 4 min: check the Celery worker."
    )


def test_a_live_worker_or_a_policy_not_waiting_gives_no_warning(queued, alice):
    heartbeat_record(process=Process.WORKER, now=timezone.now())
    assert policy_get(name="stuck").sync_warning == ""

    policy_create(manifest=new_runtime("idle"), author=alice, message="first")
    heartbeat_record(process=Process.WORKER, now=timezone.now() - timedelta(hours=1))
    assert policy_get(name="idle").sync_warning == ""  # a draft waits for nothing
