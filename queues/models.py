"""What the portal knows about Kueue's queues on each cluster, written by the queue watcher (``queues.handlers``)
and only read by pages, the API and the job-facts provider.

Spec and status details that pages show but never filter on (resource groups, usage per flavor, conditions) are
JSON; what is filtered or ordered on is a column. ``QueueWatchState.change_seq`` grows with every write, so a page
can ask "anything new?" with one row read.
"""

from __future__ import annotations

from django.db import models

from trainer_portal.cluster.models import Cluster


class QueueWatchState(models.Model):
    """The queue watcher's health on one cluster: when it last wrote, whether positions are known."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="queue_watch")
    kueue_served = models.BooleanField(default=False)
    synced_at = models.DateTimeField(null=True, blank=True, help_text="Last write of the queue objects.")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    positions_at = models.DateTimeField(null=True, blank=True, help_text="Last read of the visibility API.")
    position_source = models.CharField(max_length=32, default="unknown")
    positions_error = models.TextField(blank=True)
    last_error = models.TextField(blank=True)
    change_seq = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"queue watcher of cluster {self.cluster_id}"


class ResourceFlavor(models.Model):
    """A Kueue ResourceFlavor."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=253)
    node_labels = models.JSONField(default=dict)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="queues_flavor_unique")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Cohort(models.Model):
    """A cohort: named by ClusterQueues' ``spec.cohortName`` (and, when the cluster serves it, a Cohort object)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=253)
    has_object = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="queues_cohort_unique")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ClusterQueue(models.Model):
    """A Kueue ClusterQueue: quota per flavor and resource, its cohort, and Kueue's status counts."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=253)
    cohort = models.CharField(max_length=253, blank=True)
    queueing_strategy = models.CharField(max_length=32, default="BestEffortFIFO")
    fair_sharing_weight = models.FloatField(default=1.0)
    weighted_share = models.FloatField(default=0.0)
    # [{flavor, resource, nominal, used, borrowed, lendable, borrowable, borrowingLimit, lendingLimit}]
    usage = models.JSONField(default=list)
    preemption = models.JSONField(default=dict)
    conditions = models.JSONField(default=list)
    pending = models.PositiveIntegerField(default=0)
    reserving = models.PositiveIntegerField(default=0)
    admitted = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="queues_cq_unique")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def active(self) -> bool:
        """Return False when Kueue says the queue cannot admit (condition Active False)."""
        return not any(c.get("type") == "Active" and c.get("status") == "False" for c in self.conditions)


class LocalQueue(models.Model):
    """A Kueue LocalQueue: the namespace's door to a ClusterQueue."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    cluster_queue = models.CharField(max_length=253, blank=True)
    usage = models.JSONField(default=list)  # [{flavor, resource, used}]
    conditions = models.JSONField(default=list)
    pending = models.PositiveIntegerField(default=0)
    reserving = models.PositiveIntegerField(default=0)
    admitted = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "namespace", "name"], name="queues_lq_unique")]
        ordering = ["namespace", "name"]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class QueuedWorkload(models.Model):
    """A Kueue Workload that holds or waits for quota, with its positions while pending (0-based, as the
    visibility API gives them; None when unknown)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64, blank=True)
    local_queue = models.CharField(max_length=253, blank=True)
    cluster_queue = models.CharField(max_length=253, blank=True)
    state = models.CharField(max_length=16)  # pending / admitted / inactive
    priority = models.IntegerField(default=0)
    queued_at = models.CharField(max_length=64, blank=True)
    position_in_cluster_queue = models.IntegerField(null=True, blank=True)
    position_in_local_queue = models.IntegerField(null=True, blank=True)
    reason = models.CharField(max_length=253, blank=True)
    message = models.TextField(blank=True)
    job_kind = models.CharField(max_length=64, blank=True)
    job_name = models.CharField(max_length=253, blank=True)
    job_uid = models.CharField(max_length=64, blank=True)
    requests = models.JSONField(default=dict)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "namespace", "name"], name="queues_wl_unique")]
        indexes = [models.Index(fields=["cluster", "cluster_queue", "state"], name="queues_wl_cq_state"),
                   models.Index(fields=["cluster", "job_uid"], name="queues_wl_job")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"
