"""Writing heartbeats (called from the worker's timer and from beat; see ``trainer_portal.health.signals``)."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from .models import Heartbeat, Process


def heartbeat_record(*, process: Process, hostname: str = "", queue_depth: int | None = None,
                     now: datetime | None = None) -> Heartbeat:
    """Record that ``process`` is alive at ``now`` (default: the current time); return the stored row.

    The queue depth is kept from the previous heartbeat when this one does not measure it (beat does not).
    """
    defaults: dict = {"last_seen": now or timezone.now(), "hostname": hostname[:255]}
    if queue_depth is not None:
        defaults["queue_depth"] = queue_depth
    heartbeat, _ = Heartbeat.objects.update_or_create(process=process, defaults=defaults)
    return heartbeat
