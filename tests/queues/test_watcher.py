"""The queue watcher against the sandbox's Kueue, through the real handler and the real kubernetes client: what it
writes (queues, usage, positions from the visibility API) for FIFO and priority order, borrowing, reclaim, quota
release, pagination, and a refused or missing visibility API."""

from __future__ import annotations

import pytest

from queues import handlers
from queues.facts import queue_facts
from queues.handlers import QueueHandler
from queues.models import ClusterQueue, LocalQueue, QueuedWorkload, QueueWatchState
from trainer_portal.cluster import informers
from trainer_portal.cluster.models import Cluster
from trainer_portal.jobfacts import JobRef

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def _sync(handler: QueueHandler) -> None:
    """One relist of every Kueue kind, then a flush as leader (what the hub does after a list)."""
    informers.list_once(handler, gateway=handler.gateway())
    handler.flush(leader=True)


@pytest.fixture
def handler(kueue):
    return QueueHandler(gateway=kueue.gateway, debounce=0.0, max_delay=0.0)


def _row(namespace: str, job: str) -> QueuedWorkload:
    return QueuedWorkload.objects.get(namespace=namespace, job_name=job)


def _pending_count(kueue, cq: str, n: int):
    return kueue.wait(lambda: (kueue.gateway.request("GET", f"/apis/kueue.x-k8s.io/v1beta2/clusterqueues/{cq}")
                               .get("status") or {}).get("pendingWorkloads") == n)


def test_priority_then_fifo_positions_and_the_job_facts(kueue, handler):
    namespace = kueue.namespace("team-a")
    cq = kueue.cluster_queue("cq-research", kueue.flavor(), 16)
    kueue.local_queue(namespace, cq)
    urgent = kueue.priority_class("urgent", 1000)
    runner = kueue.submit(namespace, "runner", 2, duration=120)  # the whole quota
    kueue.wait(lambda: kueue.condition(namespace, runner["metadata"]["uid"], "Admitted") == "True")
    first = kueue.submit(namespace, "first", 1)
    kueue.submit(namespace, "second", 1)
    kueue.submit(namespace, "vip", 1, priority=urgent)
    _pending_count(kueue, cq, 3)

    _sync(handler)

    order = [(w.job_name, w.position_in_cluster_queue, w.position_in_local_queue) for w in
             QueuedWorkload.objects.filter(cluster_queue=cq, state="pending").order_by("position_in_cluster_queue")]
    assert order == [("vip", 0, 0), ("first", 1, 1), ("second", 2, 2)]
    assert _row(namespace, "runner").state == "admitted"
    assert _row(namespace, "second").reason == "WaitingForQuota"
    queue = ClusterQueue.objects.get(name=cq)
    assert (queue.pending, queue.admitted) == (3, 1)
    gpu = next(u for u in queue.usage if u["resource"] == "nvidia.com/gpu")
    assert (gpu["used"], gpu["nominal"], gpu["borrowed"]) == (16.0, 16.0, 0.0)
    assert LocalQueue.objects.get(namespace=namespace, name="team-queue").cluster_queue == cq

    cluster = Cluster.objects.get(is_default=True)
    ref = JobRef(cluster.pk, namespace, "first", first["metadata"]["uid"])
    facts = queue_facts([ref])[ref]
    assert (facts.local_queue, facts.cluster_queue, facts.position, facts.position_in, facts.pending_in_queue,
            facts.position_source) == ("team-queue", cq, 2, "LocalQueue", 3, "visibility-api")
    line = next(q for q in facts.quota if q.resource == "nvidia.com/gpu")
    assert (line.requested, line.nominal, line.used, line.free) == (8.0, 16.0, 16.0, 0.0)


def test_positions_are_read_page_by_page(kueue, handler, monkeypatch):
    monkeypatch.setattr(handlers, "POSITION_PAGE", 2)
    namespace = kueue.namespace("team-p")
    cq = kueue.cluster_queue("cq-paged", kueue.flavor(), 0)  # nothing is ever admitted: all five wait
    kueue.local_queue(namespace, cq)
    for i in range(5):
        kueue.submit(namespace, f"job-{i}", 1)
    kueue.wait(lambda: len(kueue.workloads(namespace)) == 5)

    _sync(handler)

    positions = sorted(QueuedWorkload.objects.filter(cluster_queue=cq).values_list("position_in_cluster_queue",
                                                                                     flat=True))
    assert positions == [0, 1, 2, 3, 4]  # three pages of at most two


