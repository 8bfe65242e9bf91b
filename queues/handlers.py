"""The queue watcher: an informer-hub handler that keeps Kueue's queues, flavors, cohorts and Workloads of one
cluster in memory and writes the queues read model (``queues.models``) with every pending Workload's positions.

Positions come from Kueue's visibility API (``visibility.kueue.x-k8s.io``: ``clusterqueues/{cq}/pendingworkloads``,
paginated with ``offset``/``limit``, every request bounded by ``POSITION_TIMEOUT_SECONDS``), read again after any
change of a Workload or a queue once the cluster has been quiet for ``DEBOUNCE_SECONDS`` (at most
``MAX_DELAY_SECONDS`` after the first change). A missing API (404), a refusal (401/403) or a failure leaves the
positions of that queue unknown (``position_source`` "unknown") and is retried after ``RETRY_SECONDS``; it is never
an error of the watcher.

Like the admission tracker it writes only while this process holds the cluster's Lease (``needs_leader``, and
``leader_check`` right before the write), hands the database only the rows that changed since its last write, and
reads objects of a wrong shape as absent (``queues.domain.kueue``), so one bad object costs its own row only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

from django.db import DatabaseError

from trainer_portal.kube import resources as kinds
from trainer_portal.kube.errors import KubeError, KubeForbidden, KubeNotFound

from . import services
from .domain import kueue as kq

logger = logging.getLogger(__name__)

FLAVOR, CQ, LQ, COHORT, WORKLOAD = (kinds.KUEUE_RESOURCE_FLAVOR, kinds.KUEUE_CLUSTER_QUEUE, kinds.KUEUE_LOCAL_QUEUE,
                                    kinds.KUEUE_COHORT, kinds.KUEUE_WORKLOAD)
KINDS = (FLAVOR, CQ, LQ, COHORT, WORKLOAD)
DEBOUNCE_SECONDS = 0.05
MAX_DELAY_SECONDS = 0.3
HEARTBEAT_SECONDS = 5.0
RETRY_SECONDS = 30.0
POSITION_TIMEOUT_SECONDS = 2.0
POSITION_PAGE = 500
POSITION_BUDGET_SECONDS = 5.0
POSITION_PARALLEL = 4
VISIBILITY = f"/apis/{kinds.KUEUE_VISIBILITY_GROUP}/{kinds.KUEUE_VISIBILITY_VERSION}"
SOURCE_API, SOURCE_UNKNOWN = "visibility-api", "unknown"


class QueueHandler:
    """Informer-hub handler writing Kueue's queues and pending positions of one cluster into ``queues.models``."""

    name = "queues.kueue"
    kinds = KINDS
    needs_leader = True

    def __init__(self, *, cluster=None, gateway=None, clock: Callable[[], float] = time.monotonic,
                 debounce: float = DEBOUNCE_SECONDS, max_delay: float = MAX_DELAY_SECONDS) -> None:
        self.cluster = cluster
        self.leader_check: Callable[[], bool] = lambda: True  # the hub sets its Lease check
        self.clock = clock
        self.debounce, self.max_delay = debounce, max_delay
        self._gateway = gateway
        self.objects: dict = {kind: {} for kind in KINDS}
        self.listed: set = set()
        self.served: set | None = None
        self.full = True
        self.first_change: float | None = None
        self.last_change: float | None = None
        self.written: dict[str, dict] = {table: {} for table in services.TABLES}
        self.position_source = SOURCE_UNKNOWN
        self.positions_error = ""
        self.retry_at = 0.0
        # Positions per ClusterQueue as last read; only the queues a change touched are read again. None: all.
        self.position_cache: dict[str, dict[tuple[str, str], kq.Position]] = {}
        self.stale_queues: set[str] | None = None
        self.failed_queues: set[str] = set()
        self.last_error = ""
        self.flushes = 0
        self.writes = 0
        self.deposed = 0
        self.position_reads = 0
        self.last_refresh_seconds = 0.0
        self._last_heartbeat = float("-inf")
        self._parsed: dict[str, tuple[str, kq.WorkloadRow]] = {}

    # -- hub interface ------------------------------------------------------------------------------------------

    def relisted(self, kind, items: list[dict], resource_version: str) -> None:
        """Replace every known object of ``kind`` by ``items``."""
        self.objects[kind] = {kq.key_of(o): o for o in items if isinstance(o, dict) and kq.key_of(o)}
        self.listed.add(kind)
        if kind in (CQ, LQ, WORKLOAD):
            self.stale_queues = None  # a relist may hide any change: read every queue's positions again
        self._mark()

    def changed(self, kind, event_type: str, obj: dict) -> None:
        """Apply one watch event."""
        if not isinstance(obj, dict) or not kq.key_of(obj):
            return
        before = self.objects[kind].get(kq.key_of(obj))
        if event_type == "DELETED":
            self.objects[kind].pop(kq.key_of(obj), None)
        else:
            self.objects[kind][kq.key_of(obj)] = obj
        for version in (before, obj):
            if version is not None:
                self._touch_queue(kind, version)
        self._mark()

    def _touch_queue(self, kind, obj: dict) -> None:
        """Mark the ClusterQueue whose positions ``obj`` (a Workload, LocalQueue or ClusterQueue) may move."""
        if self.stale_queues is None or kind not in (CQ, LQ, WORKLOAD):
            return
        if kind == CQ:
            self.stale_queues.add(kq.key_of(obj))
        elif kind == LQ:
            self.stale_queues.add(kq.local_queue(obj).cluster_queue)
        else:
            row = kq.workload(obj)
            local = self.objects[LQ].get(f"{row.namespace}/{row.local_queue}")
            self.stale_queues.update(q for q in (row.cluster_queue, kq.local_queue(local).cluster_queue
                                                 if local is not None else "") if q)

    def watch_state(self, watched: dict, unserved: dict) -> None:
        """Optional hub hook: which of our kinds the cluster serves."""
        served = {kind for kind in watched if kind in KINDS}
        if served != self.served:
            self.served = served
            self._mark()

    def leadership_gained(self) -> None:
        """Become the writer: the next flush reconciles everything with the database."""
        self.full = True
        self._mark()

    def flush(self, *, leader: bool) -> None:
        """Write what changed (as leader, once every served kind was listed, after the debounce)."""
        if not leader:
            return
        now = self.clock()
        if self.failed_queues and now >= self.retry_at and self.first_change is None:
            if self.stale_queues is not None:
                self.stale_queues |= self.failed_queues
            self._mark()  # positions the visibility API refused or failed: ask again
        if self.first_change is not None and self._synced() and self._due(now):
            if not self.leader_check():
                self.deposed += 1
                return
            self._refresh(now)
        if now - self._last_heartbeat >= HEARTBEAT_SECONDS:
            if not self.leader_check():
                self.deposed += 1
                return
            self._last_heartbeat = now
            try:
                services.record_state(self._cluster_id(), served=bool(self.served), synced=False, positions=None,
                                      error=self.last_error)
            except DatabaseError as error:
                logger.warning("queue watcher could not record its heartbeat: %s", error)

    def status(self) -> dict:
        """Return counters for the cluster page and tests."""
        return {"objects": {kind.kind: len(self.objects[kind]) for kind in KINDS}, "flushes": self.flushes,
                "writes": self.writes, "deposed": self.deposed, "positionSource": self.position_source,
                "positionsError": self.positions_error, "positionReads": self.position_reads,
                "lastRefreshSeconds": round(self.last_refresh_seconds, 4), "lastError": self.last_error,
                "cluster": getattr(self.cluster, "name", "")}

    def close(self) -> None:
        """Nothing to release."""

    # -- internals ----------------------------------------------------------------------------------------------

    def _mark(self) -> None:
        now = self.clock()
        if self.first_change is None:
            self.first_change = now
        self.last_change = now

    def _due(self, now: float) -> bool:
        return (now - (self.last_change or now) >= self.debounce
                or now - (self.first_change or now) >= self.max_delay)

    def _synced(self) -> bool:
        if self.served is None:
            return WORKLOAD in self.listed and CQ in self.listed and LQ in self.listed
        return self.served <= self.listed

    def _cluster_id(self) -> int:
        if self.cluster is None:
            from trainer_portal.cluster.models import Cluster

            self.cluster = Cluster.objects.get(is_default=True)
        return self.cluster.pk

    def gateway(self):
        """Return the gateway to this handler's cluster (built on first use)."""
        if self._gateway is None:
            from trainer_portal.cluster import informers

            self._gateway = informers.gateway_factory(self.cluster)
        return self._gateway

    def _refresh(self, now: float) -> None:
        started = time.perf_counter()
        self.first_change = self.last_change = None
        try:
            cluster_id = self._cluster_id()
            rows = self._rows()
            changes = {}
            for table, current in rows.items():
                before = self.written[table] if not self.full else {}
                upserts = {k: v for k, v in current.items() if before.get(k) != v}
                deletes = [k for k in before if k not in current]
                changes[table] = (upserts, deletes)
            self.writes += services.apply_changes(cluster_id, changes, full=self.full)
            services.record_state(cluster_id, served=bool(self.served) or bool(self.listed), synced=True,
                                  positions=(self.position_source, self.positions_error), error="")
            self.written, self.full, self.last_error = rows, False, ""
            self.flushes += 1
            self._last_heartbeat = now
        except DatabaseError as error:
            self.last_error = f"database: {error}"
            self._mark()  # try again at the next flush
            logger.warning("queue watcher could not write: %s", error)
        self.last_refresh_seconds = time.perf_counter() - started

    def _rows(self) -> dict[str, dict]:
        cqs = [kq.cluster_queue(o) for o in self.objects[CQ].values()]
        cqs = [c for c in cqs if c.name]
        lqs = [kq.local_queue(o) for o in self.objects[LQ].values()]
        lqs = [q for q in lqs if q.name and q.namespace]
        cq_of = {(q.namespace, q.name): q.cluster_queue for q in lqs}
        workloads = []
        parsed: dict[str, tuple[str, kq.WorkloadRow]] = {}
        for key, obj in self.objects[WORKLOAD].items():
            # Reading thousands of Workloads again on every refresh would dominate it: reuse the row of an
            # unchanged object (same resourceVersion).
            version = kq.meta(obj).get("resourceVersion") or ""
            cached = self._parsed.get(key)
            row = cached[1] if cached and version and cached[0] == version else kq.workload(obj)
            parsed[key] = (version, row)
            if row.name and row.namespace and row.state != kq.FINISHED:
                workloads.append(row)
        self._parsed = parsed
        pending_cqs = sorted({cq_of.get((w.namespace, w.local_queue), "") for w in workloads
                              if w.state == kq.PENDING} - {""})
        positions = self._positions(pending_cqs)
        members: dict[str, list] = {}
        for c in cqs:
            if c.cohort:
                members.setdefault(c.cohort, []).append(c)
        out: dict[str, dict] = {table: {} for table in services.TABLES}
        for obj in self.objects[FLAVOR].values():
            out["flavors"][(kq.key_of(obj),)] = {"node_labels": kq.flavor_labels(obj)}
        cohort_objects = {kq.key_of(o) for o in self.objects[COHORT].values()}
        for name in sorted(cohort_objects | set(members)):
            out["cohorts"][(name[:253],)] = {"has_object": name in cohort_objects}
        for c in cqs:
            usage = [{"flavor": u.flavor, "resource": u.resource, "nominal": u.nominal, "used": u.used,
                      "borrowed": u.borrowed, "lendable": u.lendable, "borrowable": u.borrowable,
                      "borrowingLimit": u.borrowing_limit, "lendingLimit": u.lending_limit}
                     for u in kq.usage_lines(c, members.get(c.cohort, []))]
            out["clusterqueues"][(c.name,)] = {
                "cohort": c.cohort, "queueing_strategy": c.strategy, "fair_sharing_weight": c.weight,
                "weighted_share": c.weighted_share, "usage": usage, "preemption": c.preemption,
                "conditions": list(c.conditions), "pending": c.pending, "reserving": c.reserving,
                "admitted": c.admitted}
        for q in lqs:
            out["localqueues"][(q.namespace, q.name)] = {
                "cluster_queue": q.cluster_queue,
                "usage": [{"flavor": f, "resource": r, "used": v} for (f, r), v in sorted(q.usage.items())],
                "conditions": list(q.conditions), "pending": q.pending, "reserving": q.reserving,
                "admitted": q.admitted}
        for w in workloads:
            position = positions.get((w.namespace, w.name)) if w.state == kq.PENDING else None
            out["workloads"][(w.namespace, w.name)] = {
                "uid": w.uid, "local_queue": w.local_queue,
                "cluster_queue": w.cluster_queue or cq_of.get((w.namespace, w.local_queue), ""), "state": w.state,
                "priority": w.priority, "queued_at": w.queued_at,
                "position_in_cluster_queue": position.in_cluster_queue if position else None,
                "position_in_local_queue": position.in_local_queue if position else None,
                "reason": w.reason, "message": w.message, "job_kind": w.job_kind, "job_name": w.job_name,
                "job_uid": w.job_uid, "requests": w.requests}
        return out

    def _positions(self, cluster_queues: list[str]) -> dict[tuple[str, str], kq.Position]:
        """Return the positions of every pending Workload of ``cluster_queues`` the visibility API gives, reading
        again only the queues a change touched (and those that failed, once ``RETRY_SECONDS`` passed); sets
        ``position_source`` / ``positions_error``. Raises nothing."""
        wanted = set(cluster_queues)
        self.position_cache = {q: p for q, p in self.position_cache.items() if q in wanted}
        self.failed_queues &= wanted
        stale = wanted if self.stale_queues is None else (self.stale_queues & wanted) | (
            wanted - set(self.position_cache) - self.failed_queues)
        if self.failed_queues and self.clock() >= self.retry_at:
            stale |= self.failed_queues
        self.stale_queues = set()
        if stale:
            self._read(sorted(stale))
        if self.failed_queues:
            self.position_source = SOURCE_UNKNOWN
        else:
            self.position_source, self.positions_error = SOURCE_API, ""
        out: dict[tuple[str, str], kq.Position] = {}
        for positions in self.position_cache.values():
            out.update(positions)
        return out

    def _read(self, cluster_queues: list[str]) -> None:
        """Read the positions of ``cluster_queues`` into the cache; a queue that fails is remembered as failed."""
        deadline = time.monotonic() + POSITION_BUDGET_SECONDS
        try:
            gateway = self.gateway()
        except KubeError as error:
            self._failed(cluster_queues, f"no connection: {error.message}")
            return
        self.position_reads += 1
        with ThreadPoolExecutor(max_workers=min(POSITION_PARALLEL, len(cluster_queues))) as pool:
            results = list(pool.map(lambda cq: _read_queue(gateway, cq, deadline), cluster_queues))
        for queue, (found, error) in zip(cluster_queues, results, strict=True):
            if error:
                self._failed([queue], error)
            else:
                self.position_cache[queue] = found
                self.failed_queues.discard(queue)

    def _failed(self, cluster_queues: list[str], error: str) -> None:
        for queue in cluster_queues:
            self.position_cache.pop(queue, None)
            self.failed_queues.add(queue)
        self.positions_error = error
        self.retry_at = self.clock() + RETRY_SECONDS
        logger.info("queue positions unknown: %s", error)


