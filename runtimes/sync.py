"""Cluster sync services: apply policies with server-side apply, detect drift, adopt live runtimes.

State machine on ``RuntimePolicy.sync_state`` (changed only by compare-and-set on the state and the requested
revision, never by read-modify-write)::

    draft/synced/failed/drifted/queued/syncing --request--> queued(rev)
    queued(rev) / syncing(rev) --worker picks it up--> syncing(rev)      (syncing too: a redelivered message)
    syncing(rev) --applied or already equal--> synced     --permanent error--> failed
    synced --live object differs--> drifted --reapply / adopt--> queued / synced

The order of operations in :func:`runtime_sync` is chosen so that running it again is the recovery after any
interruption (worker killed, message redelivered, retry): a revision that is already live is detected and not
rewritten; an apply that lost the race to a newer revision is undone by re-requesting the newer one.

Two guards keep an older revision from overwriting a newer one: (1) right before writing, the row must still
request our revision; (2) the apply carries the live object's resourceVersion, so if another apply landed after
we read the object, ours fails with a (transient) conflict instead of overwriting it.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from trainer_portal import kube

from .choices import RevisionSource, SyncState
from .domain.diff import semantically_equal, structural_diff, unified_diff
from .domain.manifest import API_VERSION, KIND, dump_yaml, strip_server_fields
from .domain.policy import validate_runtime
from .errors import NotApplicable, PolicyError, StartupDeadlockUnconfirmed
from .models import PolicyRevision, RuntimePolicy

logger = logging.getLogger(__name__)

# Records on the live object which portal revision it reflects; lets a resync of the same revision skip the write.
REVISION_ANNOTATION = "trainer-portal/revision"
ACTIVE_STATES = (SyncState.QUEUED, SyncState.SYNCING)
LIVE_STATES = (SyncState.SYNCED, SyncState.DRIFTED)
SYNC_JOB_TTL_SECONDS = 24 * 3600
MAX_ERROR_LENGTH = 4000


@dataclass
class SyncResult:
    """What one :func:`runtime_sync` call did.

    ``outcome`` is one of: ``applied`` (written), ``unchanged`` (already live, nothing written), ``failed``
    (permanent error recorded), ``superseded`` (a newer revision is requested; nothing recorded), ``skipped``
    (already handled by another run, or the policy is gone). ``requeue`` is True when our write may have
    overwritten a newer revision, which must then be synced again.
    """

    outcome: str
    policy_id: int
    revision: int
    resource_version: str = ""
    message: str = ""
    requeue: bool = False


@dataclass
class DriftResult:
    """What a drift check found for one policy: ``drifted`` plus the diff text, changes and other managers."""

    policy_id: int
    name: str
    drifted: bool
    diff: str = ""
    changes: list[dict] = field(default_factory=list)
    managers: list[str] = field(default_factory=list)
    missing: bool = False
    error: str = ""


@dataclass
class AdoptResult:
    """What an adoption did: names created, unchanged (already identical), differing (left alone) and failed."""

    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        """Return the result as plain JSON-able data."""
        return {
            "created": self.created,
            "unchanged": self.unchanged,
            "differing": self.differing,
            "failed": [{"name": name, "error": error} for name, error in self.failed.items()],
        }


# --------------------------------------------------------------------------------------------------- requests


def startup_deadlocks(policy: RuntimePolicy) -> list[dict[str, Any]]:
    """Return the policy's startup-order deadlock warnings (a gang that never reaches minCount), as problem dicts."""
    from .services import validation_options

    return [p.as_dict() for p in validate_runtime(policy.manifest, validation_options()).startup_deadlocks]


def _check_applicable(policy: RuntimePolicy, *, confirm_startup_deadlock: bool) -> bool:
    """Return whether applying ``policy`` needs (and got) the startup-deadlock confirmation.

    Raises NotApplicable when the stored manifest keeps errors (from an import or adoption, decision D18) and
    StartupDeadlockUnconfirmed when a gang can never reach minCount and ``confirm_startup_deadlock`` is False.
    """
    from .services import validation_options

    report = validate_runtime(policy.manifest, validation_options())
    if report.errors:
        raise NotApplicable(policy.name, [p.as_dict() for p in report.errors])
    deadlocks = [p.as_dict() for p in report.startup_deadlocks]
    if deadlocks and not confirm_startup_deadlock:
        raise StartupDeadlockUnconfirmed([policy.name], deadlocks)
    return bool(deadlocks)


