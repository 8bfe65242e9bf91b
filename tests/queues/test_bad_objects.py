"""Objects of shapes nothing expects cost their own row only: the queue watcher writes everything else, and a
cluster without Kueue's visibility API gives unknown positions, never an error."""

from __future__ import annotations

import pytest

from queues.handlers import CQ, FLAVOR, LQ, WORKLOAD, QueueHandler
from queues.models import ClusterQueue, LocalQueue, QueuedWorkload, QueueWatchState

pytestmark = pytest.mark.django_db

GOOD_CQ = {"metadata": {"name": "cq-good"}, "spec": {"cohortName": "pool", "resourceGroups": [{"flavors": [
    {"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16"}]}]}]},
    "status": {"pendingWorkloads": 1, "flavorsReservation": [{"name": "f", "resources": [
        {"name": "nvidia.com/gpu", "total": "8", "borrowed": "0"}]}]}}
BAD_CQS = [
    {"metadata": {"name": "cq-bad-types"}, "spec": {"resourceGroups": "many", "fairSharing": {"weight": "abc"},
                                                     "preemption": ["x"]},
     "status": {"pendingWorkloads": "3", "flavorsReservation": [{"name": 7, "resources": None}]}},
    {"metadata": {"name": "cq-nul\x00"}, "spec": {"resourceGroups": [{"flavors": [{"name": "f", "resources": [
        {"name": "nvidia.com/gpu", "nominalQuota": "1e999999"}]}]}]}},
    {"metadata": "not an object"},
    "not even a dict",
]


def test_malformed_objects_are_read_as_absent_and_the_rest_is_written(gateway):
    handler = QueueHandler(gateway=gateway, debounce=0.0, max_delay=0.0)
    handler.relisted(FLAVOR, [{"metadata": {"name": "f"}, "spec": {"nodeLabels": {"zone": 3, "ok": "yes"}}}], "1")
    handler.relisted(CQ, [GOOD_CQ, *BAD_CQS], "1")
    handler.relisted(LQ, [{"metadata": {"namespace": "team-a", "name": "q"}, "spec": {"clusterQueue": "cq-good"}},
                          {"metadata": {"namespace": "team-a", "name": "broken"}, "spec": None}], "1")
    handler.relisted(WORKLOAD, [
        {"metadata": {"namespace": "team-a", "name": "wl", "uid": "u1", "creationTimestamp": "2026-01-01T00:00:00Z",
                      "ownerReferences": [{"kind": "TrainJob", "name": "job", "uid": "job-uid", "controller": True}]},
         "spec": {"queueName": "q", "priority": "high", "podSets": [{"count": "2", "template": 5}]},
         "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "WaitingForQuota",
                                    "message": "insufficient \x00 quota"}, "junk"]}},
        {"metadata": {"namespace": "team-a"}, "spec": {}},
    ], "1")

    handler.flush(leader=True)

    assert sorted(ClusterQueue.objects.values_list("name", flat=True)) == ["cq-bad-types", "cq-good", "cq-nul"]
    good = ClusterQueue.objects.get(name="cq-good")
    assert good.usage[0]["used"] == 8.0 and good.usage[0]["nominal"] == 16.0
    assert ClusterQueue.objects.get(name="cq-bad-types").usage == []
    assert LocalQueue.objects.get(name="broken").cluster_queue == ""
    row = QueuedWorkload.objects.get(name="wl")
    assert (row.state, row.priority, row.reason, row.message, row.job_uid, row.cluster_queue) == \
        ("pending", 0, "WaitingForQuota", "insufficient  quota", "job-uid", "cq-good")
    # The sandbox behind ``gateway`` has no Kueue: its visibility API is missing, so positions are unknown.
    assert row.position_in_cluster_queue is None
    state = QueueWatchState.objects.get()
    assert state.position_source == "unknown" and "404" in state.positions_error and state.last_error == ""


def test_a_standby_writes_nothing(gateway):
    handler = QueueHandler(gateway=gateway, debounce=0.0, max_delay=0.0)
    handler.relisted(CQ, [GOOD_CQ], "1")
    handler.relisted(LQ, [], "1")
    handler.relisted(WORKLOAD, [], "1")
    handler.flush(leader=False)
    handler.leader_check = lambda: False  # deposed between the hub's question and the write
    handler.flush(leader=True)
    assert not ClusterQueue.objects.exists() and handler.deposed == 1
