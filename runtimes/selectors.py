"""Read operations on runtime policies and their revisions. Querysets come with the joins their callers need."""

from __future__ import annotations

from typing import Any

from django.db.models import Case, Exists, Max, OuterRef, Q, QuerySet, Value, When

from runtimes.choices import ACTIVE_SYNC_STATES, POLICY_ORDERINGS, ClusterState, SyncState
from runtimes.domain import status
from runtimes.domain.diff import Change, structural_diff, unified_diff
from runtimes.domain.labels import is_dns1123_subdomain
from runtimes.domain.status import LIVE_STATES
from runtimes.errors import PolicyNotFound, RevisionNotFound
from runtimes.models import PolicyRevision, PolicySync, RuntimePolicy, SyncEvent
from trainer_portal import outbox, roles
from trainer_portal.cluster.models import Cluster
from trainer_portal.health.selectors import queued_sync_warning


def policy_list(
    *,
    search: str = "",
    framework: str = "",
    scheduling_mode: str = "",
    sync_state: str = "",
    sync_status: str = "",
    cluster_status: str = "",
    ordering: str = "name",
) -> QuerySet[RuntimePolicy]:
    """Return policies matching the filters (empty filter = any), with their creator and last editor joined.

    `search` matches name, framework and scheduling summary (case-insensitive substring). `ordering` is a key of
    `choices.POLICY_ORDERINGS` (e.g. "name", "-updated_at"). Raises ValueError for an unknown ordering.
    """
    if ordering not in POLICY_ORDERINGS:
        raise ValueError(f"unknown ordering {ordering!r}; use one of {', '.join(POLICY_ORDERINGS)}")
    queryset = with_sync_summary(RuntimePolicy.objects.select_related("created_by", "updated_by"))
    if search:
        queryset = queryset.filter(
            Q(name__icontains=search) | Q(framework__icontains=search) | Q(scheduling_summary__icontains=search)
        )
    if framework:
        queryset = queryset.filter(framework=framework)
    if scheduling_mode:
        queryset = queryset.filter(scheduling_mode=scheduling_mode)
    if sync_state:
        queryset = queryset.filter(summary_sync_state=sync_state)
    if sync_status:
        queryset = queryset.filter(_sync_status_filter(sync_status))
    if cluster_status:
        queryset = queryset.filter(summary_cluster_state=cluster_status)
    return queryset.order_by(*POLICY_ORDERINGS[ordering])


def _target_rows() -> QuerySet[PolicySync]:
    """The sync rows of the outer policy on its target clusters (chosen ones, or every enabled one)."""
    return PolicySync.objects.filter(policy=OuterRef("pk"), cluster__enabled=True).filter(
        Q(policy__target_clusters__isnull=True) | Q(cluster__targeted_policies=OuterRef("pk"))
    )


def _missing_targets() -> QuerySet[Cluster]:
    """The outer policy's target clusters on which it has no sync row yet (a draft there)."""
    through = RuntimePolicy.target_clusters.through
    no_choice = ~Exists(through.objects.filter(runtimepolicy_id=OuterRef(OuterRef("pk"))))
    return (
        Cluster.objects.filter(enabled=True)
        .annotate(all_targets=no_choice)
        .filter(Q(all_targets=True) | Q(targeted_policies=OuterRef("pk")))
        .exclude(Exists(PolicySync.objects.filter(policy=OuterRef(OuterRef("pk")), cluster=OuterRef("pk"))))
    )


