"""Reads of the queue read model, always through the asking user's namespace visibility.

Who sees what: platform admins, viewers and superusers (``JOBS_ALL_NAMESPACES``) see every LocalQueue and every
pending workload. Data scientists (``JOBS_VIEW``) see the LocalQueues of their namespaces — those granted to their
groups (the namespace grants of the TrainJobs pages, read by model label so the apps stay independent) and, with
``TRAINER_PORTAL_VISIBILITY`` rbac, those the cluster's RBAC lets them list TrainJobs in — and, in a ClusterQueue's
pending list, only their own workloads; the rest of the line are counts ("4 workloads of other namespaces").
ClusterQueues, flavors and cohorts are cluster-wide objects without names of teams' jobs: everyone with
``JOBS_VIEW`` sees them and their usage.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field

from django.apps import apps
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from trainer_portal import roles
from trainer_portal.cluster import access
from trainer_portal.cluster.models import Cluster

from .errors import InvalidQuery, QueueNotFound
from .models import ClusterQueue, Cohort, LocalQueue, QueuedWorkload, QueueWatchState, ResourceFlavor

STALE_AFTER_SECONDS = 15.0


@dataclass(frozen=True)
class Visibility:
    """Which namespaces a user may see: ``everything``, or ``namespaces`` on every cluster plus ``scoped`` pairs."""

    everything: bool
    namespaces: frozenset[str] = frozenset()
    scoped: frozenset[tuple[int, str]] = frozenset()

    def allows(self, namespace: str, cluster_id: int) -> bool:
        """Return True when ``namespace`` on cluster ``cluster_id`` is visible."""
        return self.everything or namespace in self.namespaces or (cluster_id, namespace) in self.scoped

    def q(self, cluster_id: int) -> Q | None:
        """Return the filter of visible namespaces on one cluster (None: everything)."""
        if self.everything:
            return None
        names = set(self.namespaces) | {ns for c, ns in self.scoped if c == cluster_id}
        return Q(namespace__in=sorted(names))


def visibility(user) -> Visibility:
    """Return the namespaces ``user`` may see queues and workloads of (cached on the user for the request)."""
    cached = getattr(user, "_queues_visibility", None)
    if cached is not None:
        return cached
    if roles.has_capability(user, roles.JOBS_ALL_NAMESPACES):
        result = Visibility(everything=True)
    elif roles.has_capability(user, roles.JOBS_VIEW):
        mode = access.visibility_mode()
        granted: list[tuple[int | None, str]] = []
        if mode != "rbac" and apps.is_installed("jobs"):
            grant = apps.get_model("jobs", "NamespaceGrant")
            granted = list(grant.objects.filter(group__user=user).values_list("cluster_id", "namespace"))
        scoped = {(c, ns) for c, ns in granted if c is not None}
        if mode != "grants":
            provider_groups = [g for g in user.groups.values_list("name", flat=True) if g not in roles.ROLE_GROUPS]
            pairs = LocalQueue.objects.values_list("cluster_id", "namespace").distinct().order_by("cluster_id",
                                                                                                  "namespace")
            scoped |= access.rbac_visible(access.identity_of(user, provider_groups), pairs)
        result = Visibility(everything=False, namespaces=frozenset(ns for c, ns in granted if c is None),
                            scoped=frozenset(scoped))
    else:
        result = Visibility(everything=False)
    if getattr(user, "is_authenticated", False):
        user._queues_visibility = result
    return result


def cluster_for(name: str | None) -> Cluster:
    """Return the cluster called ``name`` (the default one for an empty name).

    Raises InvalidQuery (field ``cluster``) when there is no such cluster, QueueNotFound when there is no default.
    """
    if name:
        found = Cluster.objects.filter(name=name).first()
        if found is None:
            raise InvalidQuery(f"there is no cluster {name!r}: use the name of one of the portal's clusters "
                               "(GET /api/v1/clusters/)", field="cluster")
        return found
    found = Cluster.objects.filter(is_default=True).first()
    if found is None:
        raise QueueNotFound("no cluster is configured yet")
    return found


@dataclass(frozen=True)
class Freshness:
    """How current the queue data of a cluster is."""

    as_of: dt.datetime | None
    stale: bool
    why: str
    kueue_served: bool
    position_source: str
    positions_error: str
    change_seq: int


def freshness(cluster: Cluster, *, now: dt.datetime | None = None) -> Freshness:
    """Return how current the queue data of ``cluster`` is: stale without a watcher heartbeat within
    ``TRAINER_PORTAL_QUEUES_STALE_SECONDS`` (default 15 s)."""
    now = now or timezone.now()
    state = QueueWatchState.objects.filter(cluster=cluster).first()
    if state is None or state.heartbeat_at is None:
        return Freshness(None, True, "no queue watcher has run yet (start manage.py cluster_watch)", False,
                         "unknown", "", 0)
    limit = float(getattr(settings, "TRAINER_PORTAL_QUEUES_STALE_SECONDS", STALE_AFTER_SECONDS))
    as_of = max(filter(None, (state.heartbeat_at, state.synced_at)))
    stale = (now - state.heartbeat_at).total_seconds() > limit
    why = "the queue watcher stopped reporting" if stale else (state.last_error or "")
    return Freshness(as_of, stale or bool(state.last_error), why, state.kueue_served, state.position_source,
                     state.positions_error, state.change_seq)


@dataclass
class PendingEntry:
    """One line of a pending list: a visible workload, or a run of invisible ones as a count."""

    workload: QueuedWorkload | None = None
    hidden: int = 0


@dataclass
class QueueDetail:
    """Everything a queue page or its API shows."""

    cluster: Cluster
    freshness: Freshness
    cluster_queue: ClusterQueue | None
    local_queue: LocalQueue | None = None
    local_queues: list[LocalQueue] = field(default_factory=list)
    hidden_local_queues: int = 0
    pending: list[PendingEntry] = field(default_factory=list)
    pending_total: int = 0
    admitted: list[QueuedWorkload] = field(default_factory=list)
    admitted_hidden: int = 0


def overview(user, cluster: Cluster) -> dict:
    """Return the cluster's ClusterQueues, cohorts, flavors and the LocalQueues ``user`` may see (others counted)."""
    seen = visibility(user)
    lqs = list(LocalQueue.objects.filter(cluster=cluster))
    visible = [q for q in lqs if seen.allows(q.namespace, cluster.pk)]
    return {"cluster": cluster, "freshness": freshness(cluster),
            "cluster_queues": list(ClusterQueue.objects.filter(cluster=cluster)),
            "cohorts": list(Cohort.objects.filter(cluster=cluster)),
            "flavors": list(ResourceFlavor.objects.filter(cluster=cluster)),
            "local_queues": visible, "hidden_local_queues": len(lqs) - len(visible)}


