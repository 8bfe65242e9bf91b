"""Enumerations stored in runtime-policy rows (sync state, revision source, import mode, list ordering)."""

from __future__ import annotations

from django.db import models


class SyncState(models.TextChoices):
    """Where a policy stands relative to the cluster; advanced by the cluster-sync services."""

    DRAFT = "draft", "Draft"
    QUEUED = "queued", "Queued"
    SYNCING = "syncing", "Syncing"
    SYNCED = "synced", "Synced"
    FAILED = "failed", "Failed"
    DRIFTED = "drifted", "Drifted"


# A worker owns the row (or is about to).
ACTIVE_SYNC_STATES = (SyncState.QUEUED, SyncState.SYNCING)
# The runtime is on the cluster as one of our revisions.
LIVE_SYNC_STATES = (SyncState.SYNCED, SyncState.DRIFTED)


class ClusterState(models.TextChoices):
    """What the cluster holds for a policy, as last seen by an apply or a drift check (a fact apart from the sync
    status, which compares the current revision with the applied one)."""

    NOT_APPLIED = "not_applied", "Not applied"
    MATCHES = "matches", "Matches"
    DRIFTED = "drifted", "Drifted"
    MISSING = "missing", "Missing on the cluster"


class RevisionSource(models.TextChoices):
    """Which interface produced a revision."""

    FORM = "form", "Form"
    YAML = "yaml", "YAML editor"
    API = "api", "REST API"
    IMPORT = "import", "Import"
    ROLLBACK = "rollback", "Rollback"
    ADOPT = "adopt", "Adopted from cluster"


class ImportMode(models.TextChoices):
    """How an import treats a name that already exists."""

    CREATE_ONLY = "create-only", "Create only (existing names are an error)"
    UPSERT = "upsert", "Create or update"


# Public ordering keys for policy lists (API `ordering`, HTML sort links) → ORM order_by fields.
POLICY_ORDERINGS: dict[str, tuple[str, ...]] = {
    "name": ("name",),
    "-name": ("-name",),
    "framework": ("framework", "name"),
    "-framework": ("-framework", "name"),
    "scheduling_mode": ("scheduling_mode", "name"),
    "-scheduling_mode": ("-scheduling_mode", "name"),
    # The policy-wide state over its target clusters (annotated by `runtimes.selectors.with_sync_summary`).
    "sync_state": ("summary_sync_state", "name"),
    "-sync_state": ("-summary_sync_state", "name"),
    "version": ("version", "name"),
    "-version": ("-version", "name"),
    "created_at": ("created_at", "name"),
    "-created_at": ("-created_at", "name"),
    "updated_at": ("updated_at", "name"),
    "-updated_at": ("-updated_at", "name"),
}
