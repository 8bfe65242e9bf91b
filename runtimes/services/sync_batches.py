"""Bulk sync batches: what one bulk sync asked for, and its progress derived from the policies' rows.

A batch row only remembers the ``(policy id, revision, cluster id)`` items; whether each is done is read from the
(policy, cluster) sync row the sync service writes, so progress is the same from every web process and survives
restarts.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.utils import timezone

from runtimes.choices import LIVE_SYNC_STATES, SyncState
from runtimes.errors import SyncBatchNotFound
from runtimes.models import PolicySync, SyncBatch

# Batches are only read while someone follows their progress; older ones are removed when a new one is created.
SYNC_BATCH_RETENTION = timedelta(days=7)


def sync_batch_create(*, items: list[tuple[int, int, int]], actor: Any = None) -> SyncBatch:
    """Record a bulk sync of ``items`` (policy id, revision, cluster id) and return the new `SyncBatch`."""
    SyncBatch.objects.filter(created_at__lt=timezone.now() - SYNC_BATCH_RETENTION).delete()
    user = actor if getattr(actor, "is_authenticated", False) else None
    return SyncBatch.objects.create(items=[list(item) for item in items], actor=user)


def _batch(batch_id: str) -> SyncBatch:
    try:
        key = uuid.UUID(str(batch_id))
    except ValueError:
        raise SyncBatchNotFound(str(batch_id)) from None
    batch = SyncBatch.objects.filter(pk=key).first()
    if batch is None:
        raise SyncBatchNotFound(str(batch_id))
    return batch


def sync_batch_progress(*, batch_id: str) -> dict:
    """Return ``{id, created_at, total, done, succeeded, failed: [{name, cluster, error}], pending, finished, items}``.

    ``items`` are ``{name, cluster, revision, status, state, error, error_fields}`` by name and cluster; status is
    succeeded, failed or pending, and a failed item carries the cluster's message and field causes. Items of
    batches recorded before clusters existed are on the default cluster.

    An item is done when its revision (or a newer one) is applied, when it failed permanently, or when a newer
    revision was requested since (the newer request carries on). Raises SyncBatchNotFound for an unknown id.
    """
    from runtimes.services.clusters import default_cluster

    batch = _batch(batch_id)
    default_id = None
    wanted: dict[tuple[int, int], int] = {}
    for item in batch.items:
        cluster_id = item[2] if len(item) > 2 and item[2] is not None else None
        if cluster_id is None:
            default_id = default_id or default_cluster().pk
            cluster_id = default_id
        wanted[(int(item[0]), int(cluster_id))] = int(item[1])
    policy_ids = {policy_id for policy_id, _ in wanted}
    rows = PolicySync.objects.filter(policy_id__in=policy_ids, cluster_id__in={c for _, c in wanted}).values(
        "policy_id",
        "cluster_id",
        "policy__name",
        "cluster__name",
        "sync_state",
        "sync_requested_revision",
        "applied_revision",
        "last_sync_error",
        "sync_error_fields",
    )
    items = []
    succeeded = failed = 0
    failures = []
    for row in rows:
        revision = wanted.get((row["policy_id"], row["cluster_id"]))
        if revision is None:
            continue
        status = _item_status(row, revision)
        if status == "succeeded":
            succeeded += 1
        elif status == "failed":
            failed += 1
            failures.append({"name": row["policy__name"], "cluster": row["cluster__name"],
                             "error": row["last_sync_error"]})
        items.append(
            {
                "name": row["policy__name"],
                "cluster": row["cluster__name"],
                "revision": revision,
                "status": status,
                "state": row["sync_state"],
                "error": row["last_sync_error"] if status == "failed" else "",
                "error_fields": (row["sync_error_fields"] or []) if status == "failed" else [],
            }
        )
    gone = len(wanted) - len(items)
    total = len(wanted)
    done = succeeded + failed + gone
    return {
        "id": batch.id.hex,
        "created_at": batch.created_at.isoformat(),
        "total": total,
        "done": done,
        "succeeded": succeeded,
        "failed": sorted(failures, key=lambda item: (item["name"], item["cluster"])),
        "pending": total - done,
        "finished": done >= total,
        "items": sorted(items, key=lambda item: (item["name"], item["cluster"])),
    }


def _item_status(row: dict, revision: int) -> str:
    if (row["applied_revision"] or 0) >= revision and row["sync_state"] in LIVE_SYNC_STATES:
        return "succeeded"
    if (row["sync_requested_revision"] or 0) > revision:
        return "succeeded"  # superseded by a newer request, which is tracked on its own
    if row["sync_state"] == SyncState.FAILED and row["sync_requested_revision"] == revision:
        return "failed"
    return "pending"
