"""Runtime policies (one ClusterTrainingRuntime manifest each) and their append-only revision history.

Rows are written only through `runtimes.services`; read them through `runtimes.selectors`.
"""

from __future__ import annotations

import json
import uuid
from functools import partial

from django.conf import settings
from django.db import models

from .choices import ClusterState, RevisionSource, SyncState
from .domain.status import SyncStatus, sync_status


class ManifestField(models.JSONField):
    """A JSONField that keeps the manifest's key order on PostgreSQL too (column type `json`, not `jsonb`).

    jsonb re-sorts object keys (shortest first), so a stored manifest would come back as `kind`, `spec`, `metadata`,
    `apiVersion`; people read and diff these manifests, so we keep the order they wrote. Manifests are never queried
    by content (no containment or key lookups), which is all jsonb would add.
    """

    def db_type(self, connection):
        return "json" if connection.vendor == "postgresql" else super().db_type(connection)

    def get_db_prep_value(self, value, connection, prepared=False):
        if connection.vendor != "postgresql":
            return super().get_db_prep_value(value, connection, prepared)
        from psycopg.types.json import Json  # only reached on PostgreSQL, whose driver is psycopg 3

        if not prepared:
            value = self.get_prep_value(value)
        return Json(value, dumps=partial(json.dumps, cls=self.encoder) if self.encoder else json.dumps)

    def from_db_value(self, value, expression, connection):
        # psycopg decodes `json` columns itself (Django only registers a text loader for jsonb).
        if value is not None and not isinstance(value, str):
            return value
        return super().from_db_value(value, expression, connection)


class RuntimePolicy(models.Model):
    """One ClusterTrainingRuntime: the current manifest, facts derived from it, and its cluster-sync status.

    `manifest` duplicates the latest revision's manifest so lists and detail pages need no join; `version` is the
    current revision number and doubles as the optimistic-concurrency token clients send back on writes.
    """

    name = models.CharField(max_length=253, unique=True, help_text="metadata.name of the manifest; immutable.")
    manifest = ManifestField(help_text="The current revision's manifest.")
    version = models.PositiveIntegerField(default=1, help_text="Current revision number; send it back on writes.")
    framework = models.CharField(max_length=63, blank=True)
    scheduling_mode = models.CharField(max_length=32, blank=True)
    scheduling_summary = models.CharField(max_length=200, blank=True)
    warnings = models.JSONField(default=list, blank=True, help_text="Validation warnings of the current revision.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    # Cluster sync: written by the sync services; the field names are part of the contract.
    sync_state = models.CharField(max_length=16, choices=SyncState, default=SyncState.DRAFT)
    sync_requested_revision = models.PositiveIntegerField(null=True, blank=True)
    applied_revision = models.PositiveIntegerField(null=True, blank=True)
    applied_resource_version = models.CharField(max_length=64, blank=True)
    applied_generation = models.BigIntegerField(null=True, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    last_sync_error = models.TextField(blank=True)
    sync_error_fields = models.JSONField(default=list, blank=True)
    drift_diff = models.TextField(blank=True)
    cluster_state = models.CharField(
        max_length=16, choices=ClusterState, default=ClusterState.NOT_APPLIED,
        help_text="What the cluster holds, as last seen by an apply or a drift check.",
    )
    sync_startup_deadlock_confirmed = models.BooleanField(
        default=False,
        help_text="The last apply request confirmed that a gang of this policy never reaches minCount (a dependsOn "
        "pair inside one gang).",
    )

    class Meta:
        ordering = ["name"]
        verbose_name = "runtime policy"
        verbose_name_plural = "runtime policies"
        indexes = [
            models.Index(fields=["framework"], name="runtimes_policy_framework"),
            models.Index(fields=["scheduling_mode"], name="runtimes_policy_sched_mode"),
            models.Index(fields=["sync_state"], name="runtimes_policy_sync_state"),
            models.Index(fields=["-updated_at"], name="runtimes_policy_updated"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def sync_status(self) -> SyncStatus:
        """Return the sync status at a glance: "Synced" only when the applied revision is the current one."""
        return sync_status(
            state=self.sync_state,
            version=self.version,
            applied_revision=self.applied_revision,
            requested_revision=self.sync_requested_revision,
        )


class PolicyRevision(models.Model):
    """One saved state of a policy's manifest; revisions are never changed, only added (rollback adds one too)."""

    policy = models.ForeignKey(RuntimePolicy, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    manifest = ManifestField()
    message = models.CharField(max_length=500, blank=True)
    source = models.CharField(max_length=16, choices=RevisionSource)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Kept beside the FK so history still names the author after the account is deleted.
    author_name = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["policy", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "number"], name="runtimes_revision_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.policy_id}#{self.number}"


class SyncBatch(models.Model):
    """One bulk sync: which revision of which policies was asked for, by whom and when.

    Progress is not stored here: it is derived from the policies' rows (see `runtimes.services.sync_batches`),
    which the sync service alone writes.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # [[policy id, revision], ...] as requested; policies deleted since simply drop out of the progress.
    items = models.JSONField(default=list)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "sync batches"

    def __str__(self) -> str:
        return self.id.hex
