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
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from trainer_portal.cluster.models import Cluster, default_cluster_id

from .domain import states
from .domain.records import JobRecord
from .domain.sanitize import sanitize_record
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
    transitions appended, records repaired before writing (``sanitized``) and records the database refused even
    alone (``quarantined``, their uids in ``quarantined_uids``)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    stale: int = 0
    transitions: int = 0
    sanitized: int = 0
    quarantined: int = 0
    quarantined_uids: list[str] = field(default_factory=list)

    @property
    def writes(self) -> int:
        """Return the number of TrainJob rows written."""
        return self.created + self.updated

    def add(self, other: ApplyResult) -> None:
        """Add ``other``'s counts to this one."""
        for name in ("created", "updated", "unchanged", "stale", "transitions", "sanitized", "quarantined"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.quarantined_uids.extend(other.quarantined_uids)


# -- which cluster a write belongs to ------------------------------------------------------------------------------
# Every tracker write names the cluster it tracks (a Cluster row or its key; None: the default cluster).


def _scope(queryset, cluster: ClusterRef):
    """Return ``queryset`` narrowed to ``cluster``'s rows (None: the default cluster)."""
    return queryset.filter(cluster_id=_cluster_id(cluster))


def _cluster_fields(model, cluster: ClusterRef) -> dict:
    """Return the constructor keywords that put a new ``model`` row on ``cluster``."""
    return {"cluster_id": _cluster_id(cluster)}


def _column_limits() -> dict[str, int]:
    """Return ``{field: max_length}`` of TrainJob's bounded text columns (what the sanitiser cuts to)."""
    return {f.name: f.max_length for f in TrainJob._meta.concrete_fields if getattr(f, "max_length", None)}


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


def apply_records(records: Sequence[JobRecord], *, cluster=None, now: dt.datetime | None = None) -> ApplyResult:
    """Write the records that changed something (see the module rules) for ``cluster`` (a Cluster row; None: the
    default one); return the counts.

    Records for the same uid later in ``records`` win. Every record is sanitised first (no NUL, no invalid code
    point, cut to its column: ``result.sanitized``). When a batch fails, its records are written one by one and a
    record the database refuses alone is skipped and reported in ``result.quarantined_uids``: one bad object never
    holds back the others. Raises DatabaseError when the database itself fails (the caller keeps the records dirty
    and retries).
    """
    now = now or timezone.now()
    cluster = _cluster_id(cluster)  # once: every row and query of the batch carries the same key
    limits = _column_limits()
    latest: dict[str, JobRecord] = {}
    result = ApplyResult()
    for record in records:
        if sanitize_record(record, limits):
            result.sanitized += 1
        if record.uid:
            latest[record.uid] = record
    uids = list(latest)
    for start in range(0, len(uids), BATCH_SIZE):
        batch = [latest[uid] for uid in uids[start:start + BATCH_SIZE]]
        try:
            result.add(_apply_batch(batch, now, cluster))
        except DatabaseError as error:
            result.add(_apply_one_by_one(batch, now, cluster, error))
    return result


def _apply_one_by_one(records: list[JobRecord], now: dt.datetime, cluster, error: DatabaseError) -> ApplyResult:
    """Retry a failed batch record by record; quarantine the records that fail alone while the database answers.

    Raises DatabaseError (the batch's) when the database does not answer at all.
    """
    logger.warning("admission tracker: a batch of %d rows failed (%s); writing them one by one", len(records), error)
    result = ApplyResult()
    for record in records:
        try:
            result.add(_apply_batch([record], now, cluster))
        except DatabaseError as row_error:
            if not _database_answers():
                raise error from row_error
            result.quarantined += 1
            result.quarantined_uids.append(record.uid)
            logger.error("admission tracker: quarantined TrainJob %s/%s (uid %s): the database refuses it: %s",
                         record.namespace, record.name, record.uid, row_error)
    return result


def _database_answers() -> bool:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError:
        return False


def _apply_batch(records: list[JobRecord], now: dt.datetime, cluster=None) -> ApplyResult:
    result = ApplyResult()
    with transaction.atomic():
        existing = {row.uid: row for row in _scope(TrainJob.objects, cluster)
                    .filter(uid__in=[r.uid for r in records]).only(*DECIDING_FIELDS)}
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
                row = TrainJob(uid=record.uid, submitted_at=record.submitted_at or now, since=now,
                               **_cluster_fields(TrainJob, cluster))
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
                ids = dict(_scope(TrainJob.objects, cluster).filter(uid__in=missing_ids).values_list("uid", "id"))
                for row, _, _ in transitions:
                    if row.pk is None:
                        row.pk = ids[row.uid]
            TrainJobTransition.objects.bulk_create([
                TrainJobTransition(job_id=row.pk, from_state=previous, to_state=record.state, reason=record.reason,
                                   message=record.message[:4000], at=row.since, seq=row.change_seq,
                                   **_cluster_fields(TrainJobTransition, cluster))
                for row, previous, record in transitions], batch_size=BATCH_SIZE)
        result.created, result.updated, result.transitions = len(created), len(updated), len(transitions)
    return result


def _update_rows(rows: Sequence[TrainJob], names: Sequence[str]) -> None:
    """UPDATE ``names`` of every row by primary key with one statement executed for each row (executemany).

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


def mark_gone(uids: Iterable[str], *, cluster=None, now: dt.datetime | None = None) -> int:
    """Mark the rows of ``uids`` gone (deleted on the cluster); return how many rows changed.

    A finished job keeps its final state; any other state becomes ``unknown`` / ``Deleted`` with a transition, so
    a deleted job is never left showing "running".
    """
    now = now or timezone.now()
    cluster = _cluster_id(cluster)
    uids = list(uids)
    changed = 0
    for start in range(0, len(uids), BATCH_SIZE):
        changed += _mark_gone(_scope(TrainJob.objects, cluster).filter(uid__in=uids[start:start + BATCH_SIZE]), now,
                              cluster)
    return changed


def reconcile_listed(present_uids: Iterable[str], *, cluster=None, now: dt.datetime | None = None) -> int:
    """After a full TrainJob list of ``cluster``: mark every row of it not in ``present_uids`` gone; return how many
    changed."""
    now = now or timezone.now()
    cluster = _cluster_id(cluster)
    present = set(present_uids)
    candidates = list(_scope(TrainJob.objects, cluster).filter(gone_at__isnull=True).values_list("uid", flat=True))
    return mark_gone([uid for uid in candidates if uid not in present], cluster=cluster, now=now)


def _mark_gone(queryset, now: dt.datetime, cluster=None) -> int:
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
                transitions.append(TrainJobTransition(job=row, from_state=row.state, to_state=states.UNKNOWN,
                                                      reason=GONE_REASON, message=GONE_MESSAGE, at=now, seq=seq,
                                                      **_cluster_fields(TrainJobTransition, cluster)))
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


def prune_finished(*, cluster=None, now: dt.datetime | None = None, days: int | None = None) -> int:
    """Delete TrainJobs finished or gone more than ``days`` ago (default: the retention setting), with their
    transitions; return how many jobs were deleted. Jobs still on the cluster and unfinished are never pruned."""
    now = now or timezone.now()
    cutoff = now - dt.timedelta(days=days if days is not None else retention_days())
    old = _scope(TrainJob.objects, cluster).filter(Q(gone_at__lt=cutoff) |
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
        _tracker_rows(cluster).update(pruned=F("pruned") + len(ids))
    return len(ids) if deleted else 0


def _tracker_rows(cluster):
    """Return the TrackerStatus queryset of ``cluster`` (None: the default cluster)."""
    return _scope(TrackerStatus.objects, cluster)


def tracker_heartbeat(*, holder: str, connected: bool, synced: bool, tracked: int, writes: int,
                      last_event_at: dt.datetime | None, last_error: str = "",
                      leader_since: dt.datetime | None = None, now: dt.datetime | None = None,
                      cluster=None, quarantined: int | None = None, sanitized: int | None = None) -> TrackerStatus:
    """Record the tracker's health (the TrackerStatus row of ``cluster``; None: the default one); return it.
    ``error_since`` is kept from the first heartbeat that reported the current error. ``quarantined`` /
    ``sanitized`` are the tracker's running counts of objects it could not store / had to repair."""
    now = now or timezone.now()
    status, _ = TrackerStatus.objects.get_or_create(**_cluster_fields(TrackerStatus, cluster))
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
    if quarantined is not None:
        status.quarantined = quarantined
    if sanitized is not None:
        status.sanitized = sanitized
    status.change_seq = _scope(TrainJob.objects, cluster).aggregate(m=Max("change_seq"))["m"] or 0
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
