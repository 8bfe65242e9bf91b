"""Celery tasks of the cluster app (thin: they call the handlers' functions)."""

from __future__ import annotations

from celery import shared_task

from trainer_portal.kube.errors import KubeError

from . import handlers, snapshots


@shared_task(acks_late=True, name="trainer_portal.cluster.tasks.topology_refresh_task", ignore_result=True)
def topology_refresh_task(max_age_seconds: float = 90.0) -> str:
    """Rebuild the live topology snapshot from a full list when the stored one is older than ``max_age_seconds``.

    The continuous watcher (``manage.py cluster_watch``) keeps it fresh between runs; this covers deployments
    without it. Returns "fresh", "refreshed" or the error message.
    """
    age = snapshots.snapshot_age_seconds()
    if age is not None and age < max_age_seconds:
        return "fresh"
    try:
        handlers.topology_refresh()
    except KubeError as exc:
        return exc.message
    return "refreshed"
