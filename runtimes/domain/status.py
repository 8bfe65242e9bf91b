"""The sync status of a policy as people read it: is the current revision the one applied to the cluster?

A fact apart from the cluster status (`runtimes.choices.ClusterState`: does the live object exist and match what
was applied?), as Argo CD keeps "Synced / OutOfSync" apart from "Healthy / Degraded". "Synced" is only ever said
when the applied revision is the current one.
"""

from __future__ import annotations

from dataclasses import dataclass

DRAFT, QUEUED, SYNCING, SYNCED, OUT_OF_SYNC, FAILED = "draft", "queued", "syncing", "synced", "out_of_sync", "failed"
SYNC_STATUSES = {
    DRAFT: "Draft",
    QUEUED: "Queued",
    SYNCING: "Syncing",
    SYNCED: "Synced",
    OUT_OF_SYNC: "Out of sync",
    FAILED: "Failed",
}
# The sync states (`runtimes.choices.SyncState`) in which a revision is on the cluster.
LIVE_STATES = ("synced", "drifted")


@dataclass(frozen=True)
class SyncStatus:
    """`code` (a key of SYNC_STATUSES, stable for filters and the API) and the `label` shown at a glance."""

    code: str
    label: str


def sync_status(
    *, state: str, version: int, applied_revision: int | None, requested_revision: int | None
) -> SyncStatus:
    """Return the sync status of a policy at `version` whose sync state machine is in `state`.

    Queued, syncing and failed name the revision concerned; a live state is "Synced" only when `applied_revision`
    is `version`, and "Out of sync (revision N not applied)" otherwise.
    """
    if state == QUEUED:
        return SyncStatus(QUEUED, f"Queued (revision {requested_revision or version})")
    if state == SYNCING:
        return SyncStatus(SYNCING, f"Syncing (revision {requested_revision or version})")
    if state == FAILED:
        return SyncStatus(FAILED, f"Failed (revision {requested_revision or version} not applied)")
    if state in LIVE_STATES and applied_revision is not None:
        if applied_revision == version:
            return SyncStatus(SYNCED, "Synced")
        return SyncStatus(OUT_OF_SYNC, f"Out of sync (revision {version} not applied)")
    return SyncStatus(DRAFT, "Draft")


# --------------------------------------------------------------------------------------------------- many clusters

# The policy-wide state of a policy synced to several clusters is the most urgent of its clusters' states: a failure
# anywhere is a failure, work in flight anywhere is in flight, a cluster it never reached keeps it a draft, and it
# is "synced" only when it is synced everywhere it should be.
STATE_PRIORITY = ("failed", "syncing", "queued", "draft", "drifted", "synced")
CLUSTER_STATE_PRIORITY = ("missing", "drifted", "not_applied", "matches")


@dataclass(frozen=True)
class SyncFacts:
    """What one (policy, cluster) sync row says; the defaults describe a cluster the policy never reached."""

    cluster: str
    is_default: bool = False
    state: str = DRAFT
    requested_revision: int | None = None
    applied_revision: int | None = None
    resource_version: str = ""
    generation: int | None = None
    last_synced_at: object = None
    error: str = ""
    error_fields: list = ()  # type: ignore[assignment]
    drift_diff: str = ""
    cluster_state: str = "not_applied"
    startup_deadlock_confirmed: bool = False


@dataclass(frozen=True)
class SyncSummary:
    """The policy-wide view of several :class:`SyncFacts` (see :func:`summarize`)."""

    state: str
    requested_revision: int | None
    applied_revision: int | None
    resource_version: str
    generation: int | None
    last_synced_at: object
    error: str
    error_fields: list
    drift_diff: str
    cluster_state: str
    startup_deadlock_confirmed: bool


def _worst(values: list[str], priority: tuple[str, ...], empty: str) -> str:
    ranked = [value for value in priority if value in values]
    return ranked[0] if ranked else (values[0] if values else empty)


