"""The beat fallback: rebuild the live snapshot from a full list only when the stored one is stale."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from trainer_portal import kube
from trainer_portal.cluster import snapshots, tasks
from trainer_portal.cluster.models import TopologySnapshot
from trainer_portal.kube.client import reset_gateway

from .test_cluster_watch_command import node


@pytest.mark.django_db
def test_the_refresh_task_rebuilds_a_missing_or_stale_snapshot_and_leaves_a_fresh_one(cluster, gateway):
    gateway.create(kube.CORE_NODE, body=node("task-n1"))
    assert tasks.topology_refresh_task() == "default: refreshed"
    assert snapshots.live_snapshot().snapshot.node_count == 1
    assert tasks.topology_refresh_task() == "default: fresh"

    TopologySnapshot.objects.update(taken_at=datetime.fromtimestamp(time.time() - 600, UTC))
    gateway.create(kube.CORE_NODE, body=node("task-n2"))
    assert tasks.topology_refresh_task(max_age_seconds=90) == "default: refreshed"
    assert snapshots.live_snapshot().snapshot.node_count == 2


@pytest.mark.django_db
def test_the_refresh_task_returns_the_error_when_the_cluster_is_unreachable(settings, tmp_path):
    settings.KUBE_CONFIG_PATH = str(tmp_path / "absent")
    reset_gateway()
    try:
        result = tasks.topology_refresh_task()
    finally:
        reset_gateway()
    assert "refreshed" not in result and "kubeconfig" in result.lower()
    assert snapshots.live_snapshot() is None


@pytest.mark.django_db  # Celery's Django fixup touches the connection while it imports the task modules
def test_every_beat_entry_names_a_registered_task(settings):
    from trainer_portal.celery import app

    app.loader.import_default_modules()
    schedule = settings.CELERY_BEAT_SCHEDULE
    assert schedule["cluster-topology-refresh"]["task"] == "trainer_portal.cluster.tasks.topology_refresh_task"
    assert [name for name, entry in schedule.items() if entry["task"] not in app.tasks] == []