def with_sync_summary(queryset: QuerySet[RuntimePolicy], *, prefetch: bool = True) -> QuerySet[RuntimePolicy]:
    """Return ``queryset`` annotated with the policy-wide sync summary as SQL (``summary_sync_state``,
    ``summary_cluster_state``), the same rule `runtimes.domain.status.summarize` applies in Python, and (unless
    ``prefetch`` is False, e.g. for ``values()``) with the rows the Python summary reads prefetched."""
    rows = _target_rows()
    missing = Exists(_missing_targets())

    def has(**lookup):
        return Exists(rows.filter(**lookup))

    state = Case(
        When(has(sync_state=SyncState.FAILED), then=Value(SyncState.FAILED.value)),
        When(has(sync_state=SyncState.SYNCING), then=Value(SyncState.SYNCING.value)),
        When(has(sync_state=SyncState.QUEUED), then=Value(SyncState.QUEUED.value)),
        When(has(sync_state=SyncState.DRAFT), then=Value(SyncState.DRAFT.value)),
        When(missing, then=Value(SyncState.DRAFT.value)),
        When(has(sync_state=SyncState.DRIFTED), then=Value(SyncState.DRIFTED.value)),
        When(has(sync_state=SyncState.SYNCED), then=Value(SyncState.SYNCED.value)),
        default=Value(SyncState.DRAFT.value),
    )
    cluster_state = Case(
        When(has(cluster_state=ClusterState.MISSING), then=Value(ClusterState.MISSING.value)),
        When(has(cluster_state=ClusterState.DRIFTED), then=Value(ClusterState.DRIFTED.value)),
        When(has(cluster_state=ClusterState.NOT_APPLIED), then=Value(ClusterState.NOT_APPLIED.value)),
        When(missing, then=Value(ClusterState.NOT_APPLIED.value)),
        When(has(cluster_state=ClusterState.MATCHES), then=Value(ClusterState.MATCHES.value)),
        default=Value(ClusterState.NOT_APPLIED.value),
    )
    annotated = queryset.annotate(
        summary_sync_state=state,
        summary_cluster_state=cluster_state,
        summary_unapplied=has(applied_revision__isnull=True) | missing,
        summary_behind=Exists(rows.exclude(applied_revision=OuterRef("version"))) | missing,
    )
    return annotated if not prefetch else annotated.prefetch_related("syncs", "target_clusters").with_clusters()


def _sync_status_filter(code: str) -> Q:
    """Return the rows whose `RuntimePolicy.sync_status` has `code` (the same rule, as a query over the
    annotations of `with_sync_summary`)."""
    live = Q(summary_sync_state__in=LIVE_STATES, summary_unapplied=False)
    if code == status.SYNCED:
        return live & Q(summary_behind=False)
    if code == status.OUT_OF_SYNC:
        return live & Q(summary_behind=True)
    if code == status.DRAFT:
        return ~Q(summary_sync_state__in=[status.QUEUED, status.SYNCING, status.FAILED]) & ~live
    return Q(summary_sync_state=code)


def policy_get(*, name: str) -> RuntimePolicy:
    """Return the policy named `name` with creator and last editor joined, `sync_warning` set (see
    `policy_sync_warning`) and `cluster_rows` (see `policy_cluster_rows`). Raises PolicyNotFound.

    A name no policy can have (not a DNS-1123 subdomain: a NUL, a "/", 300 characters) is not looked up;
    PostgreSQL refuses a NUL in a query outright.
    """
    if not is_dns1123_subdomain(name):
        raise PolicyNotFound(name)
    try:
        policy = with_sync_summary(RuntimePolicy.objects.select_related("created_by", "updated_by")).get(name=name)
    except RuntimePolicy.DoesNotExist:
        raise PolicyNotFound(name)
    policy.sync_warning = policy_sync_warning(policy=policy)
    policy.cluster_rows = policy_cluster_rows(policy=policy)
    return policy


