"""Celery tasks of notifications: thin interfaces over the services (which import this module at the top; the
tasks import the services inside their bodies). ``notifications_tick_task`` runs on beat
(``settings.CELERY_BEAT_SCHEDULE``); the services enqueue ``deliveries_send_task`` on commit and with a countdown
for retries, so deliveries go out between ticks too."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True, ignore_result=True)
def notifications_tick_task() -> None:
    """Read the outbox sources (and derive the waiting events), then send what is due."""
    from . import services

    services.outbox_scan()
    services.deliveries_send_due()


@shared_task(acks_late=True, ignore_result=True)
def deliveries_send_task() -> None:
    """Send the deliveries that are due now."""
    from . import services

    services.deliveries_send_due()
