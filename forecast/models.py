"""What the forecast stores: the latest estimate per waiting job, the last computation per cluster, backtests and
what-if simulations (kept with their candidate and results)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from trainer_portal.cluster.models import Cluster


class StartEstimateRow(models.Model):
    """The estimated start of one waiting TrainJob (the provider answers from these). p10/p50/p90 are all null
    when ``basis`` says why there is no estimate."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    uid = models.CharField(max_length=64)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    p10 = models.DateTimeField(null=True, blank=True)
    p50 = models.DateTimeField(null=True, blank=True)
    p90 = models.DateTimeField(null=True, blank=True)
    basis = models.TextField()
    rank = models.PositiveIntegerField(default=0, help_text="Place in cluster order among the waiting jobs (1 = next).")
    computed_at = models.DateTimeField()

    class Meta:
        ordering = ("cluster", "rank", "id")
        constraints = [models.UniqueConstraint(fields=["cluster", "uid"], name="forecast_est_cluster_uid")]
        indexes = [models.Index(fields=["cluster", "namespace", "name"], name="forecast_est_cl_ns_name")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}: {self.p50 or 'unknown'}"


class ForecastRun(models.Model):
    """The last estimate computation of a cluster: when, over what (the change token it saw), how long it took,
    and whether it could run at all (``status`` ok / unknown with ``reason``)."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="+")
    computed_at = models.DateTimeField()
    token = models.CharField(max_length=128, blank=True)
    status = models.CharField(max_length=16, default="ok")
    reason = models.TextField(blank=True)
    waiting = models.PositiveIntegerField(default=0)
    running = models.PositiveIntegerField(default=0)
    samples = models.PositiveIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(default=0)
    backtest = models.JSONField(default=dict, blank=True, help_text="The last backtest report over recorded history.")
    backtest_at = models.DateTimeField(null=True, blank=True)
    advice = models.JSONField(default=list, blank=True,
                              help_text="Per zone: the smallest addition that starts today's waiting gangs in time.")

    def __str__(self) -> str:
        return f"forecast of cluster {self.cluster_id} at {self.computed_at}: {self.status}"


class WhatIf(models.Model):
    """A what-if simulation: recorded arrivals of the last ``days`` replayed under the current and a candidate
    setting. ``candidate`` is the API's candidate object; ``result`` holds {current, candidate} once done."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    title = models.CharField(max_length=200, blank=True)
    candidate = models.JSONField(default=dict)
    days = models.PositiveIntegerField(default=7)
    seed = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    jobs = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-created_at", "-id")

    def __str__(self) -> str:
        return f"what-if {self.pk} ({self.status})"