def policy_cluster_rows(*, policy: RuntimePolicy) -> list[dict[str, Any]]:
    """Return one dict per target cluster of ``policy`` (default first): ``{cluster, display_name, is_default,
    state, status, label, applied_revision, requested_revision, cluster_state, cluster_state_label, drifted,
    drift_diff, error, error_fields, last_synced_at, resource_version, generation, startup_deadlock_confirmed}``
    (a cluster it never reached is a draft there)."""
    rows = []
    for entry in policy.cluster_syncs():
        facts = entry.facts()
        code = status.cluster_status(policy.version, facts)
        rows.append({
            "cluster": entry.cluster.name,
            "display_name": str(entry.cluster),
            "is_default": entry.cluster.is_default,
            "state": facts.state,
            "status": code.code,
            "label": code.label,
            "applied_revision": facts.applied_revision,
            "requested_revision": facts.requested_revision,
            "cluster_state": facts.cluster_state,
            "cluster_state_label": str(ClusterState(facts.cluster_state).label),
            "drifted": facts.state == SyncState.DRIFTED,
            "drift_diff": facts.drift_diff,
            "error": facts.error,
            "error_fields": list(facts.error_fields),
            "last_synced_at": facts.last_synced_at,
            "resource_version": facts.resource_version,
            "generation": facts.generation,
            "startup_deadlock_confirmed": facts.startup_deadlock_confirmed,
        })
    return rows


def policy_sync_warning(*, policy: RuntimePolicy) -> str:
    """Return why `policy`'s queued or syncing sync is not moving (no live worker for a while), or ""."""
    if policy.sync_state not in ACTIVE_SYNC_STATES:
        return ""
    return queued_sync_warning()


def policy_frameworks() -> list[str]:
    """Return the distinct non-empty frameworks in use, sorted (for filter drop-downs)."""
    return list(
        RuntimePolicy.objects.exclude(framework="").order_by("framework").values_list("framework", flat=True).distinct()
    )


def revision_list(*, policy: RuntimePolicy) -> QuerySet[PolicyRevision]:
    """Return the revisions of `policy`, newest first, with their authors joined."""
    return PolicyRevision.objects.filter(policy=policy).select_related("author").order_by("-number")


def revision_get(*, policy: RuntimePolicy, number: int) -> PolicyRevision:
    """Return revision `number` of `policy`. Raises RevisionNotFound."""
    try:
        return PolicyRevision.objects.select_related("author").get(policy=policy, number=number)
    except PolicyRevision.DoesNotExist:
        raise RevisionNotFound(policy.name, number)


def revision_diff(*, policy: RuntimePolicy, from_number: int, to_number: int) -> tuple[str, list[Change]]:
    """Return (unified YAML diff text, structural changes) from revision `from_number` to `to_number`.

    Raises RevisionNotFound when either revision does not exist.
    """
    manifests: dict[int, Any] = dict(
        PolicyRevision.objects.filter(policy=policy, number__in=[from_number, to_number]).values_list(
            "number", "manifest"
        )
    )
    for number in (from_number, to_number):
        if number not in manifests:
            raise RevisionNotFound(policy.name, number)
    before, after = manifests[from_number], manifests[to_number]
    text = unified_diff(before, after, old_label=f"revision {from_number}", new_label=f"revision {to_number}")
    return text, structural_diff(before, after)


def sync_state_counts() -> dict[str, int]:
    """Return ``{sync state: number of policies}`` (policy-wide states, see `with_sync_summary`) for every state
    (0 included), in the states' order."""
    counts = dict.fromkeys(SyncState.values, 0)
    for state in with_sync_summary(RuntimePolicy.objects.all(), prefetch=False).values_list(
        "summary_sync_state", flat=True
    ):
        counts[state] = counts.get(state, 0) + 1
    return counts


def policies_needing_attention(*, limit: int = 50) -> QuerySet[RuntimePolicy]:
    """Return the policies failed or drifted (policy-wide, see `with_sync_summary`) by name (at most ``limit``)."""
    return (
        with_sync_summary(RuntimePolicy.objects.all())
        .filter(summary_sync_state__in=[SyncState.FAILED, SyncState.DRIFTED])
        .order_by("name")[:limit]
    )


DEADLOCK_CODE_PREFIX = "deadlock."


