"""Fixtures of the forecast tests: a small stored cluster, a running job, its history and a waiting gang."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.utils import timezone

from tests.jobs.factories import tracked_job
from trainer_portal.placement import synthetic_cluster
from trainer_portal.placement.snapshot import next_stamp
from trainer_portal.placement.tracker import LiveSnapshot

GPU = {"nvidia.com/gpu": "8"}


@pytest.fixture
def eager_celery():
    """Run Celery tasks inline for the duration of a test."""
    from trainer_portal.celery import app

    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield app
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


def store_snapshot(busy_nodes: int = 2):
    """Store a one-rack, two-node live snapshot with the first `busy_nodes` nodes fully used; returns it."""
    from trainer_portal.cluster.snapshots import clear_cache, save_live_snapshot

    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=1, nodes_per_rack=2)
    snapshot.used_gpu[:busy_nodes] = 8
    snapshot.used_pods[:busy_nodes] = 1
    snapshot.version = next_stamp()
    save_live_snapshot(LiveSnapshot(snapshot, time.time(), {}, "watch"))
    clear_cache()
    return snapshot


@pytest.fixture
def queue_with_history(db):
    """See `make_queue`."""
    return make_queue()


def make_queue(runtime: str = "torch-distributed"):
    """A 2-node cluster held by a job admitted 30 min ago, six finished jobs of its kind that ran 1 h each, and a
    2-node gang waiting, all of `runtime`. Returns (waiting job, running job)."""
    snapshot = store_snapshot()
    now = timezone.now()
    for index in range(6):
        admitted = now - dt.timedelta(hours=10 + index)
        tracked_job("team-a", f"done-{index}", state="succeeded", num_nodes=2, resources_per_node=GPU, runtime=runtime,
                    submitted=admitted - dt.timedelta(minutes=5), admitted=admitted,
                    finished_at=admitted + dt.timedelta(hours=1))
    running = tracked_job("team-b", "holder", state="running", num_nodes=2, resources_per_node=GPU, runtime=runtime,
                          admitted=now - dt.timedelta(minutes=30), submitted=now - dt.timedelta(minutes=40),
                          pods=[{"name": f"holder-{i}", "node": snapshot.names[i], "phase": "Running",
                                 "podGroup": ""} for i in range(2)])
    waiting = tracked_job("team-a", "waiter", state="gang-pending", num_nodes=2, resources_per_node=GPU,
                          runtime=runtime, submitted=now - dt.timedelta(minutes=20))
    return waiting, running
