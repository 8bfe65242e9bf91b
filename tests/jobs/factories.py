"""Rows for the selector and API tests (what the tracker would have written)."""

from __future__ import annotations

import datetime as dt
import itertools

from django.contrib.auth.models import Group
from django.utils import timezone

from jobs.models import NamespaceGrant, TrackerStatus, TrainJob, TrainJobTransition

_ids = itertools.count(1)


def tracked_job(namespace: str = "team-a", name: str | None = None, *, state: str = "gang-pending",
                runtime: str = "torch-distributed", level: str = "trainjob", num_nodes: int = 4, queue: str = "",
                submitted: dt.datetime | None = None, admitted: dt.datetime | None = None, **fields) -> TrainJob:
    """A TrainJob row with one transition into ``state``."""
    n = next(_ids)
    submitted = submitted or timezone.now() - dt.timedelta(minutes=n)
    fields.setdefault("pod_groups", [{"name": f"pg-{n}", "policy": "gang", "minCount": num_nodes, "bound": 0,
                                      "condition": "", "reason": "", "message": ""}])
    fields.setdefault("reason", "GangPending")
    fields.setdefault("message", f"{state} for a reason")
    job = TrainJob.objects.create(
        uid=f"uid-{n}", namespace=namespace, name=name or f"job-{n}", runtime_name=runtime, level=level,
        num_nodes=num_nodes, gpus_per_node=8, queue_name=queue, state=state, since=submitted,
        submitted_at=submitted, admitted_at=admitted, change_seq=n, **fields)
    TrainJobTransition.objects.create(job=job, from_state="", to_state=state, at=submitted, seq=n)
    return job


def grant(group_name: str, namespace: str) -> NamespaceGrant:
    """Grant ``namespace`` to the group ``group_name`` (created when missing)."""
    group, _ = Group.objects.get_or_create(name=group_name)
    return NamespaceGrant.objects.create(group=group, namespace=namespace)


def live_tracker() -> TrackerStatus:
    """A tracker that reported just now, connected and synced."""
    now = timezone.now()
    return TrackerStatus.objects.update_or_create(pk=1, defaults={
        "holder": "watcher-1", "heartbeat_at": now, "connected": True, "synced": True, "leader_since": now})[0]