def policies_bulk_apply_plan() -> list[dict[str, Any]]:
    """Return what "Apply all policies" would do, one dict per policy by name.

    ``{name, version, applied_revision, sync_state, change, draft, up_to_date, deadlocks: [message]}``: ``change``
    is "create" (never applied), "update" (an older revision is applied) or "reapply" (the current revision is
    already applied; the worker only checks it); ``draft`` means never applied to the cluster; ``deadlocks`` are
    the current revision's deadlock warnings (from the validator, stored with the revision).
    """
    plan = []
    rows = [
        {"name": p.name, "version": p.version, "applied_revision": p.applied_revision, "sync_state": p.sync_state,
         "warnings": p.warnings, "clusters": p.clusters_summary}
        for p in with_sync_summary(RuntimePolicy.objects.order_by("name"))
    ]
    for row in rows:
        applied = row["applied_revision"]
        change = "create" if not applied else "update" if applied != row["version"] else "reapply"
        warnings = row["warnings"] if isinstance(row["warnings"], list) else []
        deadlocks = [
            str(w.get("message") or w.get("code"))
            for w in warnings
            if isinstance(w, dict) and str(w.get("code") or "").startswith(DEADLOCK_CODE_PREFIX)
        ]
        plan.append(
            {
                "name": row["name"],
                "version": row["version"],
                "applied_revision": applied,
                "sync_state": row["sync_state"],
                "change": change,
                "draft": row["sync_state"] == SyncState.DRAFT,
                "up_to_date": change == "reapply" and row["sync_state"] == SyncState.SYNCED,
                "deadlocks": deadlocks,
                "clusters": row["clusters"],
            }
        )
    return plan


def policies_with_ignored_topology() -> list[dict[str, Any]]:
    """Return ``[{name, problems: [{path, message}]}]`` of the policies whose topology constraints the cluster
    ignores, when the last cluster check found the TopologyAwareWorkloadScheduling gate off ([] otherwise)."""
    from trainer_portal.cluster import selectors as cluster_selectors

    from .domain.policy import ValidationOptions, validate_runtime

    if cluster_selectors.scheduling_facts()["topology_gate"] is not False:
        return []
    gate_off = ValidationOptions(topology_gate=False)
    found = []
    for name, manifest in RuntimePolicy.objects.order_by("name").values_list("name", "manifest"):
        problems = [
            {"path": p.path, "message": p.message}
            for p in validate_runtime(manifest, gate_off).problems
            if p.code == "scheduling.topology.gate_off"
        ]
        if problems:
            found.append({"name": name, "problems": problems})
    return found


def manifest_in_cluster_form(manifest: dict) -> dict:
    """Return `manifest` as exports and the guided form write it: every disruptionMode in the form the cluster's
    ClusterTrainingRuntime CRD embeds, as the last cluster check found (decision D9); unchanged while that form is
    unknown."""
    from trainer_portal.cluster import selectors as cluster_selectors

    from .domain.policy import convert_disruption_modes

    return convert_disruption_modes(manifest, cluster_selectors.scheduling_facts()["disruption_mode"])


# -- the outbox source (trainer_portal.outbox): sync failures and drift for notifications --------------------------


def sync_events_after(cursor: int, limit: int) -> list[outbox.Event]:
    """Return up to ``limit`` sync events with id > ``cursor`` (ascending) as outbox events (sequence: the id)."""
    rows = SyncEvent.objects.filter(id__gt=cursor).select_related("cluster").order_by("id")[:limit]
    return [outbox.Event(source="sync", sequence=row.id, kind=row.kind, cluster_id=row.cluster_id,
                         cluster=row.cluster.name, at=row.at, subject=row.policy_name, runtime=row.policy_name,
                         message=row.message[:2000], path=f"/runtimes/{row.policy_name}/",
                         extra={"revision": row.revision}) for row in rows]


def sync_event_head() -> int:
    """Return the highest sync event id written so far (0 for none)."""
    return SyncEvent.objects.aggregate(m=Max("id"))["m"] or 0


def sync_event_visible(user, event: outbox.Event) -> bool:
    """Return True when ``user`` may read policies and their sync state."""
    return roles.has_capability(user, roles.POLICIES_VIEW)


SYNC_SOURCE = outbox.Source(name="sync", kinds=(outbox.SYNC_FAILED, outbox.DRIFT), events_after=sync_events_after,
                            head=sync_event_head, visible=sync_event_visible)
