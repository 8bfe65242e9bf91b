"""Bulk sync batches: what one bulk sync asked for, and its progress derived from the policies' rows.

A batch row only remembers the ``(policy id, revision)`` pairs; whether each is done is read from the policy row
the sync service writes, so progress is the same from every web process and survives restarts.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.utils import timezone

from runtimes.choices import LIVE_SYNC_STATES, SyncState
from runtimes.errors import SyncBatchNotFound
from runtimes.models import RuntimePolicy, SyncBatch

# Batches are only read while someone follows their progress; older ones are removed when a new one is created.
SYNC_BATCH_RETENTION = timedelta(days=7)


def sync_batch_create(*, items: list[tuple[int, int]], actor: Any = None) -> SyncBatch:
    """Record a bulk sync of ``items`` (policy id, revision) and return the new `SyncBatch`."""
    SyncBatch.objects.filter(created_at__lt=timezone.now() - SYNC_BATCH_RETENTION).delete()
    user = actor if getattr(actor, "is_authenticated", False) else None
    return SyncBatch.objects.create(items=[[policy_id, revision] for policy_id, revision in items], actor=user)


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
    """Return ``{id, created_at, total, done, succeeded, failed: [{name, error}], pending, finished, items}``.

    ``items`` are ``{name, revision, status, state, error, error_fields}`` by name; status is succeeded, failed
    or pending, and a failed item carries the cluster's message and field causes.

    An item is done when its revision (or a newer one) is applied, when it failed permanently, or when a newer
    revision was requested since (the newer request carries on). Raises SyncBatchNotFound for an unknown id.
    """
    batch = _batch(batch_id)
    wanted = {int(pid): int(rev) for pid, rev in batch.items}
    rows = RuntimePolicy.objects.filter(pk__in=wanted).values(
        "pk",
        "name",
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
        revision = wanted[row["pk"]]
        status = _item_status(row, revision)
        if status == "succeeded":
            succeeded += 1
        elif status == "failed":
            failed += 1
            failures.append({"name": row["name"], "error": row["last_sync_error"]})
        items.append(
            {
                "name": row["name"],
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
        "failed": failures,
        "pending": total - done,
        "finished": done >= total,
        "items": sorted(items, key=lambda item: item["name"]),
    }


def _item_status(row: dict, revision: int) -> str:
    if (row["applied_revision"] or 0) >= revision and row["sync_state"] in LIVE_SYNC_STATES:
        return "succeeded"
    if (row["sync_requested_revision"] or 0) > revision:
        return "succeeded"  # superseded by a newer request, which is tracked on its own
    if row["sync_state"] == SyncState.FAILED and row["sync_requested_revision"] == revision:
        return "failed"
    return "pending"