def summarize(version: int, facts: list[SyncFacts]) -> SyncSummary:
    """Return the policy-wide summary of the target clusters' ``facts`` (one per target cluster).

    ``state`` and ``cluster_state`` are the most urgent (STATE_PRIORITY, CLUSTER_STATE_PRIORITY); the applied
    revision is the one on every target (the lowest; None when one has none); the requested revision the highest;
    resourceVersion and generation are the default cluster's (else the first cluster's), as they only mean something
    on one cluster; errors and drift diffs name their cluster when there are several. With a single target the
    summary is that cluster's facts unchanged. No targets at all: a draft.
    """
    if len(facts) == 1:
        one = facts[0]
        return SyncSummary(one.state, one.requested_revision, one.applied_revision, one.resource_version,
                           one.generation, one.last_synced_at, one.error, list(one.error_fields), one.drift_diff,
                           one.cluster_state, one.startup_deadlock_confirmed)
    if not facts:
        return SyncSummary(DRAFT, None, None, "", None, None, "", [], "", "not_applied", False)
    applied = [f.applied_revision for f in facts]
    requested = [f.requested_revision for f in facts if f.requested_revision is not None]
    synced_at = [f.last_synced_at for f in facts if f.last_synced_at is not None]
    anchor = next((f for f in facts if f.is_default), facts[0])
    return SyncSummary(
        state=_worst([f.state for f in facts], STATE_PRIORITY, DRAFT),
        requested_revision=max(requested) if requested else None,
        applied_revision=None if any(a is None for a in applied) else min(applied),  # type: ignore[type-var]
        resource_version=anchor.resource_version,
        generation=anchor.generation,
        last_synced_at=max(synced_at) if synced_at else None,  # type: ignore[type-var]
        error="\n".join(f"{f.cluster}: {f.error}" for f in facts if f.error),
        error_fields=[{**x, "cluster": f.cluster} for f in facts for x in f.error_fields if isinstance(x, dict)],
        drift_diff="\n".join(f"# cluster {f.cluster}\n{f.drift_diff}" for f in facts if f.drift_diff),
        cluster_state=_worst([f.cluster_state for f in facts], CLUSTER_STATE_PRIORITY, "not_applied"),
        startup_deadlock_confirmed=any(f.startup_deadlock_confirmed for f in facts),
    )


def cluster_status(version: int, fact: SyncFacts) -> SyncStatus:
    """Return the status of the policy at ``version`` on one cluster ("Drifted" when the live object differs)."""
    if fact.state == "drifted" and fact.applied_revision == version:
        label = "Missing on the cluster" if fact.cluster_state == "missing" else "Drifted"
        return SyncStatus("drifted", label)
    return sync_status(state=fact.state, version=version, applied_revision=fact.applied_revision,
                       requested_revision=fact.requested_revision)


def describe_clusters(version: int, facts: list[SyncFacts]) -> str:
    """Return the policy's clusters at a glance: "synced on 2 of 2 clusters", "out of sync on gpu-west",
    "synced on 1 of 2 clusters; drifted on gpu-west", or "no target cluster" when none is enabled."""
    if not facts:
        return "no target cluster"
    by_code: dict[str, list[str]] = {}
    for fact in facts:
        by_code.setdefault(cluster_status(version, fact).code, []).append(fact.cluster)
    synced = len(by_code.get(SYNCED, []))
    words = {DRAFT: "not applied", OUT_OF_SYNC: "out of sync", "drifted": "drifted", QUEUED: "queued",
             SYNCING: "syncing", FAILED: "failed"}
    parts = [f"synced on {synced} of {len(facts)} cluster{'s' if len(facts) != 1 else ''}"] if synced else []
    for code in (FAILED, "drifted", OUT_OF_SYNC, SYNCING, QUEUED, DRAFT):
        if by_code.get(code):
            parts.append(f"{words[code]} on {', '.join(by_code[code])}")
    return "; ".join(parts)
