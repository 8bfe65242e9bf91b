"""The beat's pulse: scheduled every few seconds so that beat publishes (and records itself) even when idle."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="trainer_portal.health.tasks.beat_pulse_task", ignore_result=True)
def beat_pulse_task() -> None:
    """Do nothing: beat recorded its heartbeat when it published this task (``signals._beat_published``)."""
