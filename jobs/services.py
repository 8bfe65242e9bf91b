"""Writes of the admission tracker: TrainJob rows, their transitions, gone marks, retention and tracker health.

Only the cluster-watch process holding the Lease calls these (``jobs.handlers``). Rules:
- A row is written only when something it shows changed (a digest of what it shows, kept in the row, one hash per
  column group: ``DIGEST_PARTS``): a no-op event writes nothing, and a write sets only the columns that changed.
- Writes are batched: one SELECT for the batch, then bulk INSERT / UPDATE, in one transaction. Each JSON column is
  encoded once (by the sanitiser); that text is hashed and stored.
- An older observation never overwrites a newer one: ``observed_version`` is compared with the row's
  ``resource_version`` numerically when both are decimal (etcd revisions); otherwise the later delivery wins.
- Every state change appends one ``TrainJobTransition`` in the same transaction as the row, so a crash can
  neither lose nor duplicate it; ``change_seq`` grows with every write (the conditional-poll token).
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import hashlib
import json
import logging
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from trainer_portal.cluster.models import Cluster, default_cluster_id

from .domain import states
from .domain.records import JobRecord
from .domain.sanitize import JSON_FIELDS, sanitize_record
from .domain.signals import compare_resource_versions
from .errors import InvalidGrant
from .models import NamespaceGrant, TrackerStatus, TrainJob, TrainJobTransition

ClusterRef = Cluster | int | None

logger = logging.getLogger(__name__)

BATCH_SIZE = 500
# A write that creates this many rows (the first sync of a cluster) refreshes the planner's statistics.
ANALYZE_AFTER_CREATED = 1_000
DEFAULT_RETENTION_DAYS = 30
# The columns a record shows besides its JSON ones (``JSON_FIELDS``): compared together, written together.
SCALAR_COLUMNS = tuple(name for name in JobRecord.COMPARED if name not in JSON_FIELDS)
# A row's digest is one hash per part: its scalar columns together, then each JSON column. Equal digests mean the row
# would show the same; equal parts tell which columns a write can leave alone without reading them.
DIGEST_PARTS = ("scalars", *JSON_FIELDS)
PART_HEX = 16  # 64 bits per part: a changed column is never mistaken for an unchanged one in practice
DIGEST_LENGTH = PART_HEX * len(DIGEST_PARTS)  # fits TrainJob.digest (max_length 128)
# Every column of a new row, in the order it is written.
INSERTED_FIELDS = ("cluster_id", "uid", *SCALAR_COLUMNS, *JSON_FIELDS, "queue_position", "since", "submitted_at",
                   "admitted_at", "finished_at", "resource_version", "digest", "gone_at", "change_seq", "updated_at")
TRANSITION_FIELDS = ("job_id", "cluster_id", "from_state", "to_state", "reason", "message", "at", "seq")
# What a batch reads of its existing rows: enough to decide and to know what changed, never the JSON columns.
DECIDING_FIELDS = ("id", "uid", "digest", "resource_version", "state", "level", "submitted_at", "admitted_at",
                   "finished_at", "gone_at")
_JSON = frozenset(JSON_FIELDS)
_JSONB_CAST = "::jsonb"
# The PostgreSQL array type a column's values are sent as (``_update``): text, never varchar(n), whose cast would cut
# an over-long value silently where the column refuses it.
_ARRAY_TYPES = {"CharField": "text", "TextField": "text", "JSONField": "text", "PositiveIntegerField": "bigint",
                "IntegerField": "bigint", "BigIntegerField": "bigint", "DateTimeField": "timestamptz"}
# The scalar part's text: a JSON array keeps the columns apart whatever they contain.
_SCALARS_TEXT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
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


def _enter_state(values: dict, record: JobRecord, now: dt.datetime, admitted_at, finished_at) -> None:
    """Put into ``values`` the state timestamps of entering ``record.state`` (``admitted_at`` / ``finished_at``: the
    row's, None for a new row)."""
    since = record.since if record.since is not None and record.since <= now else now
    values["since"] = since
    if record.state in states.ADMITTED_STATES and admitted_at is None:
        values["admitted_at"] = since
    if record.state in states.FINISHED_STATES and finished_at is None:
        values["finished_at"] = since


def _part_hash(text: str) -> str:
    """Return the 16-hex-digit hash of ``text`` (one digest part)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=PART_HEX // 2).hexdigest()


def _digest_parts(record: JobRecord, texts: dict[str, str]) -> tuple[str, ...]:
    """Return the hash of each of ``DIGEST_PARTS`` of ``record`` (``texts``: its JSON columns' canonical text)."""
    scalars = _SCALARS_TEXT.encode([getattr(record, name) for name in SCALAR_COLUMNS])
    return (_part_hash(scalars), *(_part_hash(texts[name]) for name in JSON_FIELDS))


def _stored_parts(digest: str) -> tuple[str, ...] | None:
    """Return the part hashes of a stored digest; None when it has another form (written before the digest had
    parts: every column counts as changed)."""
    if len(digest) != DIGEST_LENGTH:
        return None
    return tuple(digest[i:i + PART_HEX] for i in range(0, DIGEST_LENGTH, PART_HEX))


@dataclass(slots=True)
class _Item:
    """A sanitised record with the canonical text of its JSON columns (what is hashed and what is stored)."""

    record: JobRecord
    texts: dict[str, str]

    @property
    def uid(self) -> str:
        return self.record.uid

    @property
    def namespace(self) -> str:
        return self.record.namespace

    @property
    def name(self) -> str:
        return self.record.name


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
    latest: dict[str, _Item] = {}
    result = ApplyResult()
    for record in records:
        texts: dict[str, str] = {}
        if sanitize_record(record, limits, texts):
            result.sanitized += 1
        if record.uid:
            latest[record.uid] = _Item(record, texts)
    uids = list(latest)
    for start in range(0, len(uids), BATCH_SIZE):
        batch = [latest[uid] for uid in uids[start:start + BATCH_SIZE]]
        try:
            result.add(_apply_batch(batch, now, cluster))
        except DatabaseError as error:
            result.add(_apply_one_by_one(batch, now, cluster, error))
    if result.created >= ANALYZE_AFTER_CREATED:
        _analyze()
    return result


def _analyze() -> None:
    """Refresh PostgreSQL's statistics of the TrainJob tables (nothing elsewhere). After the first sync's bulk
    insert they still describe an empty table until autovacuum comes round (up to a minute later): meanwhile the
    planner reads a whole cluster's rows to find a batch's 500 uids instead of probing the unique index. Failing
    is only logged: the rows are written."""
    if connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(TrainJob._meta.db_table)}, "
                           f"{connection.ops.quote_name(TrainJobTransition._meta.db_table)}")
    except DatabaseError as error:
        logger.warning("admission tracker: could not refresh the TrainJob statistics: %s", error)


