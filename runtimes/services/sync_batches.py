"""Bulk sync batches: what was asked in one bulk sync, and its progress derived from the policies' rows."""

from __future__ import annotations

import json
import logging
import time
import uuid
from pathlib import Path
from typing import Any

from django.core.cache import cache
from django.utils import timezone

from runtimes.choices import SyncState
from runtimes.models import RuntimePolicy

logger = logging.getLogger(__name__)

# Records on the live object which portal revision it reflects; lets a resync of the same revision skip the write.
REVISION_ANNOTATION = "trainer-portal/revision"
ACTIVE_STATES = (SyncState.QUEUED, SyncState.SYNCING)
LIVE_STATES = (SyncState.SYNCED, SyncState.DRIFTED)
SYNC_JOB_TTL_SECONDS = 24 * 3600
MAX_ERROR_LENGTH = 4000


def sync_job_create(*, items: list[tuple[int, int]], actor: Any = None) -> dict:
    """Record a bulk sync of ``items`` (policy id, revision) and return the job ``{id, created_at, items}``.

    Progress is derived from the policies' rows (see :func:`sync_job_progress`); the job itself only remembers
    what was asked, in the cache, for a day.
    """
    job = {
        "id": uuid.uuid4().hex,
        "created_at": timezone.now().isoformat(),
        "actor": getattr(actor, "username", "") or "",
        "items": [[policy_id, revision] for policy_id, revision in items],
    }
    cache.set(_job_key(job["id"]), job, SYNC_JOB_TTL_SECONDS)
    _job_file_write(job)
    return job


def sync_job_progress(*, job_id: str) -> dict | None:
    """Return ``{id, total, done, succeeded, failed: [{name, error}], pending, finished, items}`` or None if unknown.

    An item is done when its revision (or a newer one) is applied, when it failed permanently, or when a newer
    revision was requested since (the newer request carries on).
    """
    job = cache.get(_job_key(job_id)) or _job_file_read(job_id)
    if job is None:
        return None
    wanted = {int(pid): int(rev) for pid, rev in job["items"]}
    rows = RuntimePolicy.objects.filter(pk__in=wanted).values(
        "pk", "name", "sync_state", "sync_requested_revision", "applied_revision", "last_sync_error"
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
        items.append({"name": row["name"], "revision": revision, "status": status, "state": row["sync_state"]})
    gone = len(wanted) - len(items)
    total = len(wanted)
    done = succeeded + failed + gone
    return {
        "id": job["id"],
        "created_at": job["created_at"],
        "total": total,
        "done": done,
        "succeeded": succeeded,
        "failed": failures,
        "pending": total - done,
        "finished": done >= total,
        "items": sorted(items, key=lambda item: item["name"]),
    }


def _item_status(row: dict, revision: int) -> str:
    if (row["applied_revision"] or 0) >= revision and row["sync_state"] in LIVE_STATES:
        return "succeeded"
    if (row["sync_requested_revision"] or 0) > revision:
        return "succeeded"  # superseded by a newer request, which is tracked on its own
    if row["sync_state"] == SyncState.FAILED and row["sync_requested_revision"] == revision:
        return "failed"
    return "pending"


def _job_key(job_id: str) -> str:
    return f"runtimes:sync-job:{job_id}"


# The cache is per process unless a shared backend (Redis) is configured; a small JSON file under VAR_DIR makes
# progress readable from every web process on the host either way.
def _job_dir() -> Path:
    from django.conf import settings

    return Path(settings.VAR_DIR) / "sync-jobs"


def _job_file_write(job: dict) -> None:
    directory = _job_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        cutoff = time.time() - SYNC_JOB_TTL_SECONDS
        for old in directory.glob("*.json"):
            if old.stat().st_mtime < cutoff:
                old.unlink(missing_ok=True)
        tmp = directory / f".{job['id']}.tmp"
        tmp.write_text(json.dumps(job))
        tmp.replace(directory / f"{job['id']}.json")
    except OSError as exc:
        logger.warning("cannot store sync job %s on disk: %s", job["id"], exc)


def _job_file_read(job_id: str) -> dict | None:
    if not job_id.isalnum():
        return None
    try:
        return json.loads((_job_dir() / f"{job_id}.json").read_text())
    except (OSError, ValueError):
        return None



