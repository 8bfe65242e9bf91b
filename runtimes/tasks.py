"""Celery tasks for cluster sync: thin interfaces that take ids, call one service, and retry transient failures.

Retry policy: a transient :class:`KubeError` (5xx, 429, timeouts, connection loss, optimistic conflicts) retries
with exponential backoff and full jitter, capped; a permanent one is recorded on the policy by the service and
never retried. Tasks are acknowledged late and idempotent, so a redelivered message (worker killed) converges.
The services enqueue them with ``transaction.on_commit`` so the worker never sees uncommitted rows; they import
this module at the top, so tasks import the services inside their bodies.

The periodic entries (drift check, requeue of unfinished syncs, topology refresh) are in
``settings.CELERY_BEAT_SCHEDULE``.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready

from trainer_portal.kube import KubeError, backoff_delay

logger = logging.getLogger(__name__)

SYNC_MAX_RETRIES = 10
RETRY_INITIAL_SECONDS = 1.0
RETRY_MAX_SECONDS = 60.0
# Policies per task in a bulk apply: large enough to amortise the per-task cost (broker round trip, DB
# connection), small enough that both pool processes stay busy and a redelivered chunk redoes little.
BULK_CHUNK_SIZE = 10


def _retry_countdown(retries: int) -> float:
    return backoff_delay(retries + 1, initial=RETRY_INITIAL_SECONDS, maximum=RETRY_MAX_SECONDS)


@shared_task(bind=True, acks_late=True, max_retries=SYNC_MAX_RETRIES, name="runtimes.tasks.policy_sync_task")
def policy_sync_task(
    self, policy_id: int, revision: int, force: bool = False, cluster_id: int | None = None
) -> str:
    """Sync revision ``revision`` of policy ``policy_id`` to cluster ``cluster_id`` (None, as in messages queued
    before clusters existed: the default cluster); return the outcome name."""
    from runtimes.services.sync import policy_sync, policy_sync_give_up

    try:
        result = policy_sync(policy_id=policy_id, revision=revision, force=force, cluster_id=cluster_id)
    except KubeError as exc:
        if exc.permanent:  # the service records permanent errors itself; this is a bug guard
            raise
        if self.request.retries >= self.max_retries:
            policy_sync_give_up(policy_id=policy_id, revision=revision, error=exc.message, cluster_id=cluster_id)
            return "failed"
        countdown = max(_retry_countdown(self.request.retries), getattr(exc, "retry_after", None) or 0)
        logger.info("sync of policy %s rev %s on cluster %s: %s; retry in %.1fs", policy_id, revision, cluster_id,
                    exc.message, countdown)
        raise self.retry(countdown=countdown) from None
    if result.requeue:
        _requeue_current(policy_id, result.cluster_id)
    return result.outcome


def _requeue_current(policy_id: int, cluster_id: int | None) -> None:
    from runtimes.services.sync import policy_requeue_current

    policy_requeue_current(policy_id=policy_id, cluster_id=cluster_id)


def _item(item: list) -> tuple[int, int, int | None]:
    """Return (policy id, revision, cluster id) of a bulk item; items queued before clusters existed have no
    cluster (the default one)."""
    return int(item[0]), int(item[1]), (int(item[2]) if len(item) > 2 and item[2] is not None else None)


@shared_task(acks_late=True, name="runtimes.tasks.policies_bulk_sync_task")
def policies_bulk_sync_task(items: list[list[int]]) -> int:
    """Fan ``[policy_id, revision, cluster_id]`` items out in chunks of ``BULK_CHUNK_SIZE``; return the number of
    chunks.

    Re-running it (redelivery) enqueues duplicates, which are harmless: the second run of a pair finds it done.
    """
    chunks = [items[start : start + BULK_CHUNK_SIZE] for start in range(0, len(items), BULK_CHUNK_SIZE)]
    for chunk in chunks:
        policies_sync_chunk_task.delay(chunk)
    return len(chunks)


@shared_task(acks_late=True, name="runtimes.tasks.policies_sync_chunk_task")
def policies_sync_chunk_task(items: list[list[int]]) -> dict[str, int]:
    """Sync a few policies in one task (saves the per-task overhead in bulk applies); return outcome counts.

    A policy that hits a transient error is handed to its own ``policy_sync_task`` (which retries with backoff),
    so one flaky object never holds up or re-runs the others.
    """
    from runtimes.services.sync import policy_sync

    counts: dict[str, int] = {}
    for item in items:
        policy_id, revision, cluster_id = _item(item)
        try:
            result = policy_sync(policy_id=policy_id, revision=revision, cluster_id=cluster_id)
        except KubeError as exc:
            if exc.permanent:
                raise
            policy_sync_task.apply_async((policy_id, revision, False, cluster_id), countdown=_retry_countdown(0))
            outcome = "retrying"
        else:
            if result.requeue:
                _requeue_current(policy_id, result.cluster_id)
            outcome = result.outcome
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


@shared_task(acks_late=True, name="runtimes.tasks.policies_requeue_unfinished_task")
def policies_requeue_unfinished_task() -> int:
    """Re-enqueue (policy, cluster) syncs left queued/syncing (lost messages, killed workers); return how many."""
    from runtimes.services.sync import policies_unfinished

    items = policies_unfinished()
    for policy_id, revision, cluster_id in items:
        policy_sync_task.delay(policy_id, revision, False, cluster_id)
    if items:
        logger.info("re-enqueued %d unfinished syncs", len(items))
    return len(items)


@shared_task(
    bind=True, acks_late=True, max_retries=3, name="runtimes.tasks.policies_drift_check_task", ignore_result=True
)
def policies_drift_check_task(self) -> int:
    """Compare every synced policy with every enabled cluster (beat); return the number of drifted (policy, cluster)
    pairs."""
    from runtimes.services.sync import policies_drift_check_every_cluster

    try:
        return len(policies_drift_check_every_cluster())
    except KubeError as exc:
        if exc.permanent or self.request.retries >= self.max_retries:
            logger.warning("drift check failed: %s", exc.message)
            return 0
        raise self.retry(countdown=_retry_countdown(self.request.retries)) from None


@shared_task(bind=True, acks_late=True, max_retries=3, name="runtimes.tasks.policy_drift_check_task")
def policy_drift_check_task(self, policy_id: int, cluster_id: int | None = None) -> bool:
    """Check one policy for drift on cluster ``cluster_id`` (None: the default cluster); return True when it
    drifted."""
    from runtimes.services.sync import policy_drift_check

    try:
        result = policy_drift_check(policy_id=policy_id, cluster_id=cluster_id)
    except KubeError as exc:
        if exc.permanent or self.request.retries >= self.max_retries:
            return False
        raise self.retry(countdown=_retry_countdown(self.request.retries)) from None
    return bool(result and result.drifted)


@worker_ready.connect(dispatch_uid="runtimes.tasks.requeue_on_worker_ready")
def _requeue_on_worker_ready(sender=None, **kwargs) -> None:
    # A worker killed mid-task leaves rows in queued/syncing. Brokers without redelivery (the filesystem broker)
    # would lose them, and Redis redelivers only after the visibility timeout; re-enqueueing on start is cheap
    # because a duplicate finds its revision done and does nothing.
    try:
        policies_requeue_unfinished_task.delay()
    except Exception:  # never keep a worker from starting
        logger.exception("could not enqueue the requeue of unfinished syncs")
