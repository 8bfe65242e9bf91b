"""Runtime policies (one ClusterTrainingRuntime manifest each) and their append-only revision history.

Rows are written only through `runtimes.services`; read them through `runtimes.selectors`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .choices import RevisionSource, SyncState


class RuntimePolicy(models.Model):
    """One ClusterTrainingRuntime: the current manifest, facts derived from it, and its cluster-sync status.

    `manifest` duplicates the latest revision's manifest so lists and detail pages need no join; `version` is the
    current revision number and doubles as the optimistic-concurrency token clients send back on writes.
    """

    name = models.CharField(max_length=253, unique=True, help_text="metadata.name of the manifest; immutable.")
    manifest = models.JSONField(help_text="The current revision's manifest.")
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


class PolicyRevision(models.Model):
    """One saved state of a policy's manifest; revisions are never changed, only added (rollback adds one too)."""

    policy = models.ForeignKey(RuntimePolicy, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    manifest = models.JSONField()
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