def runtime_sync_request(*, policy: RuntimePolicy, confirm_startup_deadlock: bool = False) -> int:
    """Mark ``policy`` as queued for syncing its current revision and return that revision number.

    The caller enqueues ``runtime_sync_task(policy.id, revision)`` with ``transaction.on_commit``. Asking again
    for a revision that is already queued or syncing changes no row (a duplicate task is harmless, and takes over
    a row whose worker died). A policy whose gang never reaches minCount (dependsOn inside one gang, decision D8)
    needs ``confirm_startup_deadlock``, which the sync record keeps (``sync_startup_deadlock_confirmed``). Raises
    NotApplicable, StartupDeadlockUnconfirmed, and PolicyError when the policy vanished or keeps changing.
    """
    confirmed = _check_applicable(policy, confirm_startup_deadlock=confirm_startup_deadlock)
    for _ in range(5):
        current = (
            RuntimePolicy.objects.filter(pk=policy.pk)
            .values("sync_state", "version", "sync_requested_revision")
            .first()
        )
        if current is None:
            raise PolicyError(f"Policy '{policy.name}' no longer exists.")
        if current["sync_state"] in ACTIVE_STATES and current["sync_requested_revision"] == current["version"]:
            # Already on its way; the (possibly duplicate) task the caller enqueues finds it and takes over.
            return int(current["version"])
        # Compare-and-set on both the state and the version: a concurrent edit or sync makes us re-read.
        rows = RuntimePolicy.objects.filter(pk=policy.pk, sync_state=current["sync_state"], version=current["version"])
        updated = rows.update(
            sync_state=SyncState.QUEUED,
            sync_requested_revision=current["version"],
            last_sync_error="",
            sync_error_fields=[],
            sync_startup_deadlock_confirmed=confirmed,
        )
        if updated == 1:
            policy.sync_state = SyncState.QUEUED
            policy.sync_requested_revision = current["version"]
            return int(current["version"])
    raise PolicyError(f"Policy '{policy.name}' keeps changing; try the sync again.")


def runtimes_sync_request(
    *, names: list[str] | None = None, confirm_startup_deadlock: bool = False
) -> list[tuple[int, int]]:
    """Queue every policy (or those named) for syncing; return ``[(policy_id, revision)]`` to enqueue.

    Raises PolicyError naming unknown policies, NotApplicable for a policy that keeps errors, and
    StartupDeadlockUnconfirmed naming every policy whose gang never reaches minCount unless
    ``confirm_startup_deadlock`` (nothing is queued then).
    """
    queryset = RuntimePolicy.objects.all()
    if names is not None:
        found = set(queryset.filter(name__in=names).values_list("name", flat=True))
        unknown = sorted(set(names) - found)
        if unknown:
            raise PolicyError(f"Unknown policies: {', '.join(unknown)}.")
        queryset = queryset.filter(name__in=names)
    policies = list(queryset.only("pk", "name", "manifest"))
    if not confirm_startup_deadlock:
        found = [(policy.name, startup_deadlocks(policy)) for policy in policies]
        found = [(name, problems) for name, problems in found if problems]
        if found:
            raise StartupDeadlockUnconfirmed([n for n, _ in found], [p for _, problems in found for p in problems])
    return [
        (policy.pk, runtime_sync_request(policy=policy, confirm_startup_deadlock=confirm_startup_deadlock))
        for policy in policies
    ]


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


def policies_unfinished() -> list[tuple[int, int]]:
    """Return ``[(policy_id, requested_revision)]`` of policies stuck in queued/syncing (for re-enqueueing)."""
    return list(
        RuntimePolicy.objects.filter(sync_state__in=ACTIVE_STATES, sync_requested_revision__isnull=False)
        .order_by("pk")
        .values_list("pk", "sync_requested_revision")
    )


# --------------------------------------------------------------------------------------------------- enqueueing


