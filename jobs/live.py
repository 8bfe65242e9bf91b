"""What the TrainJob pages' live streams watch (trainer_portal/live): a watermark that moves whenever a live
fragment of the list or of a detail page may show something else."""

from __future__ import annotations

from django.db.models import Count, Max

from . import selectors
from .models import NamespaceGrant, TrackerStatus, TrainJob


def watermark() -> tuple:
    """Return (newest change_seq, each tracker's health, the grants' shape): every write raises a row's change_seq,
    retention moves a tracker's ``pruned``, a tracker going stale or live moves its health, and a grant added or
    removed changes who sees what. Three indexed queries plus one per cluster."""
    newest = TrainJob.objects.aggregate(m=Max("change_seq"))["m"] or 0
    trackers = []
    for status in TrackerStatus.objects.select_related("cluster").order_by("cluster_id"):
        tracking = selectors.tracking_status(cluster=status.cluster)
        trackers.append((status.cluster_id, tracking.stale, tracking.why, tracking.pruned))
    grants = NamespaceGrant.objects.aggregate(n=Count("id"), m=Max("id"))
    return newest, tuple(trackers), grants["n"], grants["m"]