def test_borrowing_then_reclaim_within_the_cohort(kueue, handler):
    team_a, team_b = kueue.namespace("team-a"), kueue.namespace("team-b")
    flavor = kueue.flavor()
    cq_a = kueue.cluster_queue("cq-a", flavor, 8, cohort="pool")
    cq_b = kueue.cluster_queue("cq-b", flavor, 16, cohort="pool", lending=8,
                               preemption={"reclaimWithinCohort": "Any"})
    kueue.local_queue(team_a, cq_a)
    kueue.local_queue(team_b, cq_b)
    borrower = kueue.submit(team_a, "borrower", 2, duration=300)  # 16 GPUs of a queue of 8: borrows 8
    kueue.wait(lambda: kueue.condition(team_a, borrower["metadata"]["uid"], "Admitted") == "True")

    def gpus_borrowed() -> str:
        status = kueue.gateway.request("GET", f"/apis/kueue.x-k8s.io/v1beta2/clusterqueues/{cq_a}").get("status")
        lines = [r for f in (status or {}).get("flavorsReservation", []) for r in f["resources"]
                 if r["name"] == "nvidia.com/gpu"]
        return lines[0]["borrowed"] if lines else ""

    # Every resource line carries "borrowed" (0 before the admission is counted): wait for the 8 it borrows.
    kueue.wait(lambda: gpus_borrowed() == "8")

    _sync(handler)
    usage_a = next(u for u in ClusterQueue.objects.get(name=cq_a).usage if u["resource"] == "nvidia.com/gpu")
    usage_b = next(u for u in ClusterQueue.objects.get(name=cq_b).usage if u["resource"] == "nvidia.com/gpu")
    assert (usage_a["used"], usage_a["borrowed"]) == (16.0, 8.0)
    assert (usage_b["used"], usage_b["lendable"]) == (0.0, 0.0)  # the 8 it may lend are lent
    assert usage_a["borrowable"] == 0.0
    assert ClusterQueue.objects.get(name=cq_a).cohort == ClusterQueue.objects.get(name=cq_b).cohort

    owner = kueue.submit(team_b, "owner", 2, duration=300)  # team-b wants its quota back: the borrower goes
    kueue.wait(lambda: kueue.condition(team_b, owner["metadata"]["uid"], "Admitted") == "True")
    kueue.wait(lambda: kueue.condition(team_a, borrower["metadata"]["uid"], "Evicted") == "True")
    _sync(handler)
    assert _row(team_b, "owner").state == "admitted"
    assert _row(team_a, "borrower").state == "pending"


def test_finished_jobs_release_quota_and_leave_the_model(kueue, handler):
    namespace = kueue.namespace("team-r")
    cq = kueue.cluster_queue("cq-release", kueue.flavor(), 8)
    kueue.local_queue(namespace, cq)
    short = kueue.submit(namespace, "short", 1, duration=1)
    kueue.wait(lambda: kueue.condition(namespace, short["metadata"]["uid"], "Admitted") == "True")
    nxt = kueue.submit(namespace, "next", 1, duration=300)
    kueue.wait(lambda: kueue.condition(namespace, nxt["metadata"]["uid"], "QuotaReserved") == "False")
    _sync(handler)
    assert _row(namespace, "next").position_in_local_queue == 0

    kueue.wait(lambda: kueue.condition(namespace, nxt["metadata"]["uid"], "Admitted") == "True")
    _sync(handler)
    assert not QueuedWorkload.objects.filter(namespace=namespace, job_name="short").exists()
    assert _row(namespace, "next").state == "admitted"
    assert _row(namespace, "next").position_in_local_queue is None


def test_a_refused_visibility_api_leaves_positions_unknown_until_a_retry(kueue):
    now = [1000.0]
    handler = QueueHandler(gateway=kueue.gateway, debounce=0.0, max_delay=0.0, clock=lambda: now[0])
    namespace = kueue.namespace("team-f")
    cq = kueue.cluster_queue("cq-refused", kueue.flavor(), 0)
    kueue.local_queue(namespace, cq)
    job = kueue.submit(namespace, "waiting", 1)
    kueue.wait(lambda: kueue.workloads(namespace))
    kueue.process.inject_fault(method="GET", path="pendingworkloads", count=1000, action="status", status=403)

    _sync(handler)

    row = _row(namespace, "waiting")
    assert (row.state, row.position_in_cluster_queue, row.position_in_local_queue) == ("pending", None, None)
    state = QueueWatchState.objects.get(cluster__is_default=True)
    assert state.position_source == "unknown" and "403" in state.positions_error
    cluster = Cluster.objects.get(is_default=True)
    ref = JobRef(cluster.pk, namespace, "waiting", job["metadata"]["uid"])
    facts = queue_facts([ref])[ref]
    assert (facts.position, facts.position_source, facts.local_queue) == (None, "unknown", "team-queue")

    kueue.process.clear_faults()  # access granted: read again 30 s later, without any change on the cluster
    now[0] += handlers.RETRY_SECONDS - 1
    handler.flush(leader=True)
    assert _row(namespace, "waiting").position_in_local_queue is None
    now[0] += 1
    handler.flush(leader=True)
    assert _row(namespace, "waiting").position_in_local_queue == 0
    assert QueueWatchState.objects.get(cluster__is_default=True).position_source == "visibility-api"


def test_a_cluster_without_the_visibility_api_has_unknown_positions(gateway):
    handler = QueueHandler(gateway=gateway)
    assert handler._positions(["cq-anything"]) == {}
    assert handler.position_source == "unknown" and "404" in handler.positions_error


@pytest.mark.django_db(transaction=True)
def test_the_informer_hub_runs_the_watcher_live(kueue):
    """The real hub: watches, dispatch, flushes; a new higher-priority job moves the others back within seconds."""
    import threading

    from django.db import connection

    namespace = kueue.namespace("team-h")
    cq = kueue.cluster_queue("cq-hub", kueue.flavor(), 0)
    kueue.local_queue(namespace, cq)
    kueue.submit(namespace, "early", 1)
    urgent = kueue.priority_class("hub-urgent", 500)
    hub = informers.InformerHub(gateway=kueue.gateway, factories=[
        lambda cluster=None: QueueHandler(cluster=cluster, gateway=kueue.gateway)])

    def run() -> None:
        try:
            hub.run()
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        def position(job: str):
            row = QueuedWorkload.objects.filter(namespace=namespace, job_name=job).first()
            return row.position_in_local_queue if row else None

        kueue.wait(lambda: position("early") == 0, timeout=20)
        kueue.submit(namespace, "later", 1, priority=urgent)
        kueue.wait(lambda: position("later") == 0 and position("early") == 1, timeout=20)
    finally:
        hub.stop.set()
        thread.join(timeout=15)
