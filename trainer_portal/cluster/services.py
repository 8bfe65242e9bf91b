"""Use cases of the cluster app that change state: "Check now" (queue a background check of one cluster)."""

from __future__ import annotations

import logging
import time

from kombu.exceptions import KombuError

from trainer_portal.errors import PortalError

from . import status
from .models import Cluster, ClusterHealth
from .tasks import cluster_check_task

logger = logging.getLogger(__name__)

# A second "Check now" within this many seconds queues nothing: the first one's check is still on its way.
CHECK_DEBOUNCE_SECONDS = 5.0


class CheckNotQueued(PortalError):
    """The task broker refused the check (503 with Retry-After)."""

    code = "unavailable"
    status = 503


def request_check(cluster: Cluster) -> tuple[bool, float]:
    """Queue a background check of ``cluster`` unless one was asked for within ``CHECK_DEBOUNCE_SECONDS``.

    Returns ``(queued, requested_at)`` (unix time of the request that counts). The request itself never reaches
    the cluster. Raises CheckNotQueued when the task broker refuses the message.
    """
    previous = ClusterHealth.objects.filter(cluster=cluster).values_list("check_requested_at", flat=True).first()
    pending_check = ClusterHealth.objects.filter(cluster=cluster).values_list("checked_at", flat=True).first()
    if previous is not None and time.time() - previous.timestamp() < CHECK_DEBOUNCE_SECONDS and (
            pending_check is None or pending_check < previous):
        return False, previous.timestamp()
    health = status.request_check(cluster)
    try:
        cluster_check_task.apply_async(args=[cluster.name], expires=120)
    except (KombuError, OSError) as exc:
        logger.error("could not queue a check of cluster %s: %s", cluster.name, exc)
        raise CheckNotQueued(f"Could not queue the check: the task broker refused the message ({exc}). Check the "
                             "broker (CELERY_BROKER_URL) and try again.") from exc
    return True, health.check_requested_at.timestamp()