def _read_queue(gateway, cluster_queue: str, deadline: float) -> tuple[dict, str]:
    """Return (positions, error) for one ClusterQueue, page by page. Raises nothing."""
    found: dict[tuple[str, str], kq.Position] = {}
    offset = 0
    path = f"{VISIBILITY}/clusterqueues/{quote(cluster_queue, safe='')}/pendingworkloads"
    while True:
        if time.monotonic() > deadline:
            return found, f"the visibility API did not answer within {POSITION_BUDGET_SECONDS:g} s"
        try:
            page = gateway.request("GET", path, query=[("offset", offset), ("limit", POSITION_PAGE)],
                                   timeout=POSITION_TIMEOUT_SECONDS)
        except KubeForbidden as error:
            return found, f"the visibility API refused us (403): {error.message}"
        except KubeNotFound as error:
            return found, f"the visibility API is not served or does not know {cluster_queue} (404): {error.message}"
        except KubeError as error:
            return found, f"the visibility API failed: {error.message}"
        except Exception as error:  # a malformed answer: positions unknown, never a crashed watcher
            return found, f"the visibility API answered something unreadable: {error}"
        found.update(kq.positions_from_summary(page))
        size = kq.summary_size(page)
        if size < POSITION_PAGE:
            return found, ""
        offset += size


def register_with_hub() -> None:
    """Register the queue watcher with the cluster informer hub."""
    from trainer_portal.cluster import informers

    informers.register(QueueHandler)
