"""One row per background process kind: when it was last seen alive, and what it measured then."""

from __future__ import annotations

from django.db import models


class Process(models.TextChoices):
    WORKER = "worker", "Celery worker"
    BEAT = "beat", "Celery beat"


class Heartbeat(models.Model):
    """The latest heartbeat of a worker or of beat (one row per kind; the newest writer wins)."""

    process = models.CharField(max_length=16, choices=Process, primary_key=True)
    last_seen = models.DateTimeField()
    hostname = models.CharField(max_length=255, blank=True)
    # Messages waiting in the default queue when the worker last looked; null when the broker could not say.
    queue_depth = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.process} seen {self.last_seen:%Y-%m-%d %H:%M:%S}"
