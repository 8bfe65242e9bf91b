"""Choices shared by the jobs models, selectors and API: the admission states and scheduling levels."""

from __future__ import annotations

from django.db import models

from jobs.domain import states


class AdmissionState(models.TextChoices):
    """Where a TrainJob is on its way from submitted to finished (docs/decisions.md, the state table)."""

    QUEUED = states.QUEUED, "Queued"
    INADMISSIBLE = states.INADMISSIBLE, "Inadmissible"
    QUOTA_RESERVED = states.QUOTA_RESERVED, "Quota reserved"
    WAITING_FOR_OBJECTS = states.WAITING_FOR_OBJECTS, "Waiting for scheduling objects"
    WAITING_FOR_STARTUP = states.WAITING_FOR_STARTUP, "Waiting for startup order"
    GANG_PENDING = states.GANG_PENDING, "Gang pending"
    UNSCHEDULABLE = states.UNSCHEDULABLE, "Unschedulable"
    ADMITTED = states.ADMITTED, "Admitted"
    RUNNING = states.RUNNING, "Running"
    PREEMPTED = states.PREEMPTED, "Preempted"
    SUSPENDED = states.SUSPENDED, "Suspended"
    SUCCEEDED = states.SUCCEEDED, "Succeeded"
    FAILED = states.FAILED, "Failed"
    UNKNOWN = states.UNKNOWN, "Unknown"


class SchedulingLevel(models.TextChoices):
    """Which gang level the TrainJob's PodGroups were built at (kubernetes-style Workload-aware scheduling)."""

    TRAINJOB = states.LEVEL_TRAINJOB, "TrainJob"
    REPLICATEDJOB = states.LEVEL_REPLICATEDJOB, "ReplicatedJob"
    JOB = states.LEVEL_JOB, "Job"
    LEGACY = states.LEVEL_LEGACY, "Legacy (podGroupPolicy)"
    NONE = states.LEVEL_NONE, "None"
    UNKNOWN = states.LEVEL_UNKNOWN, "Unknown"