SYNC_TASK = "runtimes.tasks.runtime_sync_task"
BULK_SYNC_TASK = "runtimes.tasks.runtimes_bulk_sync_task"


def _task(name: str):
    # Looked up by name in Celery's registry: interfaces (API views) may not import runtimes.tasks directly
    # (import-linter layers), and a registry lookup still honours task_always_eager, unlike send_task().
    from celery import current_app

    if name not in current_app.tasks:
        # Web processes never start a worker, so Celery's lazy autodiscovery has not imported the tasks yet.
        current_app.loader.import_default_modules()
    return current_app.tasks[name]


def enqueue_sync_on_commit(*, policy_id: int, revision: int, force: bool = False) -> None:
    """Enqueue ``runtime_sync_task(policy_id, revision, force)`` once the current transaction commits."""
    transaction.on_commit(lambda: _task(SYNC_TASK).delay(policy_id, revision, force))


def enqueue_bulk_on_commit(*, items: list[tuple[int, int]]) -> None:
    """Enqueue one fan-out task for ``items`` (policy id, revision) once the current transaction commits."""
    payload = [[policy_id, revision] for policy_id, revision in items]
    transaction.on_commit(lambda: _task(BULK_SYNC_TASK).delay(payload))


# --------------------------------------------------------------------------------------------------- the sync


def desired_object(manifest: dict, *, revision: int) -> dict:
    """Return the object we apply for ``manifest`` at ``revision``: server fields removed, our annotation added."""
    body = strip_server_fields(manifest)
    body["apiVersion"] = body.get("apiVersion") or API_VERSION
    body["kind"] = body.get("kind") or KIND
    metadata = body.setdefault("metadata", {})
    metadata.pop("namespace", None)  # cluster-scoped
    annotations = dict(metadata.get("annotations") or {})
    annotations[REVISION_ANNOTATION] = str(revision)
    metadata["annotations"] = annotations
    return body


