"""Reads over tracked TrainJobs, always through the asking user's namespace visibility.

Every function takes ``user`` and filters by :func:`visible_namespaces`: platform admins, viewers and superusers see
every namespace; data scientists see the namespaces granted to one of their groups; everyone else sees nothing.
A job the user may not see is indistinguishable from a missing one (``TrainJobNotFound``).

Query counts are constant: a list is one query for the visibility (grants) plus one for the page, whatever its size.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, F, Max, Q, QuerySet
from django.utils import timezone

from trainer_portal import jobfacts, outbox, roles
from trainer_portal.cluster import access, snapshots
from trainer_portal.cluster.models import Cluster

from .choices import AdmissionState, SchedulingLevel
from .domain import explain, states
from .domain.answer import answer_of
from .domain.redact import redact
from .errors import InvalidQuery, TrainJobNotFound
from .models import NamespaceGrant, TrackerStatus, TrainJob, TrainJobTransition

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
# The tracker writes its heartbeat every few seconds; this long without one and pages say "tracking stale".
STALE_AFTER_SECONDS = 15.0

# sort parameter → (model field, descending). The id (same direction) breaks ties, so the order is total and a
# row never moves between two reads unless its own sort value changed.
SORTS: dict[str, tuple[str, bool]] = {
    "-submitted": ("submitted_at", True),
    "submitted": ("submitted_at", False),
    "name": ("name", False),
    "-name": ("name", True),
    "namespace": ("namespace", False),
    "-namespace": ("namespace", True),
    "since": ("since", False),
    "-since": ("since", True),
    "size": ("num_nodes", False),
    "-size": ("num_nodes", True),
    "state": ("state", False),
    "-state": ("state", True),
}
DEFAULT_SORT = "-submitted"
LIST_DEFERRED = ("pods", "events", "workload", "kueue", "resources_per_node")


# -- visibility ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Visibility:
    """Which namespaces a user may see: ``everything``, or exactly ``namespaces`` on every cluster plus the
    ``(cluster id, namespace)`` pairs of ``scoped`` (grants on one cluster); possibly nothing."""

    everything: bool
    namespaces: frozenset[str] = frozenset()
    scoped: frozenset[tuple[int, str]] = frozenset()

    def allows(self, namespace: str, cluster_id: int | None = None) -> bool:
        """Return True when a TrainJob in ``namespace`` on cluster ``cluster_id`` is visible (``cluster_id`` None:
        only grants on every cluster count)."""
        if self.everything or namespace in self.namespaces:
            return True
        return cluster_id is not None and (cluster_id, namespace) in self.scoped

    @property
    def nothing(self) -> bool:
        """Return True when the user sees no namespace at all."""
        return not self.everything and not self.namespaces and not self.scoped

    @property
    def all_namespaces(self) -> frozenset[str]:
        """Return every namespace visible on at least one cluster."""
        return self.namespaces | {namespace for _, namespace in self.scoped}

    def filter(self, queryset: QuerySet) -> QuerySet:
        """Return ``queryset`` (of rows with ``namespace`` and ``cluster``) restricted to what is visible."""
        if self.everything:
            return queryset
        if self.nothing:
            return queryset.none()
        condition = Q(namespace__in=sorted(self.namespaces)) if self.namespaces else Q()
        per_cluster: dict[int, list[str]] = defaultdict(list)
        for cluster_id, namespace in sorted(self.scoped):
            per_cluster[cluster_id].append(namespace)
        for cluster_id, namespaces in per_cluster.items():
            scoped = Q(cluster_id=cluster_id, namespace__in=namespaces)
            condition = condition | scoped if condition else scoped
        return queryset.filter(condition)

    def fingerprint(self) -> str:
        """Return a short stable string identifying this visibility (part of conditional-poll tokens)."""
        if self.everything:
            return "*"
        parts = sorted(self.namespaces) + sorted(f"{cluster_id}/{namespace}" for cluster_id, namespace in self.scoped)
        return hashlib.blake2b(",".join(parts).encode(), digest_size=6).hexdigest()


def visible_namespaces(user) -> Visibility:
    """Return the namespaces ``user`` may see TrainJobs in (cached on the user object for the request)."""
    cached = getattr(user, "_jobs_visibility", None)
    if cached is not None:
        return cached
    if roles.has_capability(user, roles.JOBS_ALL_NAMESPACES):  # superusers, platform admins and viewers
        visibility = Visibility(everything=True)
    elif roles.has_capability(user, roles.JOBS_VIEW):  # data scientists: their groups' grants and/or RBAC
        mode = access.visibility_mode()
        granted = []
        if mode != "rbac":
            granted = list(NamespaceGrant.objects.filter(group__user=user).values_list("cluster_id", "namespace"))
        scoped = {(c, ns) for c, ns in granted if c is not None}
        if mode != "grants":
            scoped |= _rbac_visible(user)
        visibility = Visibility(everything=False,
                                namespaces=frozenset(ns for cluster_id, ns in granted if cluster_id is None),
                                scoped=frozenset(scoped))
    else:
        visibility = Visibility(everything=False)
    if getattr(user, "is_authenticated", False):
        user._jobs_visibility = visibility
    return visibility


def _rbac_visible(user) -> frozenset[tuple[int, str]]:
    """Return the (cluster id, namespace) pairs where the cluster's RBAC lets ``user`` list TrainJobs (the pairs
    asked about are those the portal tracks jobs in)."""
    provider_groups = [name for name in user.groups.values_list("name", flat=True) if name not in roles.ROLE_GROUPS]
    pairs = (TrainJob.objects.filter(gone_at__isnull=True).values_list("cluster_id", "namespace").distinct()
             .order_by("cluster_id", "namespace"))
    return access.rbac_visible(access.identity_of(user, provider_groups), pairs)


def _known_namespaces() -> frozenset[str]:
    """Return every namespace a tracked TrainJob is in (what a bare ``namespace/name`` in a message may name)."""
    return frozenset(TrainJob.objects.order_by().values_list("namespace", flat=True).distinct())


def redact_for_user(visibility: Visibility, jobs: Iterable[TrainJob], *, timeline: Iterable = (),
                    events: bool = False) -> None:
    """Rewrite, in memory only, what ``jobs`` (and ``timeline`` transitions) show so that no object of a namespace
    ``visibility`` hides is named: messages of the job, its PodGroups, its ``events`` (detail only: the list defers
    them) and the timeline say "a job in another namespace" instead. Rows are never saved from here; the stored
    data keeps the full text."""
    if visibility.everything:
        return
    jobs = list(jobs)
    timeline = list(timeline)
    if not jobs and not timeline:
        return
    known = _known_namespaces()
    for job in jobs:
        def allowed(namespace: str, cluster_id=job.cluster_id) -> bool:
            return visibility.allows(namespace, cluster_id)

        job.message = redact(job.message, allowed, known)
        job.pod_groups = [{**group, "message": redact(str(group.get("message") or ""), allowed, known)}
                          if isinstance(group, dict) and group.get("message") else group
                          for group in job.pod_groups or ()]
        if isinstance(job.kueue, dict) and job.kueue.get("conditions"):
            job.kueue = {**job.kueue, "conditions": [
                {**condition, "message": redact(str(condition.get("message") or ""), allowed, known)}
                if isinstance(condition, dict) else condition for condition in job.kueue["conditions"]]}
        if events:
            job.events = [{**event, "message": redact(str(event.get("message") or ""), allowed, known)}
                          if isinstance(event, dict) and event.get("message") else event
                          for event in job.events or ()]
    cluster_id = jobs[0].cluster_id if jobs else None
    for transition in timeline:
        transition.message = redact(transition.message, lambda ns: visibility.allows(ns, cluster_id), known)


def join_answers(jobs: Iterable[TrainJob]) -> None:
    """Join each of ``jobs`` (in memory only) to what the registered providers of ``trainer_portal.jobfacts`` know
    about it: ``queue_facts`` and ``start_estimate`` (None when nobody knows), ``queue_line`` ("position 3 of 7 in
    team-a's queue"), and — while quota holds the job — a ``message`` and short reason that say the quota and the
    position ("Waiting for quota in cq-research: needs 32 GPUs, 16 free of 64 …"). Call after redaction: the
    stored message it may quote is then already redacted. Rows are never saved from here."""
    jobs = [job for job in jobs if job.uid]
    refs = {job.pk: jobfacts.JobRef(job.cluster_id, job.namespace, job.name, job.uid) for job in jobs}
    facts = jobfacts.facts_for(list(refs.values())) if refs else {}
    for job in jobs:
        known = facts.get(refs[job.pk]) or jobfacts.JobFacts()
        job.queue_facts = known.queue
        job.start_estimate = known.estimated_start
        joined = answer_of(job.state, job.reason, job.message, known.queue, namespace=job.namespace)
        job.message = joined.message
        job.answer_reason = joined.reason
        job.queue_line = joined.queue_line


def namespace_grants() -> list[NamespaceGrant]:
    """Return every grant (group → namespace), with its group, ordered by group name then namespace."""
    return list(NamespaceGrant.objects.select_related("group", "cluster")
                .order_by("group__name", "namespace", "cluster__name"))


def cluster_named(name: str | None) -> Cluster | None:
    """Return the cluster called ``name`` (None for an empty name: every cluster).

    Raises InvalidQuery (field ``cluster``) when there is no such cluster.
    """
    if not name:
        return None
    found = Cluster.objects.filter(name=name).first()
    if found is None:
        raise InvalidQuery(f"there is no cluster {name!r}: use the name of one of the portal's clusters "
                           "(GET /api/v1/clusters/)", field="cluster")
    return found


def cluster_choices() -> list[tuple[str, str]]:
    """Return ``[(name, label)]`` of every cluster, the default first (for filters)."""
    return [(c.name, c.label) for c in Cluster.objects.all()]


# -- list ----------------------------------------------------------------------------------------------------------


@dataclass
class TrainJobPage:
    """One page of a list: ``items`` in order, and the cursor of the next page (None on the last one)."""

    items: list[TrainJob]
    next_cursor: str | None
    sort: str
    limit: int


def _parse_choices(value: str | Iterable[str] | None, valid: Iterable[str], field_name: str) -> list[str]:
    if value is None or value == "":
        return []
    values = [v.strip() for v in value.split(",")] if isinstance(value, str) else [str(v).strip() for v in value]
    values = [v for v in values if v]
    allowed = list(valid)
    for item in values:
        if item not in allowed:
            raise InvalidQuery(f"{field_name} must be one of {', '.join(allowed)} (comma-separated), not {item!r}",
                               field=field_name)
    return values


def _encode_cursor(sort: str, value: object, row_id: int) -> str:
    if isinstance(value, dt.datetime):
        value = value.isoformat()
    raw = json.dumps([sort, value, row_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str, sort: str) -> tuple[object, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        cursor_sort, value, row_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if cursor_sort != sort or not isinstance(row_id, int):
            raise ValueError
        field_name = SORTS[sort][0]
        if field_name in ("submitted_at", "since"):
            value = dt.datetime.fromisoformat(value)
        elif not isinstance(value, int if field_name == "num_nodes" else str):
            raise ValueError
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError, json.JSONDecodeError):
        raise InvalidQuery("cursor is not a cursor of this list (or of another sort order): start again without "
                           "it, then follow the next link", field="cursor") from None
    return value, row_id


def trainjob_queryset(*, user, namespace: str | None = None, state: str | Iterable[str] | None = None,
                      runtime: str | None = None, level: str | Iterable[str] | None = None,
                      queue: str | None = None, search: str | None = None, include_gone: bool = False,
                      cluster: str | None = None) -> QuerySet:
    """Return the visible TrainJobs matching the filters (unordered), on every cluster unless ``cluster`` (a
    cluster name) is given. Raises InvalidQuery for unknown values."""
    queryset = visible_namespaces(user).filter(TrainJob.objects.select_related("cluster"))
    target = cluster_named(cluster)
    if target is not None:
        queryset = queryset.filter(cluster=target)
    if namespace:
        queryset = queryset.filter(namespace=namespace)
    states_wanted = _parse_choices(state, AdmissionState.values, "state")
    if states_wanted:
        queryset = queryset.filter(state__in=states_wanted)
    levels_wanted = _parse_choices(level, SchedulingLevel.values, "level")
    if levels_wanted:
        queryset = queryset.filter(level__in=levels_wanted)
    if runtime:
        queryset = queryset.filter(runtime_name=runtime)
    if queue:
        queryset = queryset.filter(queue_name=queue)
    if search:
        term = search.strip()[:200]
        queryset = queryset.filter(Q(name__icontains=term) | Q(namespace__icontains=term) |
                                   Q(runtime_name__icontains=term) | Q(creator__icontains=term) |
                                   Q(reason__icontains=term))
    if not include_gone:
        queryset = queryset.filter(gone_at__isnull=True)
    return queryset


def trainjob_list(*, user, namespace: str | None = None, state: str | Iterable[str] | None = None,
                  runtime: str | None = None, level: str | Iterable[str] | None = None, queue: str | None = None,
                  search: str | None = None, sort: str | None = None, cursor: str | None = None,
                  limit: int | None = None, include_gone: bool = False, cluster: str | None = None) -> TrainJobPage:
    """Return one page of visible TrainJobs in a stable order (keyset pagination: rows never shift pages).

    ``state`` and ``level`` accept comma-separated values. Raises InvalidQuery naming the bad parameter (unknown
    state/level/sort, a limit outside 1..500, a cursor from another list).
    """
    sort = sort or DEFAULT_SORT
    if sort not in SORTS:
        raise InvalidQuery(f"sort must be one of {', '.join(SORTS)}, not {sort!r}", field="sort")
    if limit is None:
        limit = DEFAULT_LIMIT
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidQuery(f"limit must be a whole number from 1 to {MAX_LIMIT}", field="limit")
    queryset = trainjob_queryset(user=user, namespace=namespace, state=state, runtime=runtime, level=level,
                                 queue=queue, search=search, include_gone=include_gone, cluster=cluster)
    field_name, descending = SORTS[sort]
    if cursor:
        value, row_id = _decode_cursor(cursor, sort)
        if descending:
            queryset = queryset.filter(Q(**{f"{field_name}__lt": value}) | Q(**{field_name: value, "id__lt": row_id}))
        else:
            queryset = queryset.filter(Q(**{f"{field_name}__gt": value}) | Q(**{field_name: value, "id__gt": row_id}))
    prefix = "-" if descending else ""
    # The tree (pods, events, Workload) is for the detail view; a list row needs none of it.
    rows = list(queryset.defer(*LIST_DEFERRED).order_by(f"{prefix}{field_name}", f"{prefix}id")[: limit + 1])
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_cursor = _encode_cursor(sort, getattr(last, field_name), last.id)
    redact_for_user(visible_namespaces(user), rows)
    join_answers(rows)
    return TrainJobPage(rows, next_cursor, sort, limit)


def trainjob_get(*, user, namespace: str, name: str, cluster: str | None = None) -> TrainJob:
    """Return the visible TrainJob ``namespace/name`` on cluster ``cluster`` (a name; the default cluster when
    empty): the live one, else the most recently gone one.

    Raises TrainJobNotFound when there is none or the user may not see the namespace on that cluster, and
    InvalidQuery (field ``cluster``) for an unknown cluster.
    """
    target = cluster_named(cluster) if cluster else Cluster.objects.filter(is_default=True).first()
    where = f" on cluster {target.name}" if target is not None and cluster else ""
    if target is None or not visible_namespaces(user).allows(namespace, target.pk):
        raise TrainJobNotFound(f"no TrainJob {namespace}/{name}{where} that you may see")
    # The live one first (no gone_at), then the most recently gone.
    job = (TrainJob.objects.filter(cluster=target, namespace=namespace, name=name)
           .order_by(F("gone_at").desc(nulls_first=True), "-submitted_at", "-id").first())
    if job is None:
        raise TrainJobNotFound(f"no TrainJob {namespace}/{name}{where} that you may see")
    job.cluster = target
    return job


@dataclass
class TrainJobDetail:
    """A TrainJob row with what its detail view adds: timeline, time to admission, explanation, tracking."""

    job: TrainJob
    timeline: list[TrainJobTransition]
    time_to_admission_seconds: float | None
    explanation: dict | None
    tracking: TrackingStatus

    def __getattr__(self, name: str):
        # The row's own fields read straight through (serializers treat a detail like the row).
        return getattr(self.job, name)


def trainjob_detail(*, user, namespace: str, name: str, cluster: str | None = None) -> TrainJobDetail:
    """Return the visible TrainJob (on ``cluster``, default: the default cluster) with its timeline and
    explanation, its pods placed in zone/block/rack from the live snapshot. Raises TrainJobNotFound, InvalidQuery.
    """
    job = trainjob_get(user=user, namespace=namespace, name=name, cluster=cluster)
    wait = (job.admitted_at - job.submitted_at).total_seconds() if job.admitted_at else None
    live = _live_snapshot_of(job)
    if live is not None and job.pods:
        where = explain.pod_locations(live.snapshot, {pod.get("node") for pod in job.pods if pod.get("node")})
        for pod in job.pods:
            pod["zone"], pod["block"], pod["rack"] = where.get(pod.get("node"), ("", "", ""))
    timeline = trainjob_timeline(job)
    # Redact first: the explanation quotes the job's message when capacity is not why it waits.
    redact_for_user(visible_namespaces(user), [job], timeline=timeline, events=True)
    join_answers([job])
    return TrainJobDetail(job, timeline, max(wait, 0.0) if wait is not None else None,
                          trainjob_explanation(job, user=user, live=live), tracking_status())


MAX_OCCUPANTS = 5_000
# Waiting reasons that no placement can change (the runtime is missing, the API server refused the objects).
NOT_PLACEMENT_REASONS = ("TrainingRuntimeNotFound", "TrainJobResourcesCreationFailed")


def trainjob_explanation(job: TrainJob, *, user=None, live=None) -> dict | None:
    """Return why ``job`` waits (the placement engine on the live snapshot for exactly this gang) as the API's
    explanation dict; None when the job does not wait. Holders in namespaces ``user`` may not see are only counted
    (``otherNodes``), never named."""
    if job.state not in states.WAITING_STATES or job.gone_at is not None:
        return None
    if job.reason in NOT_PLACEMENT_REASONS or job.state not in states.PLACEMENT_STATES:
        # Capacity is not why it waits: never "fits now" while quota (Kueue), the startup order (dependsOn) or the
        # controller (missing runtime, objects not created) holds the job — only a gang waiting to be placed.
        return explain.unavailable(f"capacity is not why this job waits: {job.message}").to_dict()
    live = live if live is not None else _live_snapshot_of(job)
    if live is None:
        return explain.unavailable("no live cluster snapshot yet: the cluster watcher has not saved one").to_dict()
    visibility = visible_namespaces(user) if user is not None else Visibility(everything=False)
    occupants = [
        explain.Occupant(row.namespace, row.name, row.num_nodes, row.gpus_per_node,
                         tuple(pod.get("node") for pod in row.pods if pod.get("node")), row.admitted_at, row.creator,
                         visible=visibility.allows(row.namespace, row.cluster_id))
        for row in TrainJob.objects.filter(cluster_id=job.cluster_id, state__in=sorted(states.ADMITTED_STATES),
                                           gone_at__isnull=True)
        .only("cluster_id", "namespace", "name", "num_nodes", "gpus_per_node", "pods", "admitted_at", "creator")
        .order_by("-num_nodes", "id")[:MAX_OCCUPANTS]
    ]
    shape = explain.JobShape(job.namespace, job.name, job.num_nodes, job.resources_per_node or
                             ({"nvidia.com/gpu": str(job.gpus_per_node)} if job.gpus_per_node else {}),
                             job.pod_groups)
    return explain.explain_wait(shape, live.snapshot, occupants=occupants,
                                snapshot_age_seconds=round(live.age_seconds, 1)).to_dict()


def _live_snapshot_of(job: TrainJob):
    """Return the live snapshot of ``job``'s cluster, or None. The stored snapshot is the default cluster's; a job
    on another cluster is never placed on it."""
    default_id = Cluster.objects.filter(is_default=True).values_list("pk", flat=True).first()
    return snapshots.live_snapshot() if job.cluster_id == default_id else None


def trainjob_timeline(job: TrainJob) -> list[TrainJobTransition]:
    """Return the job's state transitions, oldest first."""
    return list(job.transitions.order_by("seq"))


def trainjob_summary(*, user, namespace: str | None = None, cluster: str | None = None) -> dict[str, int]:
    """Return {state: count} over the visible, not-gone TrainJobs (every state present, zeros included), on every
    cluster or on ``cluster``. Raises InvalidQuery for an unknown cluster."""
    counts = dict.fromkeys(AdmissionState.values, 0)
    queryset = trainjob_queryset(user=user, namespace=namespace, cluster=cluster)
    for row in queryset.order_by().values("state").annotate(n=Count("id")):
        counts[row["state"]] = row["n"]
    return counts


def trainjobs_for_runtime(*, user, runtime: str, limit: int = 100) -> list[TrainJob]:
    """Return the visible, not-gone TrainJobs that use runtime ``runtime``, newest first (at most ``limit``)."""
    rows = list(trainjob_queryset(user=user, runtime=runtime).defer(*LIST_DEFERRED)
                .order_by("-submitted_at", "-id")[:limit])
    redact_for_user(visible_namespaces(user), rows)
    join_answers(rows)
    return rows


def longest_waiting(*, user, limit: int = 10, cluster: str | None = None) -> list[TrainJob]:
    """Return the visible jobs (on every cluster, or on ``cluster``) waiting for admission longest (oldest ``since``
    first)."""
    rows = list(trainjob_queryset(user=user, state=sorted(states.WAITING_STATES), cluster=cluster)
                .defer(*LIST_DEFERRED)
                .order_by("since", "id")[:limit])
    redact_for_user(visible_namespaces(user), rows)
    join_answers(rows)
    return rows


# -- live updates -------------------------------------------------------------------------------------------------


@dataclass
class TrackingStatus:
    """Whether the tracked states are current: ``stale`` with ``since`` and ``why`` (for the banner)."""

    stale: bool
    since: dt.datetime | None
    why: str
    holder: str = ""
    synced: bool = False
    connected: bool = False
    heartbeat_at: dt.datetime | None = None
    last_event_at: dt.datetime | None = None
    tracked: int = 0
    pruned: int = 0
    details: dict = field(default_factory=dict)

    @property
    def message(self) -> str:
        """Return "tracking stale since 12:04 — cluster unreachable", or "tracking live" when current."""
        if not self.stale:
            return "tracking live"
        if self.since is None:
            return f"tracking stale — {self.why}"
        return f"tracking stale since {timezone.localtime(self.since):%H:%M} — {self.why}"


def tracking_status(*, now: dt.datetime | None = None, cluster: Cluster | None = None) -> TrackingStatus:
    """Return whether the tracker of ``cluster`` (default: the default cluster) is current. Stale when no tracker
    ever ran, its heartbeat is older than ``STALE_AFTER_SECONDS``, it lost the cluster, or its first full sync is
    not finished."""
    now = now or timezone.now()
    statuses = TrackerStatus.objects.filter(cluster=cluster) if cluster is not None else \
        TrackerStatus.objects.filter(cluster__is_default=True)
    status = statuses.first()
    if status is None or status.heartbeat_at is None:
        return TrackingStatus(True, None, "no tracker has run yet (start manage.py cluster_watch)")
    common = {"holder": status.holder, "synced": status.synced, "connected": status.connected,
              "heartbeat_at": status.heartbeat_at, "last_event_at": status.last_event_at, "tracked": status.tracked,
              "pruned": status.pruned}
    stale_after = getattr(settings, "TRAINER_PORTAL_TRACKING_STALE_SECONDS", STALE_AFTER_SECONDS)
    if (now - status.heartbeat_at).total_seconds() > stale_after:
        return TrackingStatus(True, status.heartbeat_at, "the tracker stopped reporting", **common)
    if not status.connected:
        why = "cluster unreachable" + (f" ({status.last_error})" if status.last_error else "")
        return TrackingStatus(True, status.error_since or status.heartbeat_at, why, **common)
    if not status.synced:
        return TrackingStatus(True, status.leader_since or status.heartbeat_at, "first sync with the cluster in "
                              "progress", **common)
    return TrackingStatus(False, None, "", **common)


def trainjob_change_token(*, user, namespace: str | None = None, extra: str = "",
                          tracking: TrackingStatus | None = None, cluster: str | None = None) -> str:
    """Return a short token that changes whenever anything the user could see changes (rows or tracker health).

    Every write raises a row's ``change_seq`` (an index answers the MAX); rows removed by retention move the
    tracker's ``pruned`` counter instead. Cheap enough to answer conditional polls (ETag / If-None-Match).
    ``extra`` (e.g. the request's query string) is folded in so different views of the same rows get different
    tokens.
    """
    visibility = visible_namespaces(user)
    queryset = visibility.filter(TrainJob.objects.all())
    if namespace:
        queryset = queryset.filter(namespace=namespace)
    if cluster:
        queryset = queryset.filter(cluster__name=cluster)
    newest = queryset.aggregate(seq=Max("change_seq"))["seq"] or 0
    tracking = tracking or tracking_status()
    raw = f"{newest}:{tracking.pruned}:{visibility.fingerprint()}:{tracking.stale}:{tracking.why}:{extra}"
    return hashlib.blake2b(raw.encode(), digest_size=10).hexdigest()


# -- statistics ---------------------------------------------------------------------------------------------------


def _percentile(values: list[float], fraction: float) -> float:
    """Return the nearest-rank percentile of sorted ``values`` (0 for an empty list)."""
    if not values:
        return 0.0
    rank = max(1, math.ceil(fraction * len(values)))
    return values[min(rank, len(values)) - 1]


def admission_stats(*, user, hours: int = 24, now: dt.datetime | None = None,
                    cluster: str | None = None) -> list[dict]:
    """Return time-to-admission per (runtime, level) over jobs admitted in the last ``hours`` (on every cluster, or
    on ``cluster``), largest first: ``[{runtime, level, jobs, p50Seconds, p95Seconds}]``. One query."""
    now = now or timezone.now()
    if not 1 <= int(hours) <= 24 * 90:
        raise InvalidQuery("hours must be from 1 to 2160", field="hours")
    start = now - dt.timedelta(hours=int(hours))
    rows = (visible_namespaces(user).filter(TrainJob.objects.all())
            .filter(admitted_at__gte=start, admitted_at__lte=now, **({"cluster__name": cluster} if cluster else {}))
            .values_list("runtime_name", "level", "submitted_at", "admitted_at"))
    waits: dict[tuple[str, str], list[float]] = defaultdict(list)
    for runtime, level, submitted, admitted in rows:
        waits[(runtime, level)].append(max(0.0, (admitted - submitted).total_seconds()))
    result = []
    for (runtime, level), values in waits.items():
        values.sort()
        result.append({"runtime": runtime, "level": level, "jobs": len(values),
                       "p50Seconds": _percentile(values, 0.5), "p95Seconds": _percentile(values, 0.95)})
    result.sort(key=lambda r: (-r["jobs"], r["runtime"], r["level"]))
    return result


# -- pages (list filters, explanation as a given user may see it, per-job live token) ----------------------------


@dataclass(frozen=True)
class FilterValues:
    """The values the list's filters offer: the namespaces, runtimes and queues of the visible jobs."""

    namespaces: list[str]
    runtimes: list[str]
    queues: list[str]


def trainjob_filter_values(*, user) -> FilterValues:
    """Return the distinct namespaces, runtimes and queues of the visible, not-gone TrainJobs (sorted; 3 queries).

    A data scientist also gets every granted namespace, even one without jobs yet, so the filter shows it."""
    queryset = trainjob_queryset(user=user).order_by()
    visibility = visible_namespaces(user)
    namespaces = set(queryset.values_list("namespace", flat=True).distinct())
    if not visibility.everything:
        namespaces |= visibility.all_namespaces
    runtimes = queryset.exclude(runtime_name="").values_list("runtime_name", flat=True).distinct()
    queues = queryset.exclude(queue_name="").values_list("queue_name", flat=True).distinct()
    return FilterValues(sorted(namespaces), sorted(runtimes), sorted(queues))


def trainjob_detail_token(job: TrainJob, tracking: TrackingStatus) -> str:
    """Return a token that changes whenever the detail page of ``job`` would show something else.

    A waiting job's page also explains the wait with the other jobs (who holds the capacity), so for it any tracked
    change counts (one indexed MAX); otherwise only the job's own row and the tracker's health do."""
    others = 0
    if job.state in states.WAITING_STATES and job.gone_at is None:
        others = TrainJob.objects.aggregate(m=Max("change_seq"))["m"] or 0
    raw = f"{job.id}:{job.change_seq}:{job.gone_at}:{others}:{tracking.stale}:{tracking.why}"
    return hashlib.blake2b(raw.encode(), digest_size=10).hexdigest()


def trainjob_counts_by_namespace(*, user, cluster: str | None = None) -> list[tuple[str, dict[str, int]]]:
    """Return [(namespace, {state: count})] over the visible, not-gone TrainJobs (on every cluster, or on
    ``cluster``), namespaces sorted (one query)."""
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    rows = trainjob_queryset(user=user, cluster=cluster).order_by().values("namespace", "state")
    for row in rows.annotate(n=Count("id")):
        counts[row["namespace"]][row["state"]] = row["n"]
    return sorted(counts.items())


def cluster_heat_summary() -> dict | None:
    """Return the live snapshot's free/total GPUs per zone → block → rack (None when there is no snapshot yet)."""
    live = snapshots.live_snapshot()
    return live.snapshot.to_summary() if live is not None else None


# -- charts and export ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AdmissionSeries:
    """Time to admission of one (runtime, level) per time bucket: p50, p95 (None: nobody admitted then) and jobs."""

    runtime: str
    level: str
    p50: tuple[float | None, ...]
    p95: tuple[float | None, ...]
    jobs: int


def admission_series(*, user, hours: int = 24, buckets: int = 12, now: dt.datetime | None = None,
                     cluster: str | None = None, runtime: str | None = None,
                     limit: int = 4) -> tuple[list[dt.datetime], list[AdmissionSeries]]:
    """Return the bucket start times and the time to admission per (runtime, level) of the visible jobs admitted in
    the last ``hours`` split into ``buckets`` equal buckets (oldest first): the ``limit`` busiest (runtime, level)
    pairs, busiest first. One query. Raises InvalidQuery for an unknown cluster."""
    now = now or timezone.now()
    start = now - dt.timedelta(hours=hours)
    step = dt.timedelta(hours=hours) / buckets
    queryset = trainjob_queryset(user=user, cluster=cluster, runtime=runtime, include_gone=True)
    rows = (queryset.filter(admitted_at__gt=start, admitted_at__lte=now).order_by()
            .values_list("runtime_name", "level", "submitted_at", "admitted_at"))
    waits: dict[tuple[str, str], list[list[float]]] = defaultdict(lambda: [[] for _ in range(buckets)])
    for runtime_name, level, submitted, admitted in rows:
        index = min(int((admitted - start) / step), buckets - 1)
        waits[(runtime_name, level)][index].append(max(0.0, (admitted - submitted).total_seconds()))
    result = []
    for (runtime_name, level), per_bucket in waits.items():
        for values in per_bucket:
            values.sort()
        result.append(AdmissionSeries(
            runtime_name, level,
            tuple(_percentile(values, 0.5) if values else None for values in per_bucket),
            tuple(_percentile(values, 0.95) if values else None for values in per_bucket),
            sum(len(values) for values in per_bucket)))
    result.sort(key=lambda s: (-s.jobs, s.runtime, s.level))
    return [start + step * i for i in range(buckets)], result[:limit]


def trainjob_state_counts(*, user, runtime: str | None = None, cluster: str | None = None) -> dict[str, int]:
    """Return {state: count} of the visible, not-gone TrainJobs (of ``runtime`` when given), states with no job
    left out. Raises InvalidQuery for an unknown cluster."""
    queryset = trainjob_queryset(user=user, runtime=runtime, cluster=cluster)
    return {row["state"]: row["n"] for row in queryset.order_by().values("state").annotate(n=Count("id"))}


EXPORT_FIELDS = ("cluster__name", "namespace", "name", "state", "reason", "runtime_name", "level", "queue_name",
                 "num_nodes", "gpus_per_node", "creator", "priority_class", "submitted_at", "admitted_at",
                 "finished_at", "since")


def trainjob_export_rows(*, user, sort: str | None = None, chunk_size: int = 2000, **filters) -> Iterable[tuple]:
    """Return an iterator over the visible TrainJobs matching ``filters`` (those of ``trainjob_queryset``) in the
    list's order, as tuples of ``EXPORT_FIELDS``, read from the database in chunks. Raises InvalidQuery for an
    unknown filter value or sort."""
    sort = sort or DEFAULT_SORT
    if sort not in SORTS:
        raise InvalidQuery(f"sort must be one of {', '.join(SORTS)}, not {sort!r}", field="sort")
    field_name, descending = SORTS[sort]
    order = (f"-{field_name}", "-id") if descending else (field_name, "id")
    queryset = trainjob_queryset(user=user, **filters).order_by(*order)
    return queryset.values_list(*EXPORT_FIELDS).iterator(chunk_size=chunk_size)


# -- the outbox source (trainer_portal.outbox): transitions as neutral events for notifications --------------------

_EVENT_KINDS = {states.PREEMPTED: outbox.PREEMPTED, states.FAILED: outbox.FAILED, states.SUCCEEDED: outbox.SUCCEEDED}


def _job_event(job: TrainJob, *, sequence: int, kind: str, at: dt.datetime, reason: str = "",
               message: str = "") -> outbox.Event:
    # A notification leaves the portal (mail, chat rooms), where nobody checks who reads it: its text names no
    # other namespace's objects, whoever subscribed.
    def own_namespace(namespace: str) -> bool:
        return namespace == job.namespace

    reason, message = redact(reason, own_namespace), redact(message, own_namespace)
    return outbox.Event(
        source="jobs", sequence=sequence, kind=kind, cluster_id=job.cluster_id, cluster=job.cluster.name, at=at,
        subject=f"{job.namespace}/{job.name}", namespace=job.namespace,
        job={"cluster": job.cluster.name, "namespace": job.namespace, "name": job.name, "uid": job.uid},
        creator=job.creator, runtime=job.runtime_name, queue=job.queue_name, reason=reason, message=message[:2000],
        path=f"/jobs/{job.namespace}/{job.name}/?cluster={job.cluster.name}",
        extra={"state": job.state, "since": job.since.isoformat()},
    )


def transition_events_after(cursor: int, limit: int) -> list[outbox.Event]:
    """Return up to ``limit`` notable transitions with id > ``cursor`` (ascending) as outbox events: entering
    admitted/running from a state that was neither (``admitted``), preempted, failed, succeeded. The sequence is
    the transition's id."""
    admitted = sorted(states.ADMITTED_STATES)
    notable = (Q(to_state__in=admitted) & ~Q(from_state__in=admitted)) | Q(to_state__in=sorted(_EVENT_KINDS))
    rows = (TrainJobTransition.objects.filter(notable, id__gt=cursor).select_related("job", "job__cluster")
            .defer(*(f"job__{name}" for name in LIST_DEFERRED)).order_by("id")[:limit])
    return [_job_event(row.job, sequence=row.id, at=row.at, reason=row.reason, message=row.message,
                       kind=_EVENT_KINDS.get(row.to_state, outbox.ADMITTED)) for row in rows]


def transition_head() -> int:
    """Return the highest transition id written so far (0 for none)."""
    return TrainJobTransition.objects.aggregate(m=Max("id"))["m"] or 0


def jobs_waiting_since(before: dt.datetime, limit: int) -> list[outbox.Event]:
    """Return up to ``limit`` live jobs waiting for admission since before ``before`` (oldest first) as ``waiting``
    events; the sequence is the job row's id."""
    rows = (TrainJob.objects.filter(state__in=sorted(states.WAITING_STATES), gone_at__isnull=True, since__lt=before)
            .select_related("cluster").defer(*LIST_DEFERRED).order_by("since", "id")[:limit])
    return [_job_event(job, sequence=job.id, kind=outbox.WAITING, at=job.since, reason=job.reason,
                       message=job.message) for job in rows]


def job_event_visible(user, event: outbox.Event) -> bool:
    """Return True when ``user`` may see the job ``event`` is about (grants and/or the cluster's RBAC)."""
    return visible_namespaces(user).allows(event.namespace, event.cluster_id)


JOBS_SOURCE = outbox.Source(name="jobs", kinds=outbox.JOB_KINDS, events_after=transition_events_after,
                            head=transition_head, visible=job_event_visible, waiting=jobs_waiting_since)