def _apply_one_by_one(items: list[_Item], now: dt.datetime, cluster, error: DatabaseError) -> ApplyResult:
    """Retry a failed batch record by record; quarantine the records that fail alone while the database answers.

    Raises DatabaseError (the batch's) when the database does not answer at all.
    """
    logger.warning("admission tracker: a batch of %d rows failed (%s); writing them one by one", len(items), error)
    result = ApplyResult()
    for item in items:
        try:
            result.add(_apply_batch([item], now, cluster))
        except DatabaseError as row_error:
            if not _database_answers():
                raise error from row_error
            result.quarantined += 1
            result.quarantined_uids.append(item.uid)
            logger.error("admission tracker: quarantined TrainJob %s/%s (uid %s): the database refuses it: %s",
                         item.namespace, item.name, item.uid, row_error)
    return result


def _database_answers() -> bool:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError:
        return False


def _apply_batch(items: list[_Item], now: dt.datetime, cluster=None) -> ApplyResult:
    """Write one batch in one transaction: INSERT the new rows, UPDATE only the changed columns of the others (rows
    grouped by their set of changed columns), append the transitions; return the counts.

    Raises DatabaseError when the database refuses any statement (nothing of the batch is written).
    """
    result = ApplyResult()
    cluster = _cluster_id(cluster)
    with transaction.atomic():
        existing = _existing_rows([item.uid for item in items], cluster)
        seq = None
        created: list[dict] = []
        updates: dict[tuple[str, ...], list[list]] = {}
        # (new row's uid or existing row's id, previous state, record, since, seq)
        transitions: list[tuple[str | int, str, JobRecord, dt.datetime, int]] = []
        for item in items:
            record = item.record
            row = existing.get(record.uid)
            if row is not None and is_older(record.observed_version, row.resource_version):
                result.stale += 1
                continue
            parts = _digest_parts(record, item.texts)
            digest = "".join(parts)
            if row is not None and row.gone_at is None and row.digest == digest:
                result.unchanged += 1
                continue
            if seq is None:
                seq = _next_seq()
            if row is None:
                values = _new_row(record, item.texts, digest, now, seq, cluster)
                created.append(values)
                transitions.append((record.uid, "", record, values["since"], seq))
            else:
                values = _changed_values(row, record, item.texts, parts, digest, now, seq)
                updates.setdefault(tuple(values), []).append([*values.values(), row.id])
                if row.state != record.state:
                    transitions.append((row.id, row.state, record, values["since"], seq))
            seq += 1
        if created:
            _insert(TrainJob, INSERTED_FIELDS, [[values[name] for name in INSERTED_FIELDS] for values in created])
        for names, rows in updates.items():
            _update(names, rows)
        if transitions:
            ids = {}
            if created:
                ids = dict(_scope(TrainJob.objects, cluster).filter(uid__in=[values["uid"] for values in created])
                           .values_list("uid", "id"))
            _insert(TrainJobTransition, TRANSITION_FIELDS, [
                [ids[job] if isinstance(job, str) else job, cluster, previous, record.state, record.reason,
                 record.message[:4000], since, row_seq]
                for job, previous, record, since, row_seq in transitions])
        result.created, result.transitions = len(created), len(transitions)
        result.updated = sum(len(rows) for rows in updates.values())
    return result


