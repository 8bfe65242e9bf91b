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
from .domain.status import SyncFacts, SyncStatus, SyncSummary, describe_clusters, summarize, sync_status


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


class RuntimePolicyQuerySet(models.QuerySet):
    """Policies; `with_clusters` reads the enabled clusters once for every policy it yields (lists show each
    policy's clusters without a query per policy)."""

    _with_clusters = False

    def with_clusters(self) -> RuntimePolicyQuerySet:
        """Return this queryset, giving each policy it yields the enabled clusters read in one query."""
        clone = self._chain()
        clone._with_clusters = True
        return clone

    def _clone(self):
        clone = super()._clone()
        clone._with_clusters = self._with_clusters
        return clone

    def _fetch_all(self):
        primed = self._result_cache is not None
        super()._fetch_all()
        if self._with_clusters and not primed and self._result_cache:
            from trainer_portal.cluster.models import Cluster

            enabled = list(Cluster.objects.filter(enabled=True))
            for policy in self._result_cache:
                if isinstance(policy, RuntimePolicy):
                    policy.__dict__["_enabled_clusters"] = enabled


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

    # Which clusters the policy is synced to: none chosen = every enabled cluster (decision "Policies per cluster").
    target_clusters = models.ManyToManyField(
        "cluster.Cluster", blank=True, related_name="targeted_policies",
        help_text="The clusters this policy is synced to; empty = every enabled cluster.",
    )

    objects = RuntimePolicyQuerySet.as_manager()
    class Meta:
        ordering = ["name"]
        verbose_name = "runtime policy"
        verbose_name_plural = "runtime policies"
        indexes = [
            models.Index(fields=["framework"], name="runtimes_policy_framework"),
            models.Index(fields=["scheduling_mode"], name="runtimes_policy_sched_mode"),
            models.Index(fields=["-updated_at"], name="runtimes_policy_updated"),
        ]

    def __str__(self) -> str:
        return self.name

    def refresh_from_db(self, *args, **kwargs):
        self.__dict__.pop("_cluster_syncs", None)
        super().refresh_from_db(*args, **kwargs)

    def cluster_syncs(self) -> list[ClusterSync]:
        """Return one :class:`ClusterSync` per target cluster (default cluster first), computed once per instance.

        A target cluster the policy was never requested on has no row yet: it stands as a draft there. Uses the
        prefetched ``syncs`` and ``target_clusters`` when the queryset has them.
        """
        cached = self.__dict__.get("_cluster_syncs")
        if cached is None:
            from trainer_portal.cluster.models import Cluster

            chosen = list(self.target_clusters.all()) if self.pk else []
            if chosen:
                clusters = [c for c in chosen if c.enabled]
            elif "_enabled_clusters" in self.__dict__:
                clusters = list(self.__dict__["_enabled_clusters"])
            else:
                clusters = list(Cluster.objects.filter(enabled=True))
            clusters.sort(key=lambda c: (not c.is_default, c.name))
            rows = {row.cluster_id: row for row in self.syncs.all()} if self.pk else {}
            cached = [ClusterSync(cluster, rows.get(cluster.pk)) for cluster in clusters]
            self.__dict__["_cluster_syncs"] = cached
        return cached

    def _summary(self) -> SyncSummary:
        return summarize(self.version, [entry.facts() for entry in self.cluster_syncs()])

    # The policy-wide view of its per-cluster sync rows (the fields the policy carried when there was one cluster).
    # They are read-only summaries; the sync services write `PolicySync` rows.
    @property
    def sync_state(self) -> str:
        return self._summary().state

    @property
    def sync_requested_revision(self) -> int | None:
        return self._summary().requested_revision

    @property
    def applied_revision(self) -> int | None:
        return self._summary().applied_revision

    @property
    def applied_resource_version(self) -> str:
        return self._summary().resource_version

    @property
    def applied_generation(self) -> int | None:
        return self._summary().generation

    @property
    def last_synced_at(self):
        return self._summary().last_synced_at

    @property
    def last_sync_error(self) -> str:
        return self._summary().error

    @property
    def sync_error_fields(self) -> list:
        return self._summary().error_fields

    @property
    def drift_diff(self) -> str:
        return self._summary().drift_diff

    @property
    def cluster_state(self) -> str:
        return self._summary().cluster_state

    def get_cluster_state_display(self) -> str:
        return str(ClusterState(self.cluster_state).label)

    @property
    def sync_startup_deadlock_confirmed(self) -> bool:
        return self._summary().startup_deadlock_confirmed

    @property
    def sync_status(self) -> SyncStatus:
        """Return the sync status at a glance: "Synced" only when the current revision is applied on every target
        cluster."""
        summary = self._summary()
        return sync_status(
            state=summary.state,
            version=self.version,
            applied_revision=summary.applied_revision,
            requested_revision=summary.requested_revision,
        )

    @property
    def clusters_summary(self) -> str:
        """Return e.g. "synced on 2 of 2 clusters" or "out of sync on gpu-west" (policy lists)."""
        return describe_clusters(self.version, [entry.facts() for entry in self.cluster_syncs()])


class PolicySync(models.Model):
    """The sync state machine of one policy on one cluster (see `runtimes.services.sync`).

    Changed only by compare-and-set updates of the sync services; the field names are part of the contract.
    """

    policy = models.ForeignKey(RuntimePolicy, on_delete=models.CASCADE, related_name="syncs")
    cluster = models.ForeignKey("cluster.Cluster", on_delete=models.CASCADE, related_name="policy_syncs")
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
        ordering = ["policy", "cluster"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "cluster"], name="runtimes_policysync_unique"),
        ]
        indexes = [models.Index(fields=["sync_state"], name="runtimes_policysync_state")]

    def __str__(self) -> str:
        return f"{self.policy_id}@{self.cluster_id}"


class ClusterSync:
    """One target cluster of a policy with its sync row (None: never requested there, a draft)."""

    def __init__(self, cluster, row: PolicySync | None) -> None:
        self.cluster = cluster
        self.row = row

    def facts(self) -> SyncFacts:
        """Return the row's facts in the pure form `runtimes.domain.status` summarises."""
        row = self.row
        if row is None:
            return SyncFacts(cluster=self.cluster.name, is_default=self.cluster.is_default)
        return SyncFacts(
            cluster=self.cluster.name,
            is_default=self.cluster.is_default,
            state=row.sync_state,
            requested_revision=row.sync_requested_revision,
            applied_revision=row.applied_revision,
            resource_version=row.applied_resource_version,
            generation=row.applied_generation,
            last_synced_at=row.last_synced_at,
            error=row.last_sync_error,
            error_fields=row.sync_error_fields or [],
            drift_diff=row.drift_diff,
            cluster_state=row.cluster_state,
            startup_deadlock_confirmed=row.sync_startup_deadlock_confirmed,
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


class SyncEvent(models.Model):
    """One notable sync outcome of a policy on a cluster (append-only): an apply that failed, or a drift check
    that found the cluster's object changed. Notifications read it as an outbox source; the id is the sequence."""

    class Kind(models.TextChoices):
        SYNC_FAILED = "sync_failed", "Sync failed"
        DRIFT = "drift", "Drift"

    policy_name = models.CharField(max_length=253)
    cluster = models.ForeignKey("cluster.Cluster", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind)
    revision = models.PositiveIntegerField(null=True, blank=True)
    message = models.TextField(blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("id",)

    def __str__(self) -> str:
        return f"{self.kind} {self.policy_name}@{self.cluster_id}"
