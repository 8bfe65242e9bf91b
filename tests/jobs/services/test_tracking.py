"""The tracker's writes: through the real handler (index → records → services) into the database.

The hub is played by the test: it calls ``relisted`` / ``changed`` / ``flush`` exactly as the informer hub does.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import services
from jobs.domain import states as st
from jobs.handlers import AdmissionHandler
from jobs.models import TrackerStatus, TrainJob, TrainJobTransition
from tests.jobs import objects as o
from trainer_portal.kube import resources as kinds

pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def handler(clock):
    handler = AdmissionHandler(clock=clock, identity="test-watcher")
    for kind in handler.kinds:
        handler.relisted(kind, [], "1")
    return handler


def _writes(queries) -> list[str]:
    return [q["sql"] for q in queries.captured_queries
            if q["sql"].split()[0].upper() in ("INSERT", "UPDATE", "DELETE")
            and "jobs_trackerstatus" not in q["sql"]]


def _gang(handler, job, *, scheduled=None, bound=0, running=0):
    wl = o.workload(job)
    conditions = [o.condition("PodGroupInitiallyScheduled", scheduled)] if scheduled is not None else []
    group = o.pod_group(job, wl, conditions=conditions)
    n = job["spec"]["trainer"]["numNodes"]
    handler.changed(kinds.TRAINJOB, "ADDED", job)
    handler.changed(kinds.WORKLOAD, "ADDED", wl)
    handler.changed(kinds.PODGROUP, "ADDED", group)
    for i in range(n):
        handler.changed(kinds.POD, "ADDED", o.pod(job, i, group=group, node=f"n{i}" if i < bound else "",
                                                  phase="Running" if i < running else "Pending"))
    return wl, group


def test_a_job_is_tracked_and_its_transitions_recorded(handler):
    job = o.trainjob(num_nodes=2, creator="ada")
    wl, group = _gang(handler, job)
    handler.flush(leader=True)

    row = TrainJob.objects.get(uid=job["metadata"]["uid"])
    assert (row.state, row.reason, row.num_nodes, row.gpus_per_node, row.creator) == \
        (st.GANG_PENDING, "GangPending", 2, 8, "ada")
    assert row.pod_groups[0]["minCount"] == 2 and row.pod_groups[0]["bound"] == 0

    group = o.pod_group(job, wl, conditions=[o.condition("PodGroupInitiallyScheduled", True)])
    handler.changed(kinds.PODGROUP, "MODIFIED", group)
    for i in range(2):
        handler.changed(kinds.POD, "MODIFIED", o.pod(job, i, group=group, node=f"n{i}", phase="Running"))
    handler.flush(leader=True)

    row.refresh_from_db()
    assert row.state == st.RUNNING and row.admitted_at is not None
    assert list(row.transitions.values_list("from_state", "to_state")) == [
        ("", st.GANG_PENDING), (st.GANG_PENDING, st.RUNNING)]


def test_a_no_op_event_writes_nothing(handler):
    job = o.trainjob(num_nodes=2)
    _gang(handler, job)
    handler.flush(leader=True)
    before = TrainJob.objects.get().change_seq

    pod = o.pod(job, 0, group=TrainJob.objects.get().pod_groups[0]["name"], unschedulable="0/8 nodes are available")
    with CaptureQueriesContext(connection) as queries:
        # Only the resourceVersion changes: the index sees nothing to recompute.
        handler.changed(kinds.TRAINJOB, "MODIFIED", {**job, "metadata": {**job["metadata"], "resourceVersion": "9999"}})
        assert not handler.dirty
        # A pending pod's scheduler message changes: the job is recomputed, its row shows nothing new.
        handler.changed(kinds.POD, "MODIFIED", pod)
        handler.flush(leader=True)

    assert _writes(queries) == []
    assert handler.unchanged == 1
    assert TrainJob.objects.get().change_seq == before


def test_an_older_observation_never_overwrites_a_newer_state(handler):
    job = o.trainjob(num_nodes=1, rv="500")
    handler.changed(kinds.TRAINJOB, "ADDED", job)
    handler.flush(leader=True)
    done = o.trainjob(num_nodes=1, rv="900", conditions=[o.condition("Complete", True, "AllJobsCompleted")])
    handler.changed(kinds.TRAINJOB, "MODIFIED", done)
    handler.flush(leader=True)

    # A second watcher that lags behind (it has seen only rv 600) takes over and writes what it believes.
    lagging = AdmissionHandler(identity="lagging")
    for kind in lagging.kinds:
        lagging.relisted(kind, [], "1")
    lagging.changed(kinds.TRAINJOB, "ADDED", o.trainjob(num_nodes=1, rv="600"))
    lagging.flush(leader=True)

    row = TrainJob.objects.get()
    assert row.state == st.SUCCEEDED and row.resource_version == "900"
    assert lagging.stale == 1


def test_non_numeric_versions_fall_back_to_the_later_delivery():
    assert services.is_older("99", "100")
    assert not services.is_older("100", "99")
    assert not services.is_older("abc", "100")
    assert not services.is_older("", "100")


def test_a_deleted_job_is_marked_gone_not_left_running(handler):
    job = o.trainjob(num_nodes=1)
    _gang(handler, job, scheduled=True, bound=1, running=1)
    handler.flush(leader=True)
    assert TrainJob.objects.get().state == st.RUNNING

    handler.changed(kinds.TRAINJOB, "DELETED", job)
    handler.flush(leader=True)

    row = TrainJob.objects.get()
    assert row.gone_at is not None and (row.state, row.reason) == (st.UNKNOWN, "Deleted")
    assert row.transitions.last().to_state == st.UNKNOWN


def test_a_relist_marks_jobs_that_vanished_while_nobody_watched_gone(handler, clock):
    kept, vanished = o.trainjob(name="kept", uid="u-kept"), o.trainjob(name="vanished", uid="u-vanished")
    for job in (kept, vanished):
        handler.changed(kinds.TRAINJOB, "ADDED", job)
    handler.flush(leader=True)

    restarted = AdmissionHandler(clock=clock)
    for kind in restarted.kinds:
        restarted.relisted(kind, [kept] if kind == kinds.TRAINJOB else [], "5000")
    restarted.flush(leader=True)

    assert TrainJob.objects.get(uid="u-vanished").gone_at is not None
    assert TrainJob.objects.get(uid="u-kept").gone_at is None
    assert TrainJobTransition.objects.filter(job__uid="u-kept").count() == 1  # no duplicate on restart


def test_a_follower_writes_nothing(handler):
    handler.changed(kinds.TRAINJOB, "ADDED", o.trainjob())

    handler.flush(leader=False)

    assert not TrainJob.objects.exists() and not TrackerStatus.objects.exists()


def test_nothing_is_written_before_the_first_list_of_the_job_objects():
    handler = AdmissionHandler(identity="early")
    handler.relisted(kinds.TRAINJOB, [o.trainjob(num_nodes=4)], "10")

    handler.flush(leader=True)  # PodGroups and pods not listed yet: the job would look "waiting for objects"

    assert not TrainJob.objects.exists()
    handler.watch_state({kinds.TRAINJOB: object()}, {})
    handler.flush(leader=True)
    assert TrainJob.objects.exists()


def test_heartbeat_reports_the_writer(handler):
    handler.flush(leader=True)

    status = TrackerStatus.objects.get()
    assert status.holder == "test-watcher" and status.synced and status.connected


def test_retention_prunes_only_old_finished_or_gone_jobs(handler):
    now = timezone.now()
    for name, conditions in (("old-done", [o.condition("Complete", True)]), ("running", None)):
        handler.changed(kinds.TRAINJOB, "ADDED", o.trainjob(name=name, uid=f"u-{name}", conditions=conditions))
    handler.flush(leader=True)
    TrainJob.objects.filter(uid="u-old-done").update(finished_at=now - dt.timedelta(days=40))

    assert services.prune_finished(now=now, days=30) == 1
    assert list(TrainJob.objects.values_list("name", flat=True)) == ["running"]
    assert not TrainJobTransition.objects.filter(job__name="old-done").exists()


class Stats:
    """The hub's WatchStats: a failed request counts an error and a reconnect, a clean stream end a reconnect."""

    def __init__(self, **counts):
        self.events = self.relists = self.bookmarks = self.errors = self.reconnects = 0
        self.last_error = ""
        self.__dict__.update(counts)


def test_the_hub_s_watch_state_marks_the_cluster_unreachable_until_progress(handler, clock):
    handler.watch_state({kinds.POD: Stats(relists=1)}, {})
    handler.flush(leader=True)
    assert TrackerStatus.objects.get().connected

    handler.watch_state({kinds.POD: Stats(relists=1, errors=2, reconnects=2, last_error="connection refused")}, {})
    clock.now += 5
    handler.flush(leader=True)
    status = TrackerStatus.objects.get()
    assert not status.connected and "connection refused" in status.last_error

    handler.watch_state({kinds.POD: Stats(relists=1, errors=2, reconnects=3, last_error="connection refused")}, {})
    clock.now += 5
    handler.flush(leader=True)
    assert TrackerStatus.objects.get().connected
