"""Reads of stored forecasts: estimates by job, the last computation per cluster, what-ifs. Never a cluster."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from trainer_portal.cluster.models import Cluster, resolve_cluster
from trainer_portal.jobfacts import JobRef, StartEstimate

from .domain import to_start_estimate
from .models import ForecastRun, StartEstimateRow, WhatIf


def stale_after_seconds() -> float:
    """Return how old an estimate may be before the basis says so."""
    return float(getattr(settings, "FORECAST_STALE_SECONDS", 600))


def cluster_or_none(name: str | None) -> Cluster | None:
    """Return the cluster called `name` (the default for None/''), or None when there is no such cluster."""
    try:
        return resolve_cluster(name or None)
    except Cluster.DoesNotExist:
        return None


def estimates_for(refs: Sequence[JobRef]) -> dict[JobRef, StartEstimate]:
    """Return the stored estimate of each of `refs` that has one (the start provider of the jobfacts seam)."""
    if not refs:
        return {}
    condition = Q()
    by_key: dict[tuple[int, str], JobRef] = {}
    for ref in refs:
        by_key[(ref.cluster_id, ref.uid)] = ref
        condition |= Q(cluster_id=ref.cluster_id, uid=ref.uid)
    now = timezone.now()
    stale = stale_after_seconds()
    out = {}
    for row in StartEstimateRow.objects.filter(condition):
        ref = by_key.get((row.cluster_id, row.uid))
        if ref is not None:
            out[ref] = to_start_estimate(row.p10, row.p50, row.p90, row.basis, row.computed_at, now, stale)
    return out


def estimate_list(cluster: Cluster, namespace: str | None = None) -> list[StartEstimateRow]:
    """Return the cluster's stored estimates in cluster order (optionally one namespace's)."""
    rows = StartEstimateRow.objects.filter(cluster=cluster)
    if namespace:
        rows = rows.filter(namespace=namespace)
    return list(rows.order_by("rank", "id")[:5000])


def last_run(cluster: Cluster) -> ForecastRun | None:
    """Return the cluster's last estimate computation (None before the first)."""
    return ForecastRun.objects.filter(cluster=cluster).first()


def whatif_list(cluster: Cluster | None = None, limit: int = 50) -> list[WhatIf]:
    """Return the newest what-ifs (of one cluster when given)."""
    rows = WhatIf.objects.select_related("cluster")
    if cluster is not None:
        rows = rows.filter(cluster=cluster)
    return list(rows[:limit])


def whatif_get(pk: int) -> WhatIf | None:
    """Return the what-if `pk`, or None."""
    return WhatIf.objects.select_related("cluster").filter(pk=pk).first()


def age_seconds(moment: dt.datetime | None) -> float | None:
    """Return seconds since `moment` (None stays None)."""
    return None if moment is None else max((timezone.now() - moment).total_seconds(), 0.0)
