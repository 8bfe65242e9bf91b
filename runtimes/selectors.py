"""Read operations on runtime policies and their revisions. Querysets come with the joins their callers need."""

from __future__ import annotations

from typing import Any

from django.db.models import F, Q, QuerySet

from runtimes.choices import ACTIVE_SYNC_STATES, POLICY_ORDERINGS, SyncState
from runtimes.domain import status
from runtimes.domain.diff import Change, structural_diff, unified_diff
from runtimes.domain.labels import is_dns1123_subdomain
from runtimes.domain.status import LIVE_STATES
from runtimes.errors import PolicyNotFound, RevisionNotFound
from runtimes.models import PolicyRevision, RuntimePolicy
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
    queryset = RuntimePolicy.objects.select_related("created_by", "updated_by")
    if search:
        queryset = queryset.filter(
            Q(name__icontains=search) | Q(framework__icontains=search) | Q(scheduling_summary__icontains=search)
        )
    if framework:
        queryset = queryset.filter(framework=framework)
    if scheduling_mode:
        queryset = queryset.filter(scheduling_mode=scheduling_mode)
    if sync_state:
        queryset = queryset.filter(sync_state=sync_state)
    if sync_status:
        queryset = queryset.filter(_sync_status_filter(sync_status))
    if cluster_status:
        queryset = queryset.filter(cluster_state=cluster_status)
    return queryset.order_by(*POLICY_ORDERINGS[ordering])


def _sync_status_filter(code: str) -> Q:
    """Return the rows whose `RuntimePolicy.sync_status` has `code` (the same rule, as a query)."""
    live = Q(sync_state__in=LIVE_STATES, applied_revision__isnull=False)
    if code == status.SYNCED:
        return live & Q(applied_revision=F("version"))
    if code == status.OUT_OF_SYNC:
        return live & ~Q(applied_revision=F("version"))
    if code == status.DRAFT:
        return ~Q(sync_state__in=[status.QUEUED, status.SYNCING, status.FAILED]) & ~live
    return Q(sync_state=code)


def policy_get(*, name: str) -> RuntimePolicy:
    """Return the policy named `name` with creator and last editor joined, and `sync_warning` set (see
    `policy_sync_warning`). Raises PolicyNotFound.

    A name no policy can have (not a DNS-1123 subdomain: a NUL, a "/", 300 characters) is not looked up;
    PostgreSQL refuses a NUL in a query outright.
    """
    if not is_dns1123_subdomain(name):
        raise PolicyNotFound(name)
    try:
        policy = RuntimePolicy.objects.select_related("created_by", "updated_by").get(name=name)
    except RuntimePolicy.DoesNotExist:
        raise PolicyNotFound(name)
    policy.sync_warning = policy_sync_warning(policy=policy)
    return policy


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
    """Return ``{sync state: number of policies}`` for every state (0 included), in the states' order."""
    counts = dict.fromkeys(SyncState.values, 0)
    for state in RuntimePolicy.objects.values_list("sync_state", flat=True):
        counts[state] = counts.get(state, 0) + 1
    return counts


def policies_needing_attention(*, limit: int = 50) -> QuerySet[RuntimePolicy]:
    """Return the failed or drifted policies by name (at most ``limit``)."""
    return RuntimePolicy.objects.filter(sync_state__in=[SyncState.FAILED, SyncState.DRIFTED]).order_by("name")[:limit]


DEADLOCK_CODE_PREFIX = "deadlock."


def policies_bulk_apply_plan() -> list[dict[str, Any]]:
    """Return what "Apply all policies" would do, one dict per policy by name.

    ``{name, version, applied_revision, sync_state, change, draft, up_to_date, deadlocks: [message]}``: ``change``
    is "create" (never applied), "update" (an older revision is applied) or "reapply" (the current revision is
    already applied; the worker only checks it); ``draft`` means never applied to the cluster; ``deadlocks`` are
    the current revision's deadlock warnings (from the validator, stored with the revision).
    """
    plan = []
    rows = RuntimePolicy.objects.order_by("name").values(
        "name", "version", "applied_revision", "sync_state", "warnings"
    )
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