_Existing = collections.namedtuple("_Existing", DECIDING_FIELDS)


def _existing_rows(uids: list[str], cluster: int) -> dict[str, _Existing]:
    """Return ``{uid: its DECIDING_FIELDS}`` of the rows of ``uids`` on ``cluster``.

    PostgreSQL: the uids are sent as one array (no 500-literal IN list to quote here and parse there).
    """
    if connection.vendor != "postgresql":
        rows = _scope(TrainJob.objects, cluster).filter(uid__in=uids).values_list(*DECIDING_FIELDS)
        return {entry.uid: entry for entry in map(_Existing._make, rows)}
    quote = connection.ops.quote_name
    fields = [TrainJob._meta.get_field(name) for name in DECIDING_FIELDS]
    sql = (f"SELECT {', '.join(quote(field.column) for field in fields)} "  # noqa: S608 (model names only)
           f"FROM {quote(TrainJob._meta.db_table)} "
           f"WHERE {quote('cluster_id')} = %s AND {quote('uid')} = ANY(%b::text[])")
    with _postgres_cursor(sql, len(uids)) as cursor:
        cursor.execute(sql, [cluster, uids])
        return {entry.uid: entry for entry in map(_Existing._make, cursor.fetchall())}


def _new_row(record: JobRecord, texts: dict[str, str], digest: str, now: dt.datetime, seq: int, cluster: int) -> dict:
    """Return every column of the new row of ``record`` (``INSERTED_FIELDS``; JSON columns as their text)."""
    values = {name: getattr(record, name) for name in SCALAR_COLUMNS}
    values.update(texts)
    values.update(cluster_id=cluster, uid=record.uid, queue_position=None, submitted_at=record.submitted_at or now,
                  admitted_at=None, finished_at=None, resource_version=record.observed_version, digest=digest,
                  gone_at=None, change_seq=seq, updated_at=now)
    _enter_state(values, record, now, None, None)
    return values


def _changed_values(row, record: JobRecord, texts: dict[str, str], parts: tuple[str, ...], digest: str,
                    now: dt.datetime, seq: int) -> dict:
    """Return ``{column: new value}`` of what the write of ``record`` changes in ``row`` (its ``DECIDING_FIELDS``):
    the parts whose hash differs from the row's digest, the state timestamps on a state change, and the bookkeeping
    columns. A row marked gone is written in full (``mark_gone`` changed its state columns behind its digest)."""
    stored = _stored_parts(row.digest) if row.gone_at is None else None
    values: dict = {}
    if stored is None or stored[0] != parts[0]:
        for name in SCALAR_COLUMNS:
            values[name] = getattr(record, name)
        # While suspended or queued the level cannot be read: the one the PodGroups showed before stays.
        known_level = row.level if row.level and row.level != states.LEVEL_UNKNOWN else ""
        if record.level == states.LEVEL_UNKNOWN and record.state in LEVEL_KEPT_IN and known_level:
            values["level"] = known_level
    for index, name in enumerate(JSON_FIELDS, start=1):
        if stored is None or stored[index] != parts[index]:
            values[name] = texts[name]
    if record.submitted_at is not None and record.submitted_at != row.submitted_at:
        values["submitted_at"] = record.submitted_at
    if record.observed_version and record.observed_version != row.resource_version:
        values["resource_version"] = record.observed_version
    if row.gone_at is not None:
        values["gone_at"] = None
    if row.state != record.state:
        _enter_state(values, record, now, row.admitted_at, row.finished_at)
    values.update(digest=digest, change_seq=seq, updated_at=now)
    return values