def _pending_lines(rows: list[QueuedWorkload], seen: Visibility, cluster_id: int) -> list[PendingEntry]:
    """Return the pending list with runs of invisible workloads folded into counts."""
    out: list[PendingEntry] = []
    for row in rows:
        if seen.allows(row.namespace, cluster_id):
            out.append(PendingEntry(workload=row))
        elif out and out[-1].workload is None:
            out[-1].hidden += 1
        else:
            out.append(PendingEntry(hidden=1))
    return out


def _ordered_pending(queryset) -> list[QueuedWorkload]:
    rows = list(queryset.filter(state="pending"))
    # Kueue's order: by position when known, else (positions unknown) by priority and queue time.
    rows.sort(key=lambda w: (w.position_in_cluster_queue if w.position_in_cluster_queue is not None else 10**9,
                             -w.priority, w.queued_at, w.namespace, w.name))
    return rows


def cluster_queue_detail(user, cluster: Cluster, name: str) -> QueueDetail:
    """Return a ClusterQueue with its LocalQueues and ordered pending list as ``user`` may see them.

    Raises QueueNotFound when there is no such ClusterQueue on ``cluster``."""
    queue = ClusterQueue.objects.filter(cluster=cluster, name=name).first()
    if queue is None:
        raise QueueNotFound(f"there is no ClusterQueue {name!r} on cluster {cluster.name!r}")
    seen = visibility(user)
    lqs = list(LocalQueue.objects.filter(cluster=cluster, cluster_queue=name))
    visible = [q for q in lqs if seen.allows(q.namespace, cluster.pk)]
    workloads = QueuedWorkload.objects.filter(cluster=cluster, cluster_queue=name)
    pending = _ordered_pending(workloads)
    admitted = list(workloads.filter(state="admitted").order_by("namespace", "name"))
    shown = [w for w in admitted if seen.allows(w.namespace, cluster.pk)]
    return QueueDetail(cluster, freshness(cluster), queue, local_queues=visible, hidden_local_queues=len(lqs) -
                       len(visible), pending=_pending_lines(pending, seen, cluster.pk), pending_total=len(pending),
                       admitted=shown, admitted_hidden=len(admitted) - len(shown))


def local_queue_detail(user, cluster: Cluster, namespace: str, name: str) -> QueueDetail:
    """Return a LocalQueue with its ClusterQueue and its own pending workloads in order.

    Raises QueueNotFound when there is no such LocalQueue or ``user`` may not see its namespace (alike)."""
    seen = visibility(user)
    queue = LocalQueue.objects.filter(cluster=cluster, namespace=namespace, name=name).first()
    if queue is None or not seen.allows(namespace, cluster.pk):
        raise QueueNotFound(f"there is no LocalQueue {namespace}/{name} you may see on cluster {cluster.name!r}")
    cq = ClusterQueue.objects.filter(cluster=cluster, name=queue.cluster_queue).first()
    workloads = QueuedWorkload.objects.filter(cluster=cluster, namespace=namespace, local_queue=name)
    pending = _ordered_pending(workloads)
    pending.sort(key=lambda w: (w.position_in_local_queue if w.position_in_local_queue is not None else 10**9,
                                -w.priority, w.queued_at, w.name))
    return QueueDetail(cluster, freshness(cluster), cq, local_queue=queue,
                       pending=[PendingEntry(workload=w) for w in pending], pending_total=len(pending),
                       admitted=list(workloads.filter(state="admitted").order_by("name")))


def change_token(user, cluster: Cluster) -> str:
    """Return a short token that changes when the queue data of ``cluster`` or its freshness changes."""
    state = QueueWatchState.objects.filter(cluster=cluster).values_list("change_seq", "heartbeat_at").first()
    seen = visibility(user)
    fresh = freshness(cluster)
    who = "*" if seen.everything else ",".join(sorted(seen.namespaces) + sorted(f"{c}/{n}" for c, n in seen.scoped))
    beat = int(state[1].timestamp()) if state and state[1] else 0
    digest = hashlib.blake2b(who.encode(), digest_size=6).hexdigest()
    return f"{cluster.pk}-{state[0] if state else 0}-{beat}-{int(fresh.stale)}-{digest}"
