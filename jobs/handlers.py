"""The admission tracker: a cluster-watch handler that keeps an ownership index of the objects around TrainJobs
and, on every flush, recomputes only the jobs a change touched and writes what changed.

It runs in the ``cluster_watch`` process, inside the informer hub of one cluster (one list+watch per kind per
cluster, shared with the topology snapshot); every write carries that cluster. It writes only while this process
holds the cluster's Lease (``needs_leader``), and asks the elector again right before every write (``leader_check``),
so a leader deposed mid-flush writes nothing more. The hub calls every method from its one dispatch thread.

Never frozen, never lying: a record that cannot even be computed (an object of the wrong shape) or that the
database refuses alone is quarantined (logged, counted in TrackerStatus.quarantined, retried only when the object
changes again) and every other row is written; a silent or failing watch is reported at once (``connected=False``
with the reason), not at the next regular heartbeat.
"""

from __future__ import annotations

import datetime as dt
import gc
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import DatabaseError, connection
from django.utils import timezone

from trainer_portal.kube import resources as kinds

from . import services
from .domain import ownership
from .domain.records import job_record
from .domain.signals import compare_resource_versions, resource_version_of, uid_of

logger = logging.getLogger(__name__)

KIND_NAMES = {
    kinds.TRAINJOB: ownership.TRAINJOB,
    kinds.WORKLOAD: ownership.WORKLOAD,
    kinds.PODGROUP: ownership.PODGROUP,
    kinds.POD: ownership.POD,
    kinds.JOBSET: ownership.JOBSET,
    kinds.KUEUE_WORKLOAD: ownership.KUEUE_WORKLOAD,
    kinds.EVENT: ownership.EVENT,
}
# Event kinds worth keeping: what a job's detail page shows (kube-scheduler's FailedScheduling / Scheduled, …).
EVENT_OBJECT_KINDS = frozenset({"TrainJob", "Workload", "PodGroup", "Pod", "JobSet"})
HEARTBEAT_SECONDS = 2.0
PRUNE_SECONDS = 600.0
# Without word from the hub about which kinds the cluster serves, start writing this long after the TrainJob list
# even if some kinds never listed (JobSet / Kueue not installed).
SYNC_GRACE_SECONDS = 10.0


def _newer(a: str, b: str) -> str:
    """Return the newer of two resourceVersions (numeric when both are; otherwise ``a`` when set)."""
    if not b:
        return a
    if not a:
        return b
    order = compare_resource_versions(a, b)
    if order is None:
        return a
    return a if order >= 0 else b


