"""Reading the health of the background processes: is a worker consuming, is beat scheduling, how deep is the queue."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from .constants import ALIVE_WITHIN, QUEUED_TOO_LONG
from .models import Heartbeat, Process


@dataclass(frozen=True)
class BackgroundHealth:
    """What the heartbeats say at ``now``."""

    now: datetime
    worker_last_seen: datetime | None
    beat_last_run: datetime | None
    queue_depth: int | None

    @property
    def worker_alive(self) -> bool:
        return self.worker_last_seen is not None and self.now - self.worker_last_seen <= ALIVE_WITHIN

    @property
    def beat_alive(self) -> bool:
        return self.beat_last_run is not None and self.now - self.beat_last_run <= ALIVE_WITHIN

    @property
    def worker_seen_ago(self) -> str:
        """E.g. "3 s ago", or "never"."""
        return _ago(self.worker_last_seen, self.now)

    @property
    def beat_ran_ago(self) -> str:
        """E.g. "8 s ago", or "never"."""
        return _ago(self.beat_last_run, self.now)

    def as_api(self) -> dict:
        """Return the camelCase payload of ``GET /api/v1/cluster/`` (timestamps as datetimes, for a serializer)."""
        return {
            "worker": {"lastSeen": self.worker_last_seen, "alive": self.worker_alive},
            "beat": {"lastRun": self.beat_last_run, "alive": self.beat_alive},
            "queueDepth": self.queue_depth,
        }


def background_health(*, now: datetime | None = None) -> BackgroundHealth:
    """Return the latest worker and beat heartbeats and the last measured queue depth (None where never seen)."""
    rows = {row.process: row for row in Heartbeat.objects.all()}
    worker, beat = rows.get(Process.WORKER), rows.get(Process.BEAT)
    return BackgroundHealth(
        now=now or timezone.now(),
        worker_last_seen=worker.last_seen if worker else None,
        beat_last_run=beat.last_seen if beat else None,
        queue_depth=worker.queue_depth if worker else None,
    )


def queued_sync_warning(*, queued_since: datetime | None = None, health: BackgroundHealth | None = None) -> str:
    """Return why a queued (or syncing) sync is not moving, or "" when nothing is wrong (yet).

    A message only when no worker is alive and none has been for ``QUEUED_TOO_LONG`` (a worker that is merely
    restarting does not count), and, when ``queued_since`` is known, the sync has waited that long too.
    """
    health = health or background_health()
    if health.worker_alive:
        return ""
    if queued_since is not None and health.now - queued_since < QUEUED_TOO_LONG:
        return ""
    if health.worker_last_seen is None:
        return "Queued, but no worker has ever reported in: start the Celery worker."
    if health.now - health.worker_last_seen < QUEUED_TOO_LONG:
        return ""
    seconds = int((health.now - health.worker_last_seen).total_seconds())
    return f"Queued, but no worker has been seen for {_span(seconds)}: check the Celery worker."


def _ago(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "never"
    return f"{_span(max(0, int((now - moment).total_seconds())))} ago"


def _span(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"
