"""Celery hooks that write the heartbeats: a timer in the worker's main process and beat's own publications.

Imported by ``trainer_portal.celery`` before Django is set up, so nothing here imports models at module level.
A failing heartbeat is logged and never disturbs the worker or beat.
"""

from __future__ import annotations

import logging
import time

from celery import bootsteps
from celery.signals import beat_embedded_init, beat_init, before_task_publish

from .constants import HEARTBEAT_SECONDS

logger = logging.getLogger(__name__)

_beat = {"running": False, "recorded": 0.0}


def _record(process: str, hostname: str, queue_depth: int | None = None) -> None:
    from django.db import connections

    from trainer_portal import liveness

    # Proof of life for the container's liveness probe first: it must not depend on the database being up.
    liveness.touch(process)

    from .models import Process
    from .services import heartbeat_record

    try:
        heartbeat_record(process=Process(process), hostname=hostname, queue_depth=queue_depth)
    except Exception:  # the database may be down; the process must live on and try again next time
        logger.warning("could not record the %s heartbeat", process, exc_info=True)
    finally:
        # Never keep a connection open here: the worker's main process forks its pool and the embedded beat, and an
        # SQLite connection inherited across fork breaks the database's locks ("disk I/O error").
        connections.close_all()


def queue_depth(app, queue: str) -> int | None:
    """Return the number of messages waiting in ``queue``, or None when the broker cannot tell."""
    try:
        with app.connection_for_read() as connection:
            return connection.default_channel.queue_declare(queue=queue, passive=True).message_count
    except Exception:
        logger.debug("could not measure the depth of %s", queue, exc_info=True)
        return None


class WorkerHeartbeat(bootsteps.StartStopStep):
    """Records the worker's heartbeat and the default queue's depth every ``HEARTBEAT_SECONDS``."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker, **kwargs):
        super().__init__(worker, **kwargs)
        self.timer_ref = None

    def start(self, worker) -> None:
        self.pulse(worker)
        self.timer_ref = worker.timer.call_repeatedly(HEARTBEAT_SECONDS, self.pulse, (worker,), priority=10)

    def stop(self, worker) -> None:
        if self.timer_ref is not None:
            self.timer_ref.cancel()
            self.timer_ref = None

    def pulse(self, worker) -> None:
        queue = worker.app.conf.task_default_queue
        _record("worker", worker.hostname, queue_depth(worker.app, queue))


@beat_init.connect
@beat_embedded_init.connect
def _beat_started(sender=None, **kwargs) -> None:
    _beat["running"] = True
    _record("beat", _hostname())


@before_task_publish.connect
def _beat_published(sender=None, **kwargs) -> None:
    # Only in the beat process: every scheduled publication is proof that beat runs (at most one write per 5 s).
    if not _beat["running"] or time.monotonic() - _beat["recorded"] < 5.0:
        return
    _beat["recorded"] = time.monotonic()
    _record("beat", _hostname())


def _hostname() -> str:
    import socket

    return socket.gethostname()