# An index this large is frozen out of the cyclic collector after a full reconcile (below: not worth it).
FREEZE_MIN_OBJECTS = 50_000


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with Python's cyclic garbage collector paused (as it was after).

    The index holds millions of small containers that form no cycles; the collector, triggered by allocation
    counts, would traverse all of them again and again during a relist or a large flush (a fifth of the CPU of a
    30,000-job sync). Garbage is still freed by reference counting meanwhile; cycles wait for the next collection.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class AdmissionHandler:
    """Informer-hub handler tracking every TrainJob's admission state into ``jobs.models``."""

    name = "jobs.admission"
    kinds = tuple(KIND_NAMES)
    needs_leader = True

    def __init__(self, *, cluster=None, clock: Callable[[], float] = time.monotonic,
                 identity: str | None = None) -> None:
        self.cluster = cluster
        self.leader_check: Callable[[], bool] = lambda: True  # the hub sets its Lease check
        self.clock = clock
        self.identity = identity or f"{socket.gethostname()}_{os.getpid()}"
        self.index = ownership.OwnershipIndex()
        self.dirty: set[str] = set()
        self.deleted: set[str] = set()
        self.known_jobs: set[str] = set()
        self.observed: dict[str, str] = {}
        self.listed: set[str] = set()
        self.served: set[str] | None = None  # kinds the hub watches, when it tells us
        self.trainjobs_listed_at: float | None = None
        self.reconcile_listed = False
        self.full = True
        self.full_version = ""  # the newest list version seen while a full reconcile is pending
        self.leader_since: dt.datetime | None = None
        self.last_event_at: dt.datetime | None = None
        self.last_error = ""
        self.watch_error = ""
        self.synced = False
        self.writes = 0
        self.transitions = 0
        self.unchanged = 0
        self.stale = 0
        self.flushes = 0
        self.events = 0
        self.sanitized = 0
        self.quarantined = 0
        self.deposed = 0
        self._reported_error: str | None = None
        self._last_heartbeat = float("-inf")
        self._last_prune = float("-inf")
        self._watch_marks: dict[object, tuple[int, tuple[int, ...], str]] = {}
        self._relaxed_connection: object = None  # the DB-API connection set to asynchronous commits

    # -- hub interface ------------------------------------------------------------------------------------------

    def relisted(self, kind, items: list[dict], resource_version: str) -> None:
        """Replace every known object of ``kind`` by ``items`` and mark the jobs that changed dirty."""
        with collector_paused():
            self._relisted(kind, items, resource_version)

    def _relisted(self, kind, items: list[dict], resource_version: str) -> None:
        name = KIND_NAMES[kind]
        if name == ownership.EVENT:
            items = [e for e in items if self._wanted_event(e)]
        if self.full:
            # Every job is recomputed at the next write anyway: skip resolving which ones this list touched (most
            # of a first sync's cost) and remember its version, the observation every job's record is as of.
            self.index.replace(name, items, affected=False)
            self.full_version = _newer(resource_version, self.full_version)
        else:
            self._touch(self.index.replace(name, items), resource_version)
        self.listed.add(name)
        if name == ownership.TRAINJOB:
            self.known_jobs.update(self.index.trainjob_uids())
            self.reconcile_listed = True
            if self.trainjobs_listed_at is None:
                self.trainjobs_listed_at = self.clock()
        self.last_event_at = timezone.now()

    def changed(self, kind, event_type: str, obj: dict) -> None:
        """Apply one watch event to the index and mark the jobs it touches dirty."""
        name = KIND_NAMES[kind]
        if name == ownership.EVENT and not self._wanted_event(obj):
            return
        self.events += 1
        if event_type == "DELETED":
            affected = self.index.delete(name, obj)
            if name == ownership.TRAINJOB and uid_of(obj):
                if self.full:  # the pending full reconcile marks it gone (it is not in the index any more)
                    self.known_jobs.discard(uid_of(obj))
                    self.observed.pop(uid_of(obj), None)
                else:
                    self.deleted.add(uid_of(obj))
        else:
            affected = self.index.upsert(name, obj)
            if name == ownership.TRAINJOB and uid_of(obj):
                self.known_jobs.add(uid_of(obj))
                self.deleted.discard(uid_of(obj))
        self._touch(affected, resource_version_of(obj))
        self.last_event_at = timezone.now()

    def leadership_gained(self) -> None:
        """Become the writer: the next flush reconciles every known job with the database."""
        self.full = True
        self.leader_since = timezone.now()

    def watch_state(self, watched: dict, unserved: dict) -> None:
        """Optional hub hook: the watched kinds (``{kind: WatchStats}``) and the unserved ones.

        Tells when the first sync is complete (every watched kind listed) and whether the cluster is reachable: a
        kind whose error count grew while it made no progress (no event, list, bookmark or clean stream end) is
        failing; any progress clears it.
        """
        self.served = {KIND_NAMES[k] for k in watched if k in KIND_NAMES}
        failing = ""
        for kind, stats in watched.items():
            errors = getattr(stats, "errors", 0)
            # A stream that ended normally counts a reconnect without an error: that is progress too.
            progress = (getattr(stats, "events", 0), getattr(stats, "relists", 0), getattr(stats, "bookmarks", 0),
                        getattr(stats, "reconnects", 0) - errors, getattr(stats, "idles", 0))
            before_errors, before_progress, error = self._watch_marks.get(kind, (0, progress, ""))
            if progress != before_progress:
                error = ""
            elif errors > before_errors:
                error = getattr(stats, "last_error", "") or "watch failing"
            self._watch_marks[kind] = (errors, progress, error)
            failing = failing or error
        self.watch_error = failing

    def flush(self, *, leader: bool) -> None:
        """Write the dirty jobs (only as leader, and only once the first list of every served kind arrived)."""
        if not leader:
            return
        if self.leader_since is None:
            self.leader_since = timezone.now()
        now = self.clock()
        self.synced = self._is_synced(now)
        if self.synced:
            if not self.leader_check():
                self.deposed += 1  # the Lease's renew deadline passed since the hub asked: write nothing
                return
            try:
                full = self.full
                self._commit_asynchronously()
                with collector_paused():
                    self._write()
                if full and sum(map(self.index.count, ownership.KINDS)) >= FREEZE_MIN_OBJECTS:
                    # The index now holds what the cluster holds: move it out of the collector's sight, so the
                    # collections during event processing traverse only what changed since (a full traversal of
                    # millions of objects is a lag spike of a second).
                    gc.freeze()
                self.last_error = ""
            except DatabaseError as error:
                # The next successful flush reconciles every job: the failed batch is retried, and so is whatever
                # an acknowledged asynchronous commit lost if the database went down (see _commit_asynchronously).
                self.full = True
                self.last_error = f"database: {error}"
                logger.warning("admission tracker could not write: %s", error)
        reported = self.watch_error or self.last_error
        if now - self._last_heartbeat >= HEARTBEAT_SECONDS or reported != self._reported_error:
            if not self.leader_check():
                self.deposed += 1
                return
            self._heartbeat(now)
        if self.synced and now - self._last_prune >= PRUNE_SECONDS:
            self._last_prune = now
            try:
                services.prune_finished(cluster=self.cluster)
            except DatabaseError as error:
                logger.warning("admission tracker could not prune: %s", error)

    def status(self) -> dict:
        """Return counters for the cluster page and tests."""
        return {"tracked": self.index.count(ownership.TRAINJOB), "dirty": len(self.dirty), "synced": self.synced,
                "writes": self.writes, "transitions": self.transitions, "unchanged": self.unchanged,
                "stale": self.stale, "flushes": self.flushes, "events": self.events, "listed": sorted(self.listed),
                "objects": {kind: self.index.count(kind) for kind in ownership.KINDS}, "lastError": self.last_error,
                "watchError": self.watch_error, "sanitized": self.sanitized, "quarantined": self.quarantined,
                "deposed": self.deposed, "cluster": getattr(self.cluster, "name", "")}

    def close(self) -> None:
        """Last words on the way out: nothing to release (the hub flushed already)."""

    # -- internals ----------------------------------------------------------------------------------------------

    @staticmethod
    def _wanted_event(event: dict) -> bool:
        involved = ownership.event_involved(event)
        return involved.get("kind") in EVENT_OBJECT_KINDS and bool(involved.get("uid"))

    def _touch(self, affected: set[str], resource_version: str) -> None:
        # While a full reconcile is pending (a standby, or before the first write) every job is recomputed
        # anyway: only the versions are kept, so a standby's sets do not grow with every event.
        track = not self.full
        jobs = self.index.objects[ownership.TRAINJOB]
        for uid in affected:
            if track:
                self.dirty.add(uid)
            if resource_version and uid in jobs:
                self.observed[uid] = _newer(resource_version, self.observed.get(uid, ""))

    def _is_synced(self, now: float) -> bool:
        if ownership.TRAINJOB not in self.listed:
            return False
        if self.served is not None:
            return self.served <= self.listed
        required = {ownership.TRAINJOB, ownership.WORKLOAD, ownership.PODGROUP, ownership.POD}
        if required <= self.listed and set(KIND_NAMES.values()) <= self.listed:
            return True
        return self.trainjobs_listed_at is not None and now - self.trainjobs_listed_at >= SYNC_GRACE_SECONDS

    def _write(self) -> None:
        if self.full:
            self.dirty.update(self.index.trainjob_uids())
            self.reconcile_listed = True
        dirty, deleted = self.dirty, self.deleted
        full_version = self.full_version if self.full else ""
        records = []
        for uid in dirty:
            tree = self.index.tree(uid)
            if tree is None:
                if uid in self.known_jobs:
                    deleted.add(uid)
                continue
            try:
                record = job_record(tree)
                observed = _newer(self.observed.get(uid, ""), record.observed_version)
                record.observed_version = _newer(full_version, observed) if full_version else observed
            except Exception:  # an object of a shape nothing expects: skip it, keep tracking every other job
                self.quarantined += 1
                logger.exception("admission tracker: quarantined TrainJob uid %s: its objects cannot be read", uid)
                continue
            records.append(record)
        result = services.apply_records(records, cluster=self.cluster)
        self.sanitized += result.sanitized
        self.quarantined += result.quarantined
        gone = services.mark_gone(deleted, cluster=self.cluster) if deleted else 0
        if self.reconcile_listed:
            gone += services.reconcile_listed(self.index.trainjob_uids(), cluster=self.cluster)
        self.writes += result.writes + gone
        self.transitions += result.transitions
        self.unchanged += result.unchanged
        self.stale += result.stale
        self.flushes += 1
        for uid in deleted:
            self.known_jobs.discard(uid)
            self.observed.pop(uid, None)
        self.dirty, self.deleted = set(), set()
        self.full = self.reconcile_listed = False
        self.full_version = ""

    def _commit_asynchronously(self) -> None:
        """On PostgreSQL, let this connection's commits return before their WAL is flushed to disk
        (``synchronous_commit = off``), once per database connection.

        The rows are a copy of what the cluster holds: a crash of the database may lose the last fraction of a
        second of acknowledged commits, never corrupt anything, and the tracker then reconciles every job at its
        next successful flush (a failed write sets ``full``). Waiting for each commit's disk flush was a third of
        the wall time of a busy event stream. Raises DatabaseError when the database does not answer.
        """
        if connection.vendor != "postgresql":
            return
        connection.ensure_connection()
        if connection.connection is self._relaxed_connection:
            return
        with connection.cursor() as cursor:
            cursor.execute("SET synchronous_commit TO off")
        self._relaxed_connection = connection.connection

    def _heartbeat(self, now: float) -> None:
        self._last_heartbeat = now
        error = self.watch_error or self.last_error
        try:
            services.tracker_heartbeat(holder=self.identity, connected=not self.watch_error, synced=self.synced,
                                       tracked=self.index.count(ownership.TRAINJOB), writes=self.writes,
                                       last_event_at=self.last_event_at, last_error=error,
                                       leader_since=self.leader_since, cluster=self.cluster,
                                       quarantined=self.quarantined, sanitized=self.sanitized)
            self._reported_error = error
        except DatabaseError as exc:
            logger.warning("admission tracker could not record its heartbeat: %s", exc)


def register_with_hub() -> None:
    """Register the admission handler with the cluster informer hub, when this build has one."""
    try:
        from trainer_portal.cluster import informers
    except ImportError:  # a build without the shared cluster watcher: nothing to register with
        return
    informers.register(AdmissionHandler)
