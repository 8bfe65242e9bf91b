"""Writes of the admission tracker: TrainJob rows, their transitions, gone marks, retention and tracker health.

Only the cluster-watch process holding the Lease calls these (``jobs.handlers``). Rules:
- A row is written only when something it shows changed (``JobRecord.digest`` of what it shows, kept in the row):
  a no-op event writes nothing.
- Writes are batched: one SELECT for the batch, then bulk INSERT / UPDATE, in one transaction.
- An older observation never overwrites a newer one: ``observed_version`` is compared with the row's
  ``resource_version`` numerically when both are decimal (etcd revisions); otherwise the later delivery wins.
- Every state change appends one ``TrainJobTransition`` in the same transaction as the row, so a crash can
  neither lose nor duplicate it; ``change_seq`` grows with every write (the conditional-poll token).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from trainer_portal.cluster.models import Cluster, default_cluster_id

from .domain import states
from .domain.records import JobRecord
from .domain.signals import compare_resource_versions
from .errors import InvalidGrant
from .models import NamespaceGrant, TrackerStatus, TrainJob, TrainJobTransition

ClusterRef = Cluster | int | None

logger = logging.getLogger(__name__)

BATCH_SIZE = 500
DEFAULT_RETENTION_DAYS = 30
UPDATED_FIELDS = ("namespace", "name", "runtime_kind", "runtime_name", "num_nodes", "gpus_per_node",
                  "resources_per_node", "level", "queue_name", "creator", "priority_class", "state", "reason",
                  "message", "since", "submitted_at", "admitted_at", "finished_at", "pod_groups", "workload", "pods",
                  "events", "kueue", "resource_version", "digest", "gone_at", "change_seq", "updated_at")
# What a batch reads of its existing rows: enough to decide, never the JSON columns.
DECIDING_FIELDS = ("id", "uid", "digest", "resource_version", "state", "since", "submitted_at", "admitted_at",
                   "finished_at", "gone_at", "change_seq", "updated_at", "level")
# While a job is suspended or queued its PodGroups do not exist (v2.4 deletes them), so the level cannot be read
# from them: the level they showed before stays, as the runtime built them that way.
LEVEL_KEPT_IN = frozenset({states.SUSPENDED, states.QUEUED, states.QUOTA_RESERVED, states.WAITING_FOR_OBJECTS,
                           states.PREEMPTED})


@dataclass
class ApplyResult:
    """What one batch wrote: rows created / updated, rows left alone (no change), stale records skipped,
    transitions appended."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    stale: int = 0
    transitions: int = 0

    @property
    def writes(self) -> int:
        """Return the number of TrainJob rows written."""
        return self.created + self.updated

    def add(self, other: ApplyResult) -> None:
        """Add ``other``'s counts to this one."""
        for name in ("created", "updated", "unchanged", "stale", "transitions"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def is_older(observed: str, stored: str) -> bool:
    """Return True when ``observed`` is an older resourceVersion than ``stored`` (numeric comparison; versions
    that are not decimal integers are never "older": the later delivery wins)."""
    if not observed or not stored:
        return False
    order = compare_resource_versions(observed, stored)
    return order is not None and order < 0


def _cluster_id(cluster: ClusterRef) -> int:
    """Return the primary key of ``cluster`` (a row or a key); the default cluster's when None.

    Raises Cluster.DoesNotExist when None is passed and there is no default cluster.
    """
    if isinstance(cluster, Cluster):
        return cluster.pk
    if cluster is not None:
        return int(cluster)
    found = default_cluster_id()
    if found is None:
        raise Cluster.DoesNotExist("there is no default cluster")
    return found


def _next_seq() -> int:
    """Return the first change_seq for a new batch: above every row and transition written so far."""
    row_max = TrainJob.objects.aggregate(m=Max("change_seq"))["m"] or 0
    transition_max = TrainJobTransition.objects.aggregate(m=Max("seq"))["m"] or 0
    return max(row_max, transition_max) + 1


def _enter_state(row: TrainJob, record: JobRecord, now: dt.datetime) -> None:
    """Set the state timestamps of ``row`` for entering ``record.state``."""
    since = record.since if record.since is not None and record.since <= now else now
    row.since = since
    if record.state in states.ADMITTED_STATES and row.admitted_at is None:
        row.admitted_at = since
    if record.state in states.FINISHED_STATES and row.finished_at is None:
        row.finished_at = since


def _copy(record: JobRecord, row: TrainJob, digest: str) -> None:
    known_level = row.level if row.level and row.level != states.LEVEL_UNKNOWN else ""
    for name in JobRecord.COMPARED:
        setattr(row, name, getattr(record, name))
    if record.level == states.LEVEL_UNKNOWN and record.state in LEVEL_KEPT_IN and known_level:
        row.level = known_level
    row.digest = digest
    if record.submitted_at is not None:
        row.submitted_at = record.submitted_at
    if record.observed_version:
        row.resource_version = record.observed_version


def apply_records(records: Sequence[JobRecord], *, now: dt.datetime | None = None,
                  cluster: ClusterRef = None) -> ApplyResult:
    """Write the records of ``cluster`` (default: the default cluster) that changed something (see the module
    rules); return the counts.

    Records for the same uid later in ``records`` win. Raises DatabaseError when the database fails (the caller
    keeps the records dirty and retries).
    """
    now = now or timezone.now()
    cluster_id = _cluster_id(cluster)
    latest: dict[str, JobRecord] = {}
    for record in records:
        if record.uid:
            latest[record.uid] = record
    result = ApplyResult()
    uids = list(latest)
    for start in range(0, len(uids), BATCH_SIZE):
        result.add(_apply_batch([latest[uid] for uid in uids[start:start + BATCH_SIZE]], now, cluster_id))
    return result


def _apply_batch(records: list[JobRecord], now: dt.datetime, cluster_id: int) -> ApplyResult:
    result = ApplyResult()
    with transaction.atomic():
        existing = {row.uid: row for row in TrainJob.objects.filter(cluster_id=cluster_id,
                                                                    uid__in=[r.uid for r in records])
                    .only(*DECIDING_FIELDS)}
        seq = None
        created: list[TrainJob] = []
        updated: list[TrainJob] = []
        transitions: list[tuple[TrainJob, str, JobRecord]] = []
        for record in records:
            row = existing.get(record.uid)
            if row is not None and is_older(record.observed_version, row.resource_version):
                result.stale += 1
                continue
            digest = record.digest()
            if row is not None and row.gone_at is None and row.digest == digest:
                result.unchanged += 1
                continue
            if seq is None:
                seq = _next_seq()
            if row is None:
                row = TrainJob(cluster_id=cluster_id, uid=record.uid, submitted_at=record.submitted_at or now,
                               since=now)
                _copy(record, row, digest)
                _enter_state(row, record, now)
                row.change_seq = seq
                created.append(row)
                transitions.append((row, "", record))
            else:
                previous = row.state
                _copy(record, row, digest)
                row.gone_at = None
                if previous != record.state:
                    _enter_state(row, record, now)
                    transitions.append((row, previous, record))
                row.change_seq = seq
                row.updated_at = now
                updated.append(row)
            seq += 1
        if created:
            TrainJob.objects.bulk_create(created, batch_size=BATCH_SIZE)
        if updated:
            _update_rows(updated, UPDATED_FIELDS)
        if transitions:
            missing_ids = [row.uid for row, _, _ in transitions if row.pk is None]
            if missing_ids:  # backends that do not return ids from bulk INSERT
                ids = dict(TrainJob.objects.filter(cluster_id=cluster_id, uid__in=missing_ids)
                           .values_list("uid", "id"))
                for row, _, _ in transitions:
                    if row.pk is None:
                        row.pk = ids[row.uid]
            TrainJobTransition.objects.bulk_create([
                TrainJobTransition(job_id=row.pk, cluster_id=cluster_id, from_state=previous, to_state=record.state,
                                   reason=record.reason,
                                   message=record.message[:4000], at=row.since, seq=row.change_seq)
                for row, previous, record in transitions], batch_size=BATCH_SIZE)
        result.created, result.updated, result.transitions = len(created), len(updated), len(transitions)
    return result


def _update_rows(rows: Sequence[TrainJob], names: Sequence[str]) -> None:
    """UPDATE ``names`` of every row by primary key with one prepared statement (executemany).

    Django's ``bulk_update`` builds one CASE expression per field and row; for the tracker's batches of hundreds
    of rows × 27 fields that cost seconds of CPU per flush, this costs milliseconds.
    """
    fields = [TrainJob._meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    # Only model column names (never input) are interpolated; every value is a bound parameter.
    sql = f"UPDATE {quote(TrainJob._meta.db_table)} SET {assignments} WHERE {quote('id')} = %s"  # noqa: S608
    params = [[field.get_db_prep_save(getattr(row, field.attname), connection) for field in fields] + [row.pk]
              for row in rows]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


GONE_REASON = "Deleted"
GONE_MESSAGE = "the TrainJob was deleted from the cluster"


def mark_gone(uids: Iterable[str], *, now: dt.datetime | None = None, cluster: ClusterRef = None) -> int:
    """Mark the rows of ``uids`` on ``cluster`` (default: the default cluster) gone (deleted on the cluster);
    return how many rows changed.

    A finished job keeps its final state; any other state becomes ``unknown`` / ``Deleted`` with a transition, so
    a deleted job is never left showing "running".
    """
    now = now or timezone.now()
    cluster_id = _cluster_id(cluster)
    uids = list(uids)
    changed = 0
    for start in range(0, len(uids), BATCH_SIZE):
        changed += _mark_gone(TrainJob.objects.filter(cluster_id=cluster_id, uid__in=uids[start:start + BATCH_SIZE]),
                              now)
    return changed


def reconcile_listed(present_uids: Iterable[str], *, now: dt.datetime | None = None,
                     cluster: ClusterRef = None) -> int:
    """After a full TrainJob list of ``cluster`` (default: the default cluster): mark every row of that cluster not
    in ``present_uids`` gone; return how many changed."""
    now = now or timezone.now()
    cluster_id = _cluster_id(cluster)
    present = set(present_uids)
    candidates = list(TrainJob.objects.filter(cluster_id=cluster_id, gone_at__isnull=True)
                      .values_list("uid", flat=True))
    return mark_gone([uid for uid in candidates if uid not in present], now=now, cluster=cluster_id)


def _mark_gone(queryset, now: dt.datetime) -> int:
    with transaction.atomic():
        rows = list(queryset.filter(gone_at__isnull=True))
        if not rows:
            return 0
        seq = _next_seq()
        transitions = []
        for row in rows:
            row.gone_at = now
            row.change_seq = seq
            row.updated_at = now
            if row.state not in states.FINISHED_STATES:
                transitions.append(TrainJobTransition(job=row, cluster_id=row.cluster_id, from_state=row.state,
                                                      to_state=states.UNKNOWN,
                                                      reason=GONE_REASON, message=GONE_MESSAGE, at=now, seq=seq))
                row.state, row.reason, row.message, row.since = states.UNKNOWN, GONE_REASON, GONE_MESSAGE, now
            seq += 1
        _update_rows(rows, ("gone_at", "change_seq", "updated_at", "state", "reason", "message", "since"))
        TrainJobTransition.objects.bulk_create(transitions, batch_size=BATCH_SIZE)
    return len(rows)


def retention_days() -> int:
    """Return how many days finished and gone TrainJobs are kept (``TRAINER_PORTAL_JOB_RETENTION_DAYS``)."""
    value = getattr(settings, "JOB_RETENTION_DAYS", DEFAULT_RETENTION_DAYS)
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return DEFAULT_RETENTION_DAYS


def prune_finished(*, now: dt.datetime | None = None, days: int | None = None) -> int:
    """Delete TrainJobs finished or gone more than ``days`` ago (default: the retention setting), with their
    transitions; return how many jobs were deleted. Jobs still on the cluster and unfinished are never pruned."""
    now = now or timezone.now()
    cutoff = now - dt.timedelta(days=days if days is not None else retention_days())
    old = TrainJob.objects.filter(Q(gone_at__lt=cutoff) |
                                  Q(state__in=sorted(states.FINISHED_STATES), finished_at__lt=cutoff))
    rows = list(old.values_list("id", "cluster_id")[:10_000])
    if not rows:
        return 0
    ids = [row_id for row_id, _ in rows]
    per_cluster: dict[int, int] = {}
    for _, cluster_id in rows:
        per_cluster[cluster_id] = per_cluster.get(cluster_id, 0) + 1
    with transaction.atomic():
        TrainJobTransition.objects.filter(job_id__in=ids).delete()
        deleted, _ = TrainJob.objects.filter(id__in=ids).delete()
        # Deleted rows move no change_seq: the counter tells pollers their lists changed.
        for cluster_id, count in sorted(per_cluster.items()):
            TrackerStatus.objects.filter(cluster_id=cluster_id).update(pruned=F("pruned") + count)
    return len(ids) if deleted else 0


def tracker_heartbeat(*, holder: str, connected: bool, synced: bool, tracked: int, writes: int,
                      last_event_at: dt.datetime | None, last_error: str = "",
                      leader_since: dt.datetime | None = None, now: dt.datetime | None = None,
                      cluster: ClusterRef = None) -> TrackerStatus:
    """Record the tracker's health on ``cluster`` (its TrackerStatus row; default: the default cluster); return
    it. ``error_since`` is kept from the first heartbeat that reported the current error."""
    now = now or timezone.now()
    status, _ = TrackerStatus.objects.get_or_create(cluster_id=_cluster_id(cluster))
    if last_error and not status.last_error:
        status.error_since = now
    elif not last_error:
        status.error_since = None
    status.holder = holder[:253]
    status.connected = connected
    status.synced = synced
    status.tracked = tracked
    status.writes = writes
    status.last_error = last_error[:2000]
    status.heartbeat_at = now
    status.last_flush_at = now
    if last_event_at is not None:
        status.last_event_at = last_event_at
    if leader_since is not None:
        status.leader_since = leader_since
    status.change_seq = TrainJob.objects.aggregate(m=Max("change_seq"))["m"] or 0
    status.save()
    return status


_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def namespace_grant_create(*, group_name: str, namespace: str, cluster: str | None = None) -> NamespaceGrant:
    """Let the members of group ``group_name`` see the TrainJobs of ``namespace`` on cluster ``cluster`` (a
    cluster name; None or "" = on every cluster, present and future); return the grant.

    Raises InvalidGrant (field ``namespace``, ``group`` or ``cluster``) for a namespace that is not a DNS label, a
    group or cluster that does not exist, or a grant that exists already.
    """
    from django.contrib.auth.models import Group

    namespace = (namespace or "").strip()
    if not _NAMESPACE.match(namespace):
        raise InvalidGrant(f"{namespace!r} is not a Kubernetes namespace name: use up to 63 lowercase letters, "
                           "digits and '-', starting and ending with a letter or digit", field="namespace")
    group = Group.objects.filter(name=group_name).first()
    if group is None:
        raise InvalidGrant(f"there is no group {group_name!r}: create it first", field="group")
    target = None
    if cluster:
        target = Cluster.objects.filter(name=cluster).first()
        if target is None:
            raise InvalidGrant(f"there is no cluster {cluster!r}: choose one of the portal's clusters, or none for "
                               "every cluster", field="cluster")
    where = f"on cluster {target.name!r}" if target else "on every cluster"
    with transaction.atomic():
        if NamespaceGrant.objects.filter(group=group, namespace=namespace, cluster=target).exists():
            raise InvalidGrant(f"group {group_name!r} already sees namespace {namespace!r} {where}", field="namespace")
        return NamespaceGrant.objects.create(group=group, namespace=namespace, cluster=target)


def namespace_grant_delete(*, group_name: str, namespace: str, cluster: str | None = None) -> bool:
    """Remove the grant of ``namespace`` to ``group_name`` on cluster ``cluster`` (None or "" = the grant on every
    cluster); return False when there was none."""
    scope = {"cluster__name": cluster} if cluster else {"cluster__isnull": True}
    deleted, _ = NamespaceGrant.objects.filter(group__name=group_name, namespace=namespace, **scope).delete()
    return bool(deleted)
