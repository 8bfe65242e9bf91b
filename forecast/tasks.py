"""Celery tasks of the forecast app (thin: they call the services)."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True, name="forecast.tasks.forecast_refresh_task", ignore_result=True)
def forecast_refresh_task() -> str:
    """Recompute the estimates of every cluster whose inputs changed. Returns a summary."""
    from . import services

    return services.refresh_all()


@shared_task(acks_late=True, name="forecast.tasks.forecast_cluster_task", ignore_result=True)
def forecast_cluster_task(cluster_id: int) -> str:
    """Recompute one cluster's estimates now. Returns its status."""
    from trainer_portal.cluster.models import Cluster

    from . import services

    cluster = Cluster.objects.filter(pk=cluster_id).first()
    return services.compute_estimates(cluster, force=True).status if cluster else "no such cluster"


@shared_task(acks_late=True, name="forecast.tasks.forecast_whatif_task", ignore_result=True)
def forecast_whatif_task(whatif_id: int) -> str:
    """Run one what-if simulation. Returns its final status."""
    from . import services

    return services.whatif_run(whatif_id)
