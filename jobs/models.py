"""What the portal knows about TrainJobs on the cluster: one row per TrainJob, its transitions, who may see it.

The rows are written by the admission tracker (``jobs.handlers`` → ``jobs.services``) in the cluster-watch
process and only read by pages and the API. ``change_seq`` grows with every write, so a page can ask "anything
new since N?" with one indexed aggregate.
"""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import models

from trainer_portal.cluster.models import Cluster, default_cluster_id

from .choices import AdmissionState, SchedulingLevel
from .domain.answer import estimate_of, queue_place
from .domain.reasons import short_reason


class TrainJob(models.Model):
    """The tracked state of one TrainJob on one cluster (keyed by cluster and UID: a re-created job with the same
    name is a new row; two clusters may hand out the same UID)."""

    # Deleting a cluster from the portal forgets what was tracked on it (disable it to keep the history). No index
    # of its own: the unique (cluster, uid) constraint leads with it, and every tracker write maintains each index.
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="trainjobs",
                                default=default_cluster_id, db_index=False)
    uid = models.CharField(max_length=64)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    runtime_kind = models.CharField(max_length=64, default="ClusterTrainingRuntime")
    runtime_name = models.CharField(max_length=253, blank=True)
    num_nodes = models.PositiveIntegerField(default=0)
    gpus_per_node = models.PositiveIntegerField(default=0)
    # Per-node resource requests as written on the TrainJob ({"nvidia.com/gpu": "8", "cpu": "32"}); "why it waits"
    # places exactly this shape.
    resources_per_node = models.JSONField(default=dict, blank=True)
    level = models.CharField(max_length=16, choices=SchedulingLevel.choices, default=SchedulingLevel.UNKNOWN)
    queue_name = models.CharField(max_length=253, blank=True)
    queue_position = models.PositiveIntegerField(null=True, blank=True)
    creator = models.CharField(max_length=253, blank=True)
    priority_class = models.CharField(max_length=253, blank=True)
    state = models.CharField(max_length=24, choices=AdmissionState.choices, default=AdmissionState.UNKNOWN)
    reason = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    since = models.DateTimeField(help_text="When the job entered its current state.")
    submitted_at = models.DateTimeField(help_text="The TrainJob's creationTimestamp.")
    admitted_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # [{name, policy, minCount, bound, condition, reason, message, topologyKey, podCount}]
    pod_groups = models.JSONField(default=list, blank=True)
    # {name, apiVersion, templates: [{name, policy, minCount}]} or {} when there is no Workload.
    workload = models.JSONField(default=dict, blank=True)
    # [{name, phase, node, podGroup, zone, block, rack}]
    pods = models.JSONField(default=list, blank=True)
    # The last related Events: [{type, reason, message, count, lastTimestamp, involvedObject}]
    events = models.JSONField(default=list, blank=True)
    # Kueue Workload summary when Kueue manages the job: {name, conditions: [{type, status, reason, message}]}.
    kueue = models.JSONField(default=dict, blank=True)
    resource_version = models.CharField(max_length=64, blank=True)
    # Hash of everything the row shows, one part per column group (jobs.services.DIGEST_PARTS): "did anything change,
    # and which columns" without reading the JSON columns.
    digest = models.CharField(max_length=128, blank=True)
    gone_at = models.DateTimeField(null=True, blank=True, help_text="When the TrainJob disappeared from the cluster.")
    change_seq = models.BigIntegerField(default=0, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # Newest first, never reshuffled: submission time does not change, the id breaks ties.
        ordering = ("-submitted_at", "-id")
        constraints = [models.UniqueConstraint(fields=["cluster", "uid"], name="jobs_tj_cluster_uid")]
        indexes = [
            models.Index(fields=["cluster", "namespace", "name"], name="jobs_tj_cl_ns_name"),
            models.Index(fields=["namespace", "name"], name="jobs_tj_ns_name"),
            models.Index(fields=["state", "since"], name="jobs_tj_state_since"),
            models.Index(fields=["runtime_name"], name="jobs_tj_runtime"),
            models.Index(fields=["queue_name"], name="jobs_tj_queue"),
            models.Index(fields=["-submitted_at", "-id"], name="jobs_tj_order"),
            models.Index(fields=["namespace", "-submitted_at", "-id"], name="jobs_tj_ns_order"),
            # Live rows newest first: the list filters gone_at IS NULL and orders by submission (one index range scan).
            models.Index(fields=["gone_at", "-submitted_at", "-id"], name="jobs_tj_live_order"),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} ({self.state})"

    @property
    def short_reason(self) -> str:
        """Return the short human reason the list shows ("3 of 64 pods placed"); ``message`` is the full text. The
        selectors set ``answer_reason`` when they joined the job to its queue facts (see ``jobs.domain.answer``)."""
        joined = self.__dict__.get("answer_reason")
        return joined if joined else short_reason(self.state, self.reason, self.message)

    @property
    def queue_place(self) -> dict | None:
        """Return the job's place in Kueue (the API's ``queue`` object), None when Kueue does not manage it; the
        position is known only once the selectors joined the job to its queue facts."""
        return queue_place(self.queue_name, self.__dict__.get("queue_facts"))

    @property
    def estimated_start(self) -> dict | None:
        """Return the start estimate joined by the selectors ({p10, p50, p90, basis, computedAt}), or None."""
        return estimate_of(self.__dict__.get("start_estimate"))

    @property
    def total_gpus(self) -> int:
        """Return numNodes × GPUs per node."""
        return self.num_nodes * self.gpus_per_node


class TrainJobTransition(models.Model):
    """One state change of a TrainJob (append-only): the timeline and time-to-admission come from these."""

    job = models.ForeignKey(TrainJob, on_delete=models.CASCADE, related_name="transitions")
    # The job's cluster, repeated so "transitions on cluster X" needs no join.
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+", default=default_cluster_id)
    from_state = models.CharField(max_length=24, choices=AdmissionState.choices, blank=True)
    to_state = models.CharField(max_length=24, choices=AdmissionState.choices)
    reason = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    at = models.DateTimeField()
    seq = models.BigIntegerField(db_index=True)

    class Meta:
        ordering = ("job", "seq")
        indexes = [
            models.Index(fields=["job", "seq"], name="jobs_tr_job_seq"),
            models.Index(fields=["to_state", "at"], name="jobs_tr_state_at"),
            models.Index(fields=["cluster", "to_state", "at"], name="jobs_tr_cl_state_at"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.from_state or '∅'} → {self.to_state}"


class NamespaceGrant(models.Model):
    """Members of ``group`` (data scientists) may see the TrainJobs of ``namespace`` on ``cluster`` — on every
    cluster, present and future, when ``cluster`` is empty."""

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="namespace_grants")
    namespace = models.CharField(max_length=63)
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, null=True, blank=True,
                                related_name="namespace_grants", help_text="Empty: the namespace on every cluster.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("group__name", "namespace")
        constraints = [
            models.UniqueConstraint(fields=["group", "namespace", "cluster"], name="jobs_grant_unique_cluster"),
            # NULLs are distinct in a unique index: one all-clusters grant per group and namespace needs its own.
            models.UniqueConstraint(fields=["group", "namespace"], condition=models.Q(cluster__isnull=True),
                                    name="jobs_grant_unique_all_clusters"),
        ]

    def __str__(self) -> str:
        where = self.cluster.name if self.cluster_id else "every cluster"
        return f"{self.group.name} → {self.namespace} ({where})"


class TrackerStatus(models.Model):
    """The admission tracker's health on one cluster (one row per cluster): who writes, when it last heard from
    the cluster."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="tracker_status",
                                   default=default_cluster_id)
    holder = models.CharField(max_length=253, blank=True, help_text="Identity of the Lease holder that writes.")
    leader_since = models.DateTimeField(null=True, blank=True)
    last_event_at = models.DateTimeField(null=True, blank=True)
    last_flush_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    connected = models.BooleanField(default=False)
    synced = models.BooleanField(default=False, help_text="Every watched kind has been listed at least once.")
    last_error = models.TextField(blank=True)
    error_since = models.DateTimeField(null=True, blank=True)
    tracked = models.PositiveIntegerField(default=0)
    writes = models.BigIntegerField(default=0, help_text="Rows written since the tracker started (for no-op checks).")
    change_seq = models.BigIntegerField(default=0)
    pruned = models.BigIntegerField(default=0, help_text="TrainJobs removed by retention so far (poll tokens).")
    quarantined = models.BigIntegerField(
        default=0, help_text="Objects the database refused even alone since the tracker started (skipped, logged).")
    sanitized = models.BigIntegerField(
        default=0, help_text="Objects repaired before writing (NUL, invalid Unicode, oversized or mistyped fields).")

    class Meta:
        verbose_name_plural = "tracker status"

    def __str__(self) -> str:
        return f"tracker of cluster {self.cluster_id} ({self.holder or 'no holder'})"
