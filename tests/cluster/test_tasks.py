"""The beat fallback: rebuild the live snapshot from a full list only when the stored one is stale."""

from __future__ import annotations

import os
import time

import pytest

from trainer_portal import kube
from trainer_portal.cluster import snapshots, tasks
from trainer_portal.kube.client import reset_gateway

from .test_cluster_watch_command import node


def test_the_refresh_task_rebuilds_a_missing_or_stale_snapshot_and_leaves_a_fresh_one(cluster, gateway):
    gateway.create(kube.CORE_NODE, body=node("task-n1"))
    assert tasks.topology_refresh_task() == "refreshed"
    assert snapshots.live_snapshot().snapshot.node_count == 1
    assert tasks.topology_refresh_task() == "fresh"

    stale = time.time() - 600
    os.utime(snapshots.snapshot_path(), (stale, stale))
    gateway.create(kube.CORE_NODE, body=node("task-n2"))
    assert tasks.topology_refresh_task(max_age_seconds=90) == "refreshed"
    assert snapshots.live_snapshot().snapshot.node_count == 2


def test_the_refresh_task_returns_the_error_when_the_cluster_is_unreachable(settings, tmp_path):
    settings.KUBE_CONFIG_PATH = str(tmp_path / "absent")
    reset_gateway()
    try:
        result = tasks.topology_refresh_task()
    finally:
        reset_gateway()
    assert result != "refreshed" and "kubeconfig" in result.lower()
    assert snapshots.live_snapshot() is None


@pytest.mark.django_db  # Celery's Django fixup touches the connection while it imports the task modules
def test_every_beat_entry_names_a_registered_task(settings):
    from trainer_portal.celery import app

    app.loader.import_default_modules()
    schedule = settings.CELERY_BEAT_SCHEDULE
    assert schedule["cluster-topology-refresh"]["task"] == "trainer_portal.cluster.tasks.topology_refresh_task"
    assert [name for name, entry in schedule.items() if entry["task"] not in app.tasks] == []
