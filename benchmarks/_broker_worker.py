"""The Celery app the broker hammer runs in a real worker: the portal's broker settings and one recording task.

The worker is configured exactly like the portal's (``trainer_portal.settings`` through Django's settings, so the
same transport, folders and polling interval) but registers only ``hammer.record``, which appends one line per
delivery to ``HAMMER_RECORD_FILE`` with an O_APPEND write (atomic for a short line, so no lock is needed).
"""

from __future__ import annotations

import os
import time

from celery import Celery

import trainer_portal.broker  # noqa: F401  (registers atomicfs://)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainer_portal.settings")

app = Celery("trainer-portal-broker-hammer")
app.config_from_object("django.conf:settings", namespace="CELERY")


@app.task(name="hammer.record", acks_late=True)
def record(producer: int, index: int, published_at: float) -> None:
    """Append ``producer index latency_seconds`` to the record file."""
    line = f"{producer} {index} {time.time() - published_at:.6f}\n".encode()
    fd = os.open(os.environ["HAMMER_RECORD_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