def _update_rows(rows: Sequence[TrainJob], names: Sequence[str]) -> None:
    """UPDATE ``names`` of every row (TrainJob instances) by primary key (see ``_update``)."""
    fields = [TrainJob._meta.get_field(name) for name in names]
    _update(tuple(names), [[getattr(row, field.attname) for field in fields] + [row.pk] for row in rows])


def _update(names: tuple[str, ...], rows: list[list]) -> None:
    """UPDATE columns ``names`` of TrainJob rows by primary key: ``rows`` holds each row's values in ``names``
    order (JSON columns as their text, see ``json_text``) then its id.

    PostgreSQL: one statement for all rows, joining the table to the values sent as one array per column (no
    statement per row to parse and plan). Elsewhere one statement executed for each row (executemany). Never
    Django's ``bulk_update``: it builds one CASE expression per field and row, seconds of CPU per flush.

    Raises DatabaseError when the database refuses a row.
    """
    fields = [TrainJob._meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    table = quote(TrainJob._meta.db_table)
    # Only model column names (never input) are interpolated into the SQL; every value is a bound parameter.
    if connection.vendor == "postgresql":
        columns = list(zip(*rows, strict=True))
        assignments, arrays, aliases, params = [], [], [], []
        for index, column in enumerate(fields):
            if all(value is None for value in columns[index]):
                assignments.append(f"{quote(column.column)} = NULL")  # an array of NULLs has no element type
                continue
            alias = f"v{index}"
            # The JSON text is sent as text and parsed by the server (no second encoding here).
            assignments.append(f"{quote(column.column)} = u.{alias}{_JSONB_CAST if column.name in _JSON else ''}")
            arrays.append(f"%b::{_ARRAY_TYPES.get(column.get_internal_type()) or column.db_type(connection)}[]")
            aliases.append(alias)
            params.append(list(columns[index]))
        sql = (f"UPDATE {table} AS t SET {', '.join(assignments)} "  # noqa: S608
               f"FROM unnest({', '.join(arrays)}, %b::bigint[]) AS u({', '.join(aliases)}, row_id) "
               f"WHERE t.{quote('id')} = u.row_id")
        with _postgres_cursor(sql, len(rows)) as cursor:
            cursor.execute(sql, [*params, list(columns[-1])])
        return
    assignments = ", ".join(f"{quote(column.column)} = %s" for column in fields)
    sql = f"UPDATE {table} SET {assignments} WHERE {quote('id')} = %s"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.executemany(sql, _adapted([*fields, TrainJob._meta.pk], rows))


def _insert(model, names: Sequence[str], rows: list[list]) -> None:
    """INSERT ``rows`` (each the values of ``names`` — attribute names — in order; JSON columns as their text) into
    ``model``'s table: PostgreSQL COPY (no per-value SQL at all), else one statement executed for each row.

    Raises DatabaseError when the database refuses a row (the whole statement fails).
    """
    fields = [model._meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = ", ".join(quote(field.column) for field in fields)
    if connection.vendor == "postgresql":
        sql = f"COPY {table} ({columns}) FROM STDIN"
        with _postgres_cursor(sql, len(rows)) as cursor, cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)
        return
    placeholders = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {table} ({columns}) VALUES ({placeholders})"  # noqa: S608 (model names only)
    with connection.cursor() as cursor:
        cursor.executemany(sql, _adapted(fields, rows))


def _adapted(fields, rows: list[list]) -> list[list]:
    """Return ``rows`` with each value as ``fields`` store it (``get_db_prep_save``), JSON text kept as it is."""
    prepare = [None if field.name in _JSON else field.get_db_prep_save for field in fields]
    return [[value if prep is None else prep(value, connection) for prep, value in zip(prepare, row, strict=True)]
            for row in rows]


@contextlib.contextmanager
def _postgres_cursor(sql: str, rows: int):
    """Yield a server-side-binding psycopg cursor on Django's connection (same transaction). Django's cursors bind
    on the client, quoting every value into the SQL text in Python; this sends values apart, dumped by psycopg's C
    code. No statement is prepared (a connection pooler sees only unnamed statements). Database errors come out as
    Django's; the statement is logged like Django's own (``connection.queries``) when queries are logged.
    """
    import psycopg

    connection.ensure_connection()
    started = time.monotonic()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        yield cursor
    if connection.queries_logged:
        connection.queries_log.append({"sql": f"{sql} -- {rows} rows", "time": f"{time.monotonic() - started:.3f}"})


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