def runtime_sync(
    *, policy_id: int, revision: int, force: bool = False, gateway: kube.Gateway | None = None, now=None
) -> SyncResult:
    """Bring the cluster object of policy ``policy_id`` to ``revision`` and record the outcome.

    Steps:
    1. Compare-and-set queued/syncing(revision) → syncing; if no row matches, someone else owns it: skip.
    2. Read the live object; if it already reflects this revision and our values, record synced (no write).
    3. Server-side dry run: validation errors are recorded field by field as a permanent failure.
    4. Check that the row still requests our revision (else: superseded, nothing written).
    5. Apply, with the live resourceVersion as a precondition; record synced with rv, generation and time.

    Raises a transient :class:`kube.KubeError` (the caller retries). Permanent errors are recorded, not raised.
    """
    now = now or timezone.now()
    rows = RuntimePolicy.objects.filter(pk=policy_id, sync_requested_revision=revision, sync_state__in=ACTIVE_STATES)
    if rows.update(sync_state=SyncState.SYNCING) != 1:
        return _not_ours(policy_id, revision)
    try:
        manifest = PolicyRevision.objects.get(policy_id=policy_id, number=revision).manifest
    except PolicyRevision.DoesNotExist:
        message = f"Revision {revision} no longer exists."
        _record_failure(policy_id, revision, message, [])
        return SyncResult("failed", policy_id, revision, message=message)
    desired = desired_object(manifest, revision=revision)
    name = desired["metadata"]["name"]
    try:
        gateway = gateway or kube.get_gateway()
        resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
        live = gateway.get(resource, name=name)
        if live is not None and not force and is_live(live, desired, gateway.settings.field_manager):
            return _record_synced(policy_id, revision, live, now, outcome="unchanged")
        gateway.apply(resource, body=desired, dry_run=True, force=force)
        if not _still_requested(policy_id, revision):
            return SyncResult("superseded", policy_id, revision, message="A newer revision was requested.")
        body = dict(desired)
        if live is not None:
            # Optimistic precondition: if anything was written since we read `live`, the server refuses this apply.
            body["metadata"] = {**desired["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]}
        applied = gateway.apply(resource, body=body, force=force)
        if force:
            applied = _remove_foreign_fields(gateway, resource, applied, desired)
    except kube.KubeError as exc:
        if not exc.permanent:
            _record_transient(policy_id, revision, exc)
            raise
        _record_failure(policy_id, revision, describe_error(exc), error_fields(exc))
        return SyncResult("failed", policy_id, revision, message=exc.message)
    result = _record_synced(policy_id, revision, applied, now, outcome="applied")
    if result.outcome == "superseded":
        # We wrote `revision` while a newer one was requested; if its run finished first, we overwrote it.
        result.requeue = True
    return result


def runtime_sync_give_up(*, policy_id: int, revision: int, error: str) -> bool:
    """Record that retries of ``revision`` are exhausted (state failed). Return True when the row was changed."""
    return _record_failure(policy_id, revision, f"Gave up after repeated transient errors: {error}", [])


def is_live(live: dict, desired: dict, field_manager: str) -> bool:
    """Return True when ``live`` already is ``desired``: our revision annotation, our values, and our ownership."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    wanted = desired["metadata"]["annotations"][REVISION_ANNOTATION]
    if annotations.get(REVISION_ANNOTATION) != wanted:
        return False
    managers = (live.get("metadata") or {}).get("managedFields") or []
    if managers and not any(m.get("manager") == field_manager and m.get("operation") == "Apply" for m in managers):
        return False
    return contains(strip_server_fields(live), strip_server_fields(desired))


def contains(live: Any, desired: Any) -> bool:
    """Return True when every value in ``desired`` is present and equal in ``live`` (server defaults allowed)."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(k in live and contains(live[k], want) for k, want in desired.items())
    if isinstance(desired, list):
        return (
            isinstance(live, list)
            and len(live) == len(desired)
            and all(contains(item, want) for item, want in zip(live, desired, strict=True))
        )
    if isinstance(desired, bool) or isinstance(live, bool):
        return live is desired
    return live == desired


def describe_error(exc: kube.KubeError) -> str:
    """Return the message to show for ``exc``: the server's message, plus the other managers on conflicts."""
    message = exc.message
    if isinstance(exc, kube.KubeConflict) and exc.managers:
        owners = ", ".join(f'"{manager}"' for manager in exc.managers)
        message = (
            f"{message} — the conflicting fields are owned by field manager {owners}. Re-apply with force to "
            "take them over, or adopt the live object."
        )
    return message[:MAX_ERROR_LENGTH]


def error_fields(exc: kube.KubeError) -> list[dict]:
    """Return ``[{path, message, reason}]`` for each field the server named in ``exc``."""
    return [
        {"path": cause.field.lstrip("."), "message": cause.message, "reason": cause.reason}
        for cause in exc.causes
        if cause.field or cause.message
    ]


def _not_ours(policy_id: int, revision: int) -> SyncResult:
    row = RuntimePolicy.objects.filter(pk=policy_id).values("sync_state", "sync_requested_revision").first()
    if row is None:
        return SyncResult("skipped", policy_id, revision, message="The policy no longer exists.")
    if (row["sync_requested_revision"] or 0) > revision:
        return SyncResult("superseded", policy_id, revision, message="A newer revision was requested.")
    return SyncResult("skipped", policy_id, revision, message=f"Nothing to do (state {row['sync_state']}).")


def _still_requested(policy_id: int, revision: int) -> bool:
    return RuntimePolicy.objects.filter(
        pk=policy_id, sync_requested_revision=revision, sync_state=SyncState.SYNCING
    ).exists()


def _record_synced(policy_id: int, revision: int, obj: dict, now, *, outcome: str) -> SyncResult:
    metadata = obj.get("metadata") or {}
    resource_version = str(metadata.get("resourceVersion") or "")
    rows = RuntimePolicy.objects.filter(pk=policy_id, sync_requested_revision=revision, sync_state=SyncState.SYNCING)
    updated = rows.update(
        sync_state=SyncState.SYNCED,
        applied_revision=revision,
        applied_resource_version=resource_version,
        applied_generation=metadata.get("generation"),
        last_synced_at=now,
        last_sync_error="",
        sync_error_fields=[],
        drift_diff="",
    )
    if updated != 1:
        return SyncResult("superseded", policy_id, revision, resource_version, "A newer revision was requested.")
    return SyncResult(outcome, policy_id, revision, resource_version)


def _record_failure(policy_id: int, revision: int, message: str, fields: list[dict]) -> bool:
    rows = RuntimePolicy.objects.filter(pk=policy_id, sync_requested_revision=revision, sync_state=SyncState.SYNCING)
    updated = rows.update(
        sync_state=SyncState.FAILED, last_sync_error=message[:MAX_ERROR_LENGTH], sync_error_fields=fields
    )
    return updated == 1


def _record_transient(policy_id: int, revision: int, exc: kube.KubeError) -> None:
    # The state stays `syncing`; the message tells the user why it takes long (the task retries with backoff).
    RuntimePolicy.objects.filter(pk=policy_id, sync_requested_revision=revision, sync_state=SyncState.SYNCING).update(
        last_sync_error=f"Retrying: {exc.message}"[:MAX_ERROR_LENGTH]
    )


# --------------------------------------------------------------------------------------------------- drift


def runtime_drift_check(
    *, policy_id: int, live: dict | object | None = ..., gateway: kube.Gateway | None = None
) -> DriftResult | None:
    """Compare synced/drifted policy ``policy_id`` with its live object; record drifted/synced; return the result.

    ``live`` may be passed when the caller already listed the objects (None = absent on the cluster). Returns None
    for policies that are not synced or drifted. Raises KubeError when the cluster cannot be read.
    """
    policy = RuntimePolicy.objects.filter(pk=policy_id, sync_state__in=LIVE_STATES).first()
    if policy is None or policy.applied_revision is None:
        return None
    gateway = gateway or kube.get_gateway()
    resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    if live is ...:
        live = gateway.get(resource, name=policy.name)
    result = compute_drift(policy, live, gateway=gateway, resource=resource)
    _record_drift(policy, result, live)
    return result


def runtimes_drift_check_all(*, gateway: kube.Gateway | None = None) -> list[DriftResult]:
    """Check every synced/drifted policy against one list of the cluster's runtimes; return the drifted ones."""
    gateway = gateway or kube.get_gateway()
    resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    live_by_name = {obj["metadata"]["name"]: obj for obj in gateway.list(resource).items}
    drifted = []
    for policy_id, name in RuntimePolicy.objects.filter(sync_state__in=LIVE_STATES).values_list("pk", "name"):
        try:
            result = runtime_drift_check(policy_id=policy_id, live=live_by_name.get(name), gateway=gateway)
        except kube.KubeError as exc:
            if not exc.permanent:
                raise
            logger.warning("drift check of %s failed: %s", name, exc.message)
            continue
        if result is not None and result.drifted:
            drifted.append(result)
    return drifted


def compute_drift(policy: RuntimePolicy, live: dict | None, *, gateway: kube.Gateway, resource) -> DriftResult:
    """Return how ``live`` differs from what applying the policy's applied revision would produce.

    Fast path: the live resourceVersion is the one we recorded → no drift. Otherwise the applied revision is
    dry-run applied with force (so server defaults appear on both sides) and compared with ``live``; fields that
    other field managers own outside our manifest count as drift too.
    """
    if live is None:
        return DriftResult(policy.pk, policy.name, True, diff="The object is missing from the cluster.", missing=True)
    metadata = live.get("metadata") or {}
    if policy.applied_resource_version and metadata.get("resourceVersion") == policy.applied_resource_version:
        return DriftResult(policy.pk, policy.name, False)
    manifest = PolicyRevision.objects.get(policy=policy, number=policy.applied_revision).manifest
    desired = desired_object(manifest, revision=policy.applied_revision)
    ours = gateway.apply(resource, body=desired, dry_run=True, force=True)
    ours_clean, live_clean = comparable(ours), comparable(live)
    field_manager = gateway.settings.field_manager
    foreign = foreign_fields(metadata.get("managedFields") or [], field_manager, desired)
    if semantically_equal(ours_clean, live_clean) and not foreign:
        return DriftResult(policy.pk, policy.name, False)
    changes = [
        {"path": c.path, "op": c.op, "ours": c.old, "live": c.new} for c in structural_diff(ours_clean, live_clean)
    ]
    managers = sorted({manager for manager, _ in foreign} | _changers(live, field_manager, changes))
    for manager, path in foreign:
        if not any(change["path"] == path for change in changes):
            changes.append({"path": path, "op": "added", "ours": None, "live": f"(owned by {manager})"})
    diff = unified_diff(ours_clean, live_clean, old_label="portal (applied revision)", new_label="cluster (live)")
    return DriftResult(policy.pk, policy.name, True, diff=diff, changes=changes, managers=managers)


def comparable(obj: dict) -> dict:
    """Return ``obj`` without server-populated fields, for comparing desired and live objects."""
    return strip_server_fields(obj)


def foreign_fields(managed_fields: list[dict], field_manager: str, desired: dict) -> list[tuple[str, str]]:
    """Return ``[(manager, dotted path)]`` of leaf fields other managers own under spec/metadata that we do not set.

    Status subresource entries are ignored (controllers own status by design).
    """
    return [(manager, ".".join(path)) for manager, path in _foreign_paths(managed_fields, field_manager, desired)]


def _remove_foreign_fields(gateway: kube.Gateway, resource, applied: dict, desired: dict) -> dict:
    """Delete the map fields other managers added outside our manifest (a forced re-apply keeps them otherwise).

    Fields inside list items are left alone (a merge patch would replace the whole list); drift shows them.
    """
    managed = (applied.get("metadata") or {}).get("managedFields") or []
    paths = [path for _, path in _foreign_paths(managed, gateway.settings.field_manager, desired)]
    patch: dict = {}
    for path in paths:
        if any(step.startswith("[") for step in path):
            continue
        node = patch
        for step in path[:-1]:
            node = node.setdefault(step, {})
            if node is None:
                break
        else:
            node[path[-1]] = None
    if not patch:
        return applied
    return gateway.merge_patch(resource, name=applied["metadata"]["name"], patch=patch)


def _foreign_paths(managed_fields: list[dict], field_manager: str, desired: dict) -> list[tuple[str, tuple]]:
    found = []
    for entry in managed_fields:
        if entry.get("manager") == field_manager or entry.get("subresource"):
            continue
        for path in _leaf_paths(entry.get("fieldsV1") or {}):
            if path[0] not in ("spec", "metadata") or (path[:2] == ("metadata", "annotations") and (
                len(path) > 2 and path[2] == REVISION_ANNOTATION
            )):
                continue
            if not _present(desired, path):
                found.append((str(entry.get("manager") or "?"), path))
    return found


def _leaf_paths(fields: dict, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    for key, value in fields.items():
        if key == ".":
            continue
        step = key[2:] if key.startswith(("f:", "k:", "v:", "i:")) else key
        if key.startswith("k:"):
            step = "[" + step + "]"
        children = {k: v for k, v in (value or {}).items() if k != "."} if isinstance(value, dict) else {}
        if children:
            paths.extend(_leaf_paths(children, (*prefix, step)))
        else:
            paths.append((*prefix, step))
    return paths


def _present(obj: Any, path: tuple[str, ...]) -> bool:
    for step in path:
        if step.startswith("[") and step.endswith("]"):
            if not isinstance(obj, list):
                return False
            try:
                keys = json.loads(step[1:-1])
            except ValueError:
                return False
            match = [item for item in obj if isinstance(item, dict) and all(item.get(k) == v for k, v in keys.items())]
            if not match:
                return False
            obj = match[0]
        elif isinstance(obj, dict) and step in obj:
            obj = obj[step]
        else:
            return False
    return True


def _changers(live: dict, field_manager: str, changes: list[dict]) -> set[str]:
    managers = (live.get("metadata") or {}).get("managedFields") or []
    others = {m.get("manager") for m in managers if m.get("manager") != field_manager and not m.get("subresource")}
    return {str(manager) for manager in others if manager} if changes else set()


def _record_drift(policy: RuntimePolicy, result: DriftResult, live: dict | None) -> None:
    rows = RuntimePolicy.objects.filter(
        pk=policy.pk, sync_state__in=LIVE_STATES, applied_revision=policy.applied_revision
    )
    if result.drifted:
        rows.update(sync_state=SyncState.DRIFTED, drift_diff=result.diff)
    else:
        # Remember the live version we have checked, so the next check takes the fast path.
        rv = str(((live or {}).get("metadata") or {}).get("resourceVersion") or policy.applied_resource_version)
        rows.update(sync_state=SyncState.SYNCED, drift_diff="", applied_resource_version=rv)


def runtime_drift_resolve(*, policy: RuntimePolicy, action: str, actor: Any, gateway: kube.Gateway | None = None):
    """Resolve a drift: ``reapply`` queues a forced apply of the applied revision (returns the revision to enqueue
    with ``force=True``); ``adopt`` saves the live object as a new revision and marks it synced (returns None).

    Raises PolicyError for an unknown action or a policy that is not drifted, KubeError when the cluster fails.
    """
    if action not in ("reapply", "adopt"):
        raise PolicyError(f"Unknown action '{action}': use 'reapply' or 'adopt'.")
    if action == "reapply":
        # Re-applying what was applied keeps the confirmation its apply was given (decision D8).
        return runtime_sync_request(policy=policy, confirm_startup_deadlock=policy.sync_startup_deadlock_confirmed)
    gateway = gateway or kube.get_gateway()
    resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    live = gateway.get(resource, name=policy.name)
    if live is None:
        raise PolicyError(f"'{policy.name}' is not on the cluster; there is nothing to adopt. Re-apply it instead.")
    _adopt_into(policy, live, actor=actor)
    return None


def adoptable_manifest(live: dict) -> dict:
    """Return the live object as a policy manifest: server fields and our revision annotation removed."""
    manifest = strip_server_fields(live)
    metadata = manifest.get("metadata") or {}
    metadata.pop("namespace", None)
    annotations = dict(metadata.get("annotations") or {})
    annotations.pop(REVISION_ANNOTATION, None)
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    return manifest


def _adopt_into(policy: RuntimePolicy, live: dict, *, actor: Any) -> RuntimePolicy:
    from .services import policy_update

    manifest = adoptable_manifest(live)
    with transaction.atomic():
        updated = policy_update(
            name=policy.name,
            manifest=manifest,
            expected_version=policy.version,
            author=actor,
            message=f"Adopted from the cluster (resourceVersion {live['metadata'].get('resourceVersion')}).",
            source=RevisionSource.ADOPT,
        )
        _mark_adopted(updated, live)
    return updated


def _mark_adopted(policy: RuntimePolicy, live: dict) -> None:
    metadata = live.get("metadata") or {}
    RuntimePolicy.objects.filter(pk=policy.pk, version=policy.version).update(
        sync_state=SyncState.SYNCED,
        sync_requested_revision=policy.version,
        applied_revision=policy.version,
        applied_resource_version=str(metadata.get("resourceVersion") or ""),
        applied_generation=metadata.get("generation"),
        last_synced_at=timezone.now(),
        last_sync_error="",
        sync_error_fields=[],
        drift_diff="",
    )


def runtimes_adopt(*, actor: Any, gateway: kube.Gateway | None = None) -> AdoptResult:
    """Import every ClusterTrainingRuntime on the cluster as a policy whose history starts at the live object.

    Idempotent: a runtime whose policy already has the same content is reported unchanged; one whose policy
    differs is left alone and reported (resolve it through drift). Invalid runtimes are reported in ``failed``.
    Raises KubeError when the cluster cannot be listed.
    """
    from .services import policy_create

    gateway = gateway or kube.get_gateway()
    resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    result = AdoptResult()
    for live in sorted(gateway.list(resource).items, key=lambda obj: obj["metadata"]["name"]):
        name = live["metadata"]["name"]
        manifest = adoptable_manifest(live)
        existing = RuntimePolicy.objects.filter(name=name).first()
        if existing is not None:
            if semantically_equal(strip_server_fields(existing.manifest), manifest):
                result.unchanged.append(name)
            else:
                result.differing.append(name)
            continue
        try:
            with transaction.atomic():
                policy = policy_create(
                    manifest=manifest,
                    author=actor,
                    message=f"Adopted from the cluster (resourceVersion {live['metadata'].get('resourceVersion')}).",
                    source=RevisionSource.ADOPT,
                )
                _mark_adopted(policy, live)
        except PolicyError as exc:
            result.failed[name] = exc.message
            continue
        result.created.append(name)
    return result


# --------------------------------------------------------------------------------------------------- impact


def runtime_referencing_trainjobs(*, name: str, gateway: kube.Gateway | None = None) -> list[dict]:
    """Return ``[{namespace, name, created}]`` of TrainJobs whose runtimeRef names ClusterTrainingRuntime ``name``.

    Raises KubeError when the cluster cannot be read (KubeNotFound when TrainJobs are not served).
    """
    gateway = gateway or kube.get_gateway()
    resource = gateway.resolve(kube.TRAINJOB)
    found = []
    for job in gateway.list(resource).items:
        ref = (job.get("spec") or {}).get("runtimeRef") or {}
        if ref.get("name") == name and ref.get("kind", KIND) == KIND:
            metadata = job.get("metadata") or {}
            found.append(
                {
                    "namespace": metadata.get("namespace", ""),
                    "name": metadata.get("name", ""),
                    "created": metadata.get("creationTimestamp", ""),
                }
            )
    return sorted(found, key=lambda job: (job["namespace"], job["name"]))


def runtime_sync_impact(*, policy: RuntimePolicy, num_nodes: int | None = None, gateway=None) -> dict:
    """Return what applying the current revision changes: referencing TrainJobs and PodGroups old vs new.

    ``{trainjobs, trainjobs_error, note, num_nodes, old: {pod_groups, error}, new: {...}, yaml_diff}``; "old" is the
    applied revision (or the live object when there is none). Never raises for cluster errors (they are reported).
    """
    from .domain.expansion import ExpansionError, expand

    impact: dict[str, Any] = {
        "note": "Runtimes only affect TrainJobs created after the change; running TrainJobs keep their PodGroups.",
        "trainjobs": [],
        "trainjobs_error": "",
    }
    try:
        impact["trainjobs"] = runtime_referencing_trainjobs(name=policy.name, gateway=gateway)
    except kube.KubeError as exc:
        impact["trainjobs_error"] = exc.message
    old_manifest = None
    if policy.applied_revision:
        old_manifest = (
            PolicyRevision.objects.filter(policy=policy, number=policy.applied_revision)
            .values_list("manifest", flat=True)
            .first()
        )
    new_manifest = policy.manifest
    nodes = num_nodes or int(((new_manifest.get("spec") or {}).get("mlPolicy") or {}).get("numNodes") or 4)
    impact["num_nodes"] = nodes

    def groups(manifest):
        if manifest is None:
            return {"pod_groups": [], "error": "Not applied yet.", "total_pods": 0}
        try:
            expansion = expand(manifest, trainjob_name="example", num_nodes=nodes)
        except ExpansionError as exc:
            return {"pod_groups": [], "error": str(exc), "total_pods": 0}
        return {
            "total_pods": expansion.total_pods,
            "error": "",
            "pod_groups": [
                {
                    "template": group.template_name,
                    "level": group.level,
                    "policy": group.policy,
                    "min_count": group.min_count,
                    "topology_key": group.topology_key,
                    "replicated_jobs": list(group.replicated_jobs),
                    "pod_count": group.pod_count,
                    "kind": group.kind,
                }
                for group in expansion.pod_groups
            ],
        }

    impact["old"] = groups(old_manifest)
    impact["new"] = groups(new_manifest)
    impact["yaml_diff"] = (
        unified_diff(old_manifest, new_manifest, old_label="applied", new_label="current") if old_manifest else ""
    )
    return impact


def runtime_cluster_delete(*, policy: RuntimePolicy, gateway: kube.Gateway | None = None) -> bool:
    """Delete the policy's ClusterTrainingRuntime from the cluster; return False when it was not there.

    Raises KubeError. Callers show :func:`runtime_referencing_trainjobs` as a warning first.
    """
    gateway = gateway or kube.get_gateway()
    resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    return gateway.delete(resource, name=policy.name) is not None


def live_yaml(obj: dict | None) -> str:
    """Return ``obj`` without server fields as YAML ('' for None), for side-by-side views."""
    return dump_yaml(comparable(obj)) if obj else ""
