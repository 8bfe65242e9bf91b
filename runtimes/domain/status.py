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
