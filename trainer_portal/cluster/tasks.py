"""Celery tasks of the cluster app (thin: they call the handlers' and status checks' functions)."""

from __future__ import annotations

from celery import shared_task

from trainer_portal.kube.errors import KubeError

from . import handlers, snapshots, status
from .models import Cluster


def _clusters(name: str | None) -> list[Cluster]:
    clusters = Cluster.objects.filter(enabled=True)
    return list(clusters.filter(name=name) if name else clusters)


@shared_task(acks_late=True, name="trainer_portal.cluster.tasks.topology_refresh_task", ignore_result=True)
def topology_refresh_task(max_age_seconds: float = 90.0, cluster: str | None = None) -> str:
    """Rebuild the live topology snapshot of every enabled cluster (or the one named) from a full list when the
    stored one is missing or older than ``max_age_seconds``.

    The continuous watcher (``manage.py cluster_watch``) keeps snapshots fresh between runs; this covers deployments
    without it. Returns "name: fresh|refreshed|<error>" per cluster, joined by "; ".
    """
    results = []
    for row in _clusters(cluster):
        age = snapshots.snapshot_age_seconds(row)
        if age is not None and age < max_age_seconds:
            results.append(f"{row.name}: fresh")
            continue
        try:
            handlers.topology_refresh(cluster=row)
        except KubeError as exc:
            results.append(f"{row.name}: {exc.message}")
            continue
        results.append(f"{row.name}: refreshed")
    return "; ".join(results)


@shared_task(acks_late=True, name="trainer_portal.cluster.tasks.cluster_check_task", ignore_result=True,
             expires=120)
def cluster_check_task(cluster: str | None = None) -> str:
    """Probe every enabled cluster (or the one named) with short timeouts and store what was found (the cluster
    page, ``GET /api/v1/cluster/`` and validation read it). Returns "name: reachable|unreachable" per cluster."""
    results = []
    for row in _clusters(cluster):
        found = status.check_cluster(row)
        results.append(f"{row.name}: {'reachable' if found['reachable'] else 'unreachable'}")
    return "; ".join(results)
