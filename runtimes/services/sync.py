"""Cluster sync services: apply policies with server-side apply, detect drift, adopt live runtimes.

Everything here runs per (policy, cluster): the state machine lives on ``PolicySync.sync_state``, one row per
policy and cluster (changed only by compare-and-set on the state and the requested revision, never by
read-modify-write)::

    draft/synced/failed/drifted/queued/syncing --request--> queued(rev)
    queued(rev) / syncing(rev) --worker picks it up--> syncing(rev)      (syncing too: a redelivered message)
    syncing(rev) --applied or already equal--> synced     --permanent error--> failed
    synced --live object differs--> drifted --reapply / adopt--> queued / synced

The order of operations in :func:`policy_sync` is chosen so that running it again is the recovery after any
interruption (worker killed, message redelivered, retry): a revision that is already live is detected and not
rewritten; an apply that lost the race to a newer revision is undone by re-requesting the newer one.

Two guards keep an older revision from overwriting a newer one: (1) right before writing, the row must still
request our revision; (2) the apply carries the live object's resourceVersion, so if another apply landed after
we read the object, ours fails with a (transient) conflict instead of overwriting it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from kombu.exceptions import KombuError

from runtimes.choices import ACTIVE_SYNC_STATES, LIVE_SYNC_STATES, ClusterState, RevisionSource, SyncState
from runtimes.domain.constants import IMPACT_DEFAULT_NUM_NODES, MAX_NUM_NODES
from runtimes.domain.diff import semantically_equal, structural_diff, unified_diff
from runtimes.domain.drift import (
    adoptable_manifest,
    changers,
    comparable,
    desired_object,
    foreign_fields,
    foreign_paths,
    is_live,
    live_yaml,
)
from runtimes.domain.expansion import ExpansionError, expand
from runtimes.domain.labels import is_dns1123_subdomain
from runtimes.domain.manifest import KIND
from runtimes.domain.policy import validate_runtime
from runtimes.errors import (
    NotApplicable,
    PolicyError,
    StartupDeadlockUnconfirmed,
    SyncNotQueued,
    SyncRefused,
    UnknownPolicies,
)
from runtimes.models import PolicyRevision, PolicySync, RuntimePolicy, SyncBatch, SyncEvent
from runtimes.services.clusters import (
    action_gateway_for_cluster,
    cluster_by_id,
    clusters_named,
    default_cluster,
    gateway_for_cluster,
    policy_targets,
    resolve_targets,
)
from runtimes.services.sync_batches import sync_batch_create
from runtimes.tasks import policies_bulk_sync_task, policy_sync_task
from trainer_portal import kube
from trainer_portal.cluster.models import Cluster
from trainer_portal.errors import field as field_problem

logger = logging.getLogger(__name__)

ACTIVE_STATES = ACTIVE_SYNC_STATES
LIVE_STATES = LIVE_SYNC_STATES
DRIFT_ACTIONS = ("reapply", "adopt")
MAX_ERROR_LENGTH = 4000


@dataclass
class SyncResult:
    """What one :func:`policy_sync` call did.

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
    cluster_id: int | None = None


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
    cluster: str = ""


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
    from runtimes.services.policies import validation_options

    return [p.as_dict() for p in validate_runtime(policy.manifest, validation_options()).startup_deadlocks]


def _check_applicable(policy: RuntimePolicy, *, confirm_startup_deadlock: bool) -> bool:
    """Return whether applying ``policy`` needs (and got) the startup-deadlock confirmation.

    Raises NotApplicable when the stored manifest keeps errors (from an import or adoption, decision D18) and
    StartupDeadlockUnconfirmed when a gang can never reach minCount and ``confirm_startup_deadlock`` is False.
    """
    from runtimes.services.policies import validation_options

    report = validate_runtime(policy.manifest, validation_options())
    if report.errors:
        raise NotApplicable(policy.name, [p.as_dict() for p in report.errors])
    deadlocks = [p.as_dict() for p in report.startup_deadlocks]
    if deadlocks and not confirm_startup_deadlock:
        raise StartupDeadlockUnconfirmed([policy.name], deadlocks)
    return bool(deadlocks)


def _sync_row(policy_id: int, cluster_id: int) -> PolicySync:
    """Return the sync row of (policy, cluster), creating a draft one; a concurrent creator's row is reused."""
    row = PolicySync.objects.filter(policy_id=policy_id, cluster_id=cluster_id).first()
    if row is not None:
        return row
    try:
        with transaction.atomic():
            return PolicySync.objects.create(policy_id=policy_id, cluster_id=cluster_id)
    except IntegrityError:
        # Another request created it first (unique (policy, cluster)), or the policy was deleted meanwhile.
        row = PolicySync.objects.filter(policy_id=policy_id, cluster_id=cluster_id).first()
        if row is None:
            raise SyncRefused("The policy no longer exists.") from None
        return row


def _request(policy: RuntimePolicy, cluster: Cluster, *, confirmed: bool = False) -> int:
    """Compare-and-set the sync of ``policy`` on ``cluster`` to queued for the policy's current revision, recording
    whether a startup-order deadlock was confirmed; return that revision. Raises SyncRefused."""
    row = _sync_row(policy.pk, cluster.pk)
    for _ in range(5):
        version = RuntimePolicy.objects.filter(pk=policy.pk).values_list("version", flat=True).first()
        current = PolicySync.objects.filter(pk=row.pk).values("sync_state", "sync_requested_revision").first()
        if version is None or current is None:
            raise SyncRefused(f"Policy '{policy.name}' no longer exists.")
        if current["sync_state"] in ACTIVE_STATES and current["sync_requested_revision"] == version:
            # Already on its way; the (possibly duplicate) task enqueued again finds it and takes over.
            return int(version)
        # Compare-and-set on the state, the requested revision and the policy's version: a concurrent edit or sync
        # makes us re-read.
        rows = PolicySync.objects.filter(
            pk=row.pk, sync_state=current["sync_state"], sync_requested_revision=current["sync_requested_revision"],
            policy__version=version,
        )
        updated = rows.update(
            sync_state=SyncState.QUEUED,
            sync_requested_revision=version,
            last_sync_error="",
            sync_error_fields=[],
            sync_startup_deadlock_confirmed=confirmed,
        )
        if updated == 1:
            policy.__dict__.pop("_cluster_syncs", None)
            return int(version)
    raise SyncRefused(f"Policy '{policy.name}' keeps changing; try the sync again.")


def policy_sync_request(
    *, policy: RuntimePolicy, force: bool = False, confirm_startup_deadlock: bool = False,
    clusters: list[str] | None = None,
) -> int:
    """Queue ``policy``'s current revision for syncing to each of ``clusters`` (names; None = the policy's target
    clusters) and return that revision number.

    ``policy_sync_task(policy.id, revision, force, cluster.id)`` is enqueued per cluster once the current
    transaction commits, so the worker never sees an uncommitted row. Asking again for a revision that is already
    queued or syncing on a cluster changes no row (the duplicate task is harmless, and takes over a row whose worker
    died). A policy whose gang never reaches minCount (dependsOn inside one gang, decision D8) needs
    ``confirm_startup_deadlock``, which the sync record keeps (``sync_startup_deadlock_confirmed``). Raises
    PolicyError naming ``clusters`` for unknown clusters or when the policy has no target cluster, NotApplicable
    (errors kept from an import), StartupDeadlockUnconfirmed, and SyncRefused when the policy vanished or keeps
    changing.
    """
    targets = resolve_targets(policy, clusters)
    if not targets:
        message = "the policy has no enabled target cluster; choose one or enable a cluster"
        raise PolicyError(message, code="invalid", fields=[field_problem("clusters", message)])
    confirmed = _check_applicable(policy, confirm_startup_deadlock=confirm_startup_deadlock)
    items = [(policy.pk, _request(policy, cluster, confirmed=confirmed), cluster.pk) for cluster in targets]

    def send() -> None:
        for policy_id, revision, cluster_id in items:
            policy_sync_task.delay(policy_id, revision, force, cluster_id)

    transaction.on_commit(lambda: _enqueue(send, items))
    return items[0][1]


def policies_sync_request(
    *, names: list[str] | None = None, actor: Any = None, confirm_startup_deadlock: bool = False,
    clusters: list[str] | None = None,
) -> SyncBatch:
    """Queue every policy (or those named) for syncing as one batch of (policy, cluster) pairs — each policy to its
    target clusters, or to ``clusters`` when named; return the `SyncBatch` to follow.

    One fan-out task is enqueued on commit. Raises UnknownPolicies naming the unknown ones, PolicyError naming
    ``clusters`` for unknown clusters, NotApplicable for a policy that keeps import errors,
    StartupDeadlockUnconfirmed naming every policy whose gang never reaches minCount unless
    ``confirm_startup_deadlock`` (nothing is queued then), SyncRefused when a policy vanished or keeps changing.
    """
    chosen = clusters_named(clusters) if clusters is not None else None
    with transaction.atomic():
        queryset = RuntimePolicy.objects.all()
        if names is not None:
            # Names no policy can have are unknown without asking the database (PostgreSQL refuses NUL in a query).
            possible = [name for name in names if is_dns1123_subdomain(name)]
            found = set(queryset.filter(name__in=possible).values_list("name", flat=True))
            unknown = sorted(set(names) - found)
            if unknown:
                raise UnknownPolicies(unknown)
            queryset = queryset.filter(name__in=names)
        policies = list(queryset.only("pk", "name", "manifest", "version").prefetch_related("target_clusters"))
        checked = [(p, _applicable_or_deadlocked(p, confirm_startup_deadlock)) for p in policies]
        unconfirmed = [(p.name, problems) for p, (_, problems) in checked if problems]
        if unconfirmed:
            raise StartupDeadlockUnconfirmed(
                [name for name, _ in unconfirmed], [x for _, problems in unconfirmed for x in problems]
            )
        items = [
            (p.pk, _request(p, cluster, confirmed=confirmed), cluster.pk)
            for p, (confirmed, _) in checked
            for cluster in (chosen if chosen is not None else policy_targets(p))
        ]
        batch = sync_batch_create(items=items, actor=actor)
        payload = [[policy_id, revision, cluster_id] for policy_id, revision, cluster_id in items]
        transaction.on_commit(lambda: _enqueue(lambda: policies_bulk_sync_task.delay(payload), items))
    return batch


def _enqueue(send: Callable[[], object], items: list[tuple[int, int, int]]) -> None:
    """Publish sync tasks with ``send``. When the broker refuses (Redis down, broker folder missing), mark the
    ``(policy_id, revision, cluster_id)`` rows still queued for them failed, so none waits for a message that does
    not exist, and raise SyncNotQueued (503)."""
    try:
        send()
    except (KombuError, OSError) as exc:
        message = (f"Could not queue: the task broker refused the message ({exc}). Nothing was sent to the "
                   "cluster; check the broker (CELERY_BROKER_URL) and apply again.")[:MAX_ERROR_LENGTH]
        logger.error("could not queue the sync of %d (policy, cluster) pairs: %s", len(items), exc)
        for policy_id, revision, cluster_id in items:
            PolicySync.objects.filter(
                policy_id=policy_id, cluster_id=cluster_id, sync_requested_revision=revision,
                sync_state=SyncState.QUEUED,
            ).update(sync_state=SyncState.FAILED, last_sync_error=message, sync_error_fields=[])
        raise SyncNotQueued(message) from exc


def _applicable_or_deadlocked(policy: RuntimePolicy, confirm: bool) -> tuple[bool, list[dict[str, Any]]]:
    """Return (confirmed, unconfirmed deadlock problems) for one policy of a bulk request; raises NotApplicable."""
    try:
        return _check_applicable(policy, confirm_startup_deadlock=confirm), []
    except StartupDeadlockUnconfirmed as exc:
        return False, exc.problems


def policy_requeue_current(*, policy_id: int, cluster_id: int | None = None) -> int | None:
    """Queue the current revision of policy ``policy_id`` on cluster ``cluster_id`` (None: the default cluster)
    again, after an apply that lost a race; return it.

    Returns None when the policy or cluster no longer exists, or when the newer revision needs an admin's explicit
    apply (it keeps import errors, or a startup-order deadlock its previous apply did not confirm).
    """
    policy = RuntimePolicy.objects.filter(pk=policy_id).first()
    cluster = Cluster.objects.filter(pk=cluster_id).first() if cluster_id is not None else default_cluster()
    if policy is None or cluster is None:
        return None
    confirmed = PolicySync.objects.filter(policy_id=policy_id, cluster_id=cluster.pk).values_list(
        "sync_startup_deadlock_confirmed", flat=True
    ).first()
    try:
        return policy_sync_request(policy=policy, confirm_startup_deadlock=bool(confirmed), clusters=[cluster.name])
    except (NotApplicable, StartupDeadlockUnconfirmed, PolicyError):
        return None


def policies_unfinished() -> list[tuple[int, int, int]]:
    """Return ``[(policy_id, requested_revision, cluster_id)]`` of syncs stuck in queued/syncing (for
    re-enqueueing)."""
    return list(
        PolicySync.objects.filter(sync_state__in=ACTIVE_STATES, sync_requested_revision__isnull=False)
        .order_by("policy_id", "cluster_id")
        .values_list("policy_id", "sync_requested_revision", "cluster_id")
    )


# --------------------------------------------------------------------------------------------------- the sync




def policy_sync(
    *, policy_id: int, revision: int, force: bool = False, gateway: kube.Gateway | None = None, now=None,
    cluster_id: int | None = None,
) -> SyncResult:
    """Bring the object of policy ``policy_id`` on cluster ``cluster_id`` (None: the default cluster) to
    ``revision`` and record the outcome on their `PolicySync` row.

    Steps:
    1. Compare-and-set queued/syncing(revision) → syncing; if no row matches, someone else owns it: skip.
    2. Read the live object; if it already reflects this revision and our values, record synced (no write).
    3. Server-side dry run: validation errors are recorded field by field as a permanent failure.
    4. Check that the row still requests our revision (else: superseded, nothing written).
    5. Apply, with the live resourceVersion as a precondition; record synced with rv, generation and time.

    Raises a transient :class:`kube.KubeError` (the caller retries). Permanent errors are recorded, not raised.
    """
    now = now or timezone.now()
    cluster = Cluster.objects.filter(pk=cluster_id).first() if cluster_id is not None else default_cluster()
    if cluster is None:
        return SyncResult("skipped", policy_id, revision, message="The cluster no longer exists.",
                          cluster_id=cluster_id)
    key = _Key(policy_id, cluster.pk)
    rows = key.rows().filter(sync_requested_revision=revision, sync_state__in=ACTIVE_STATES)
    if rows.update(sync_state=SyncState.SYNCING) != 1:
        return _not_ours(key, revision)
    try:
        manifest = PolicyRevision.objects.get(policy_id=policy_id, number=revision).manifest
    except PolicyRevision.DoesNotExist:
        message = f"Revision {revision} no longer exists."
        _record_failure(key, revision, message, [])
        return SyncResult("failed", policy_id, revision, message=message, cluster_id=key.cluster_id)
    desired = desired_object(manifest, revision=revision)
    name = desired["metadata"]["name"]
    try:
        gateway = gateway or gateway_for_cluster(cluster)
        resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
        live = gateway.get(resource, name=name)
        if live is not None and not force and is_live(live, desired, gateway.settings.field_manager):
            return _record_synced(key, revision, live, now, outcome="unchanged")
        gateway.apply(resource, body=desired, dry_run=True, force=force)
        if not _still_requested(key, revision):
            return SyncResult("superseded", policy_id, revision, message="A newer revision was requested.",
                              cluster_id=key.cluster_id)
        body = dict(desired)
        if live is not None:
            # Optimistic precondition: if anything was written since we read `live`, the server refuses this apply.
            body["metadata"] = {**desired["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]}
        applied = gateway.apply(resource, body=body, force=force)
        if force:
            applied = _remove_foreign_fields(gateway, resource, applied, desired)
    except kube.KubeError as exc:
        if not exc.permanent:
            _record_transient(key, revision, exc)
            raise
        _record_failure(key, revision, describe_error(exc), exc.field_causes())
        return SyncResult("failed", policy_id, revision, message=exc.message, cluster_id=key.cluster_id)
    result = _record_synced(key, revision, applied, now, outcome="applied")
    if result.outcome == "superseded":
        # We wrote `revision` while a newer one was requested; if its run finished first, we overwrote it.
        result.requeue = True
    return result


def policy_sync_give_up(*, policy_id: int, revision: int, error: str, cluster_id: int | None = None) -> bool:
    """Record that retries of ``revision`` on cluster ``cluster_id`` (None: default) are exhausted (state failed).
    Return True when the row was changed."""
    key = _Key(policy_id, cluster_by_id(cluster_id).pk)
    return _record_failure(key, revision, f"Gave up after repeated transient errors: {error}", [])


@dataclass(frozen=True)
class _Key:
    """The (policy, cluster) pair whose `PolicySync` row a sync step reads and writes."""

    policy_id: int
    cluster_id: int

    def rows(self):
        return PolicySync.objects.filter(policy_id=self.policy_id, cluster_id=self.cluster_id)






def describe_error(exc: kube.KubeError) -> str:
    """Return the message stored for ``exc``: what the cluster said (and who owns conflicting fields), capped."""
    return exc.describe()[:MAX_ERROR_LENGTH]


def _not_ours(key: _Key, revision: int) -> SyncResult:
    row = key.rows().values("sync_state", "sync_requested_revision").first()
    if row is None:
        return SyncResult("skipped", key.policy_id, revision, message="The policy no longer exists.",
                          cluster_id=key.cluster_id)
    if (row["sync_requested_revision"] or 0) > revision:
        return SyncResult("superseded", key.policy_id, revision, message="A newer revision was requested.",
                          cluster_id=key.cluster_id)
    return SyncResult("skipped", key.policy_id, revision, message=f"Nothing to do (state {row['sync_state']}).",
                      cluster_id=key.cluster_id)


def _still_requested(key: _Key, revision: int) -> bool:
    return key.rows().filter(sync_requested_revision=revision, sync_state=SyncState.SYNCING).exists()


def _record_synced(key: _Key, revision: int, obj: dict, now, *, outcome: str) -> SyncResult:
    metadata = obj.get("metadata") or {}
    resource_version = str(metadata.get("resourceVersion") or "")
    rows = key.rows().filter(sync_requested_revision=revision, sync_state=SyncState.SYNCING)
    updated = rows.update(
        sync_state=SyncState.SYNCED,
        applied_revision=revision,
        applied_resource_version=resource_version,
        applied_generation=metadata.get("generation"),
        last_synced_at=now,
        last_sync_error="",
        sync_error_fields=[],
        drift_diff="",
        cluster_state=ClusterState.MATCHES,
    )
    if updated != 1:
        return SyncResult("superseded", key.policy_id, revision, resource_version, "A newer revision was requested.",
                          cluster_id=key.cluster_id)
    return SyncResult(outcome, key.policy_id, revision, resource_version, cluster_id=key.cluster_id)


def _record_failure(key: _Key, revision: int, message: str, fields: list[dict]) -> bool:
    rows = key.rows().filter(sync_requested_revision=revision, sync_state=SyncState.SYNCING)
    updated = rows.update(
        sync_state=SyncState.FAILED, last_sync_error=message[:MAX_ERROR_LENGTH], sync_error_fields=fields
    )
    if updated == 1:  # the outbox of notifications: one event per failed apply
        SyncEvent.objects.create(policy_name=_policy_name(key.policy_id), cluster_id=key.cluster_id,
                                 kind=SyncEvent.Kind.SYNC_FAILED, revision=revision,
                                 message=message[:MAX_ERROR_LENGTH])
    return updated == 1


def _policy_name(policy_id: int) -> str:
    return RuntimePolicy.objects.filter(pk=policy_id).values_list("name", flat=True).first() or str(policy_id)


def _record_transient(key: _Key, revision: int, exc: kube.KubeError) -> None:
    # The state stays `syncing`; the message tells the user why it takes long (the task retries with backoff).
    key.rows().filter(sync_requested_revision=revision, sync_state=SyncState.SYNCING).update(
        last_sync_error=f"Retrying: {exc.message}"[:MAX_ERROR_LENGTH]
    )


# --------------------------------------------------------------------------------------------------- drift


def policy_drift_check(
    *, policy_id: int, live: dict | object | None = ..., gateway: kube.Gateway | None = None,
    cluster_id: int | None = None,
) -> DriftResult | None:
    """Compare policy ``policy_id``'s applied revision on cluster ``cluster_id`` (None: the default cluster) with
    the live object there; record drifted/synced on their row; return the result.

    ``live`` may be passed when the caller already listed the objects (None = absent on the cluster). Returns None
    when the policy is not synced or drifted on that cluster. Raises KubeError when the cluster cannot be read.
    """
    cluster = cluster_by_id(cluster_id) if cluster_id is None else Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return None
    row = (
        PolicySync.objects.select_related("policy")
        .filter(policy_id=policy_id, cluster_id=cluster.pk, sync_state__in=LIVE_STATES)
        .first()
    )
    if row is None or row.applied_revision is None:
        return None
    gateway = gateway or action_gateway_for_cluster(cluster)
    resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    if live is ...:
        live = gateway.get(resource, name=row.policy.name)
    result = compute_drift(row, live, gateway=gateway, resource=resource)
    result.cluster = cluster.name
    _record_drift(row, result, live)
    return result


def policy_drift_check_clusters(
    *, policy: RuntimePolicy, clusters: list[str] | None = None
) -> list[tuple[Cluster, DriftResult | None]]:
    """Check ``policy`` for drift on each of ``clusters`` (names; None = its target clusters); return
    ``[(cluster, result or None when it is not live there)]``.

    Raises PolicyError naming ``clusters`` for unknown names, KubeError when a cluster cannot be read.
    """
    found = []
    for cluster in resolve_targets(policy, clusters):
        found.append((cluster, policy_drift_check(policy_id=policy.pk, cluster_id=cluster.pk)))
    policy.__dict__.pop("_cluster_syncs", None)
    return found


def policies_drift_check_all(
    *, gateway: kube.Gateway | None = None, cluster_id: int | None = None
) -> list[DriftResult]:
    """Check every synced/drifted policy on cluster ``cluster_id`` (None: the default cluster) against one list of
    that cluster's runtimes; return the drifted ones. Raises KubeError when the cluster cannot be listed."""
    cluster = cluster_by_id(cluster_id)
    gateway = gateway or gateway_for_cluster(cluster)
    resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    live_by_name = {obj["metadata"]["name"]: obj for obj in gateway.list(resource).items}
    drifted = []
    rows = PolicySync.objects.filter(cluster_id=cluster.pk, sync_state__in=LIVE_STATES)
    for policy_id, name in rows.values_list("policy_id", "policy__name"):
        try:
            result = policy_drift_check(
                policy_id=policy_id, live=live_by_name.get(name), gateway=gateway, cluster_id=cluster.pk
            )
        except kube.KubeError as exc:
            if not exc.permanent:
                raise
            logger.warning("drift check of %s on %s failed: %s", name, cluster.name, exc.message)
            continue
        if result is not None and result.drifted:
            drifted.append(result)
    return drifted


def policies_drift_check_every_cluster() -> list[DriftResult]:
    """Run :func:`policies_drift_check_all` on every enabled cluster; return the drifted (policy, cluster) results.

    A cluster that cannot be read is logged and skipped (the others are still checked); raises the last transient
    KubeError after checking the rest, so the caller retries.
    """
    drifted: list[DriftResult] = []
    failure: kube.KubeError | None = None
    for cluster in Cluster.objects.filter(enabled=True):
        try:
            drifted.extend(policies_drift_check_all(cluster_id=cluster.pk))
        except kube.KubeError as exc:
            logger.warning("drift check on cluster %s failed: %s", cluster.name, exc.message)
            if not exc.permanent:
                failure = exc
    if failure is not None:
        raise failure
    return drifted


def policies_drift_check_observed(
    *, live_by_name: Mapping[str, dict | None], names: Iterable[str] | None = None, gateway: kube.Gateway | None = None,
    cluster_id: int | None = None,
) -> tuple[list[DriftResult], list[str]]:
    """Check applied policies on cluster ``cluster_id`` (None: the default cluster) against the live objects a watch
    of that cluster observed; record each result; return (results, names whose check failed and should be retried).

    ``live_by_name`` maps a runtime's name to its last observed object; ``names`` limits the check to those policies
    (None: every applied policy). An observed object that is the recorded one takes the fast path (no cluster
    call); any other change (or a deletion) is read again and, if it differs, costs one dry-run apply.
    """
    cluster = cluster_by_id(cluster_id)
    gateway = gateway or gateway_for_cluster(cluster)
    rows = PolicySync.objects.filter(cluster_id=cluster.pk, sync_state__in=LIVE_SYNC_STATES)
    if names is not None:
        rows = rows.filter(policy__name__in=list(names))
    results, retry = [], []
    for policy_id, name, applied_rv in rows.values_list("policy_id", "policy__name", "applied_resource_version"):
        observed = live_by_name.get(name)
        observed_rv = ((observed or {}).get("metadata") or {}).get("resourceVersion")
        # An observation is trusted only when it is what was last recorded; otherwise it may be older than the
        # apply that was recorded meanwhile (a false drift), so the check reads the object itself.
        live = observed if observed is not None and observed_rv == applied_rv else ...
        try:
            result = policy_drift_check(policy_id=policy_id, live=live, gateway=gateway, cluster_id=cluster.pk)
        except kube.KubeError as exc:
            logger.warning("drift check of %s on %s failed: %s", name, cluster.name, exc.message)
            retry.append(name)
            continue
        if result is not None:
            results.append(result)
    return results, retry


def compute_drift(row: PolicySync, live: dict | None, *, gateway: kube.Gateway, resource) -> DriftResult:
    """Return how ``live`` differs from what applying the applied revision of sync row ``row`` would produce.

    Fast path: the live resourceVersion is the one we recorded → no drift. Otherwise the applied revision is
    dry-run applied with force (so server defaults appear on both sides) and compared with ``live``; fields that
    other field managers own outside our manifest count as drift too.
    """
    if live is None:
        # Nothing to compare: no change list, no diff (the page says "missing" and offers a re-apply).
        return DriftResult(row.policy_id, row.policy.name, True, missing=True)
    metadata = live.get("metadata") or {}
    if row.applied_resource_version and metadata.get("resourceVersion") == row.applied_resource_version:
        return DriftResult(row.policy_id, row.policy.name, False)
    manifest = PolicyRevision.objects.get(policy_id=row.policy_id, number=row.applied_revision).manifest
    desired = desired_object(manifest, revision=row.applied_revision)
    ours = gateway.apply(resource, body=desired, dry_run=True, force=True)
    ours_clean, live_clean = comparable(ours), comparable(live)
    field_manager = gateway.settings.field_manager
    foreign = foreign_fields(metadata.get("managedFields") or [], field_manager, desired)
    if semantically_equal(ours_clean, live_clean) and not foreign:
        return DriftResult(row.policy_id, row.policy.name, False)
    changes = [
        {"path": c.path, "op": c.op, "ours": c.old, "live": c.new} for c in structural_diff(ours_clean, live_clean)
    ]
    managers = sorted({manager for manager, _ in foreign} | changers(live, field_manager, changes))
    for manager, path in foreign:
        if not any(change["path"] == path for change in changes):
            changes.append({"path": path, "op": "added", "ours": None, "live": f"(owned by {manager})"})
    diff = unified_diff(ours_clean, live_clean, old_label="portal (applied revision)", new_label="cluster (live)")
    return DriftResult(row.policy_id, row.policy.name, True, diff=diff, changes=changes, managers=managers)






def _remove_foreign_fields(gateway: kube.Gateway, resource, applied: dict, desired: dict) -> dict:
    """Delete the map fields other managers added outside our manifest (a forced re-apply keeps them otherwise).

    Fields inside list items are left alone (a merge patch would replace the whole list); drift shows them.
    """
    managed = (applied.get("metadata") or {}).get("managedFields") or []
    paths = [path for _, path in foreign_paths(managed, gateway.settings.field_manager, desired)]
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










def _record_drift(row: PolicySync, result: DriftResult, live: dict | None) -> None:
    rows = PolicySync.objects.filter(pk=row.pk, sync_state__in=LIVE_STATES, applied_revision=row.applied_revision)
    if result.drifted:
        state = ClusterState.MISSING if result.missing else ClusterState.DRIFTED
        newly = rows.exclude(sync_state=SyncState.DRIFTED).update(sync_state=SyncState.DRIFTED,
                                                                  drift_diff=result.diff, cluster_state=state)
        if newly:  # the outbox of notifications: one event when a policy starts drifting, not per check
            SyncEvent.objects.create(policy_name=_policy_name(row.policy_id), cluster_id=row.cluster_id,
                                     kind=SyncEvent.Kind.DRIFT, revision=row.applied_revision,
                                     message=result.diff[:MAX_ERROR_LENGTH])
        else:
            rows.update(sync_state=SyncState.DRIFTED, drift_diff=result.diff, cluster_state=state)
    else:
        # Remember the live version we have checked, so the next check takes the fast path.
        rv = str(((live or {}).get("metadata") or {}).get("resourceVersion") or row.applied_resource_version)
        rows.update(
            sync_state=SyncState.SYNCED, drift_diff="", applied_resource_version=rv, cluster_state=ClusterState.MATCHES
        )


def _drifted_clusters(policy: RuntimePolicy, clusters: list[str] | None) -> list[Cluster]:
    """Return the clusters (named, or all targets) on which ``policy`` is drifted."""
    wanted = resolve_targets(policy, clusters)
    drifted = set(
        PolicySync.objects.filter(
            policy=policy, cluster__in=wanted, sync_state=SyncState.DRIFTED
        ).values_list("cluster_id", flat=True)
    )
    return [cluster for cluster in wanted if cluster.pk in drifted]


def policy_drift_resolve(
    *, policy: RuntimePolicy, action: str, actor: Any, gateway: kube.Gateway | None = None,
    clusters: list[str] | None = None,
):
    """Resolve a drift on ``clusters`` (names; None = every target cluster where the policy is drifted):
    ``reapply`` queues a forced apply of the current revision there (returns that revision; the tasks are enqueued
    on commit); ``adopt`` saves one cluster's live object as a new revision and marks it synced there (returns
    None; the other clusters then hold an older revision and show out of sync).

    Raises PolicyError for an unknown action, for unknown ``clusters`` and for an adopt from several drifted
    clusters (name one in ``clusters``); SyncRefused for a policy that is not drifted on them or not on the
    cluster; KubeError when the cluster fails.
    """
    if action not in DRIFT_ACTIONS:
        raise PolicyError(f"Unknown action '{action}': use 'reapply' or 'adopt'.")
    drifted = _drifted_clusters(policy, clusters)
    if not drifted:
        where = f" on {', '.join(clusters)}" if clusters else ""
        raise SyncRefused(f"'{policy.name}' is {policy.sync_state}, not drifted{where}; run a drift check first.")
    if action == "reapply":
        # Re-applying keeps the confirmation the last apply was given (decision D8).
        return policy_sync_request(
            policy=policy, force=True, confirm_startup_deadlock=policy.sync_startup_deadlock_confirmed,
            clusters=[cluster.name for cluster in drifted],
        )
    if len(drifted) > 1:
        message = (f"'{policy.name}' is drifted on {', '.join(c.name for c in drifted)}; name the one cluster whose "
                   "live object to adopt")
        raise PolicyError(message, code="invalid", fields=[field_problem("clusters", message)])
    cluster = drifted[0]
    gateway = gateway or action_gateway_for_cluster(cluster)
    resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    live = gateway.get(resource, name=policy.name)
    if live is None:
        raise SyncRefused(
            f"'{policy.name}' is not on cluster {cluster.name}; there is nothing to adopt. Re-apply it instead."
        )
    _adopt_into(policy, live, actor=actor, cluster=cluster)
    return None


def _adopt_into(policy: RuntimePolicy, live: dict, *, actor: Any, cluster: Cluster) -> RuntimePolicy:
    from runtimes.services.policies import policy_update

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
        _mark_adopted(updated, live, cluster)
    return updated


def _mark_adopted(policy: RuntimePolicy, live: dict, cluster: Cluster) -> None:
    metadata = live.get("metadata") or {}
    _sync_row(policy.pk, cluster.pk)
    PolicySync.objects.filter(policy_id=policy.pk, cluster_id=cluster.pk, policy__version=policy.version).update(
        sync_state=SyncState.SYNCED,
        sync_requested_revision=policy.version,
        applied_revision=policy.version,
        applied_resource_version=str(metadata.get("resourceVersion") or ""),
        applied_generation=metadata.get("generation"),
        last_synced_at=timezone.now(),
        last_sync_error="",
        sync_error_fields=[],
        drift_diff="",
        cluster_state=ClusterState.MATCHES,
    )


def _same_as_live(manifest: dict, revision: int, live: dict, *, gateway: kube.Gateway, resource) -> bool:
    """Return True when applying ``manifest`` would leave ``live`` as it is: the comparison a drift check makes
    (server defaults on both sides through a dry-run apply, our bookkeeping ignored, no fields of other managers)."""
    desired = desired_object(manifest, revision=revision)
    ours = gateway.apply(resource, body=desired, dry_run=True, force=True)
    managed = (live.get("metadata") or {}).get("managedFields") or []
    foreign = foreign_fields(managed, gateway.settings.field_manager, desired)
    return semantically_equal(comparable(ours), comparable(live)) and not foreign


def policies_adopt(*, actor: Any, gateway: kube.Gateway | None = None, cluster: Cluster | None = None) -> AdoptResult:
    """Import every ClusterTrainingRuntime on ``cluster`` (None: the default cluster) as a policy whose history
    starts at the live object (synced on that cluster).

    Idempotent: a runtime whose policy already has the same content is reported unchanged; one whose policy
    differs is left alone and reported (resolve it through drift). Invalid runtimes are reported in ``failed``.
    Raises KubeError when the cluster cannot be listed.
    """
    from runtimes.services.policies import policy_create

    cluster = cluster or default_cluster()
    gateway = gateway or action_gateway_for_cluster(cluster)
    resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    result = AdoptResult()
    for live in sorted(gateway.list(resource).items, key=lambda obj: obj["metadata"]["name"]):
        name = live["metadata"]["name"]
        manifest = adoptable_manifest(live)
        existing = RuntimePolicy.objects.filter(name=name).first()
        if existing is not None:
            # Judged as a drift check judges it, so CRD defaults the server filled in are no difference.
            if _same_as_live(existing.manifest, existing.version, live, gateway=gateway, resource=resource):
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
                _mark_adopted(policy, live, cluster)
        except PolicyError as exc:
            result.failed[name] = exc.message
            continue
        result.created.append(name)
    return result


# --------------------------------------------------------------------------------------------------- impact


def runtime_referencing_trainjobs(
    *, name: str, gateway: kube.Gateway | None = None, cluster: Cluster | None = None
) -> list[dict]:
    """Return ``[{namespace, name, created, state, cluster}]`` of the TrainJobs on ``cluster`` (None: the default
    cluster) whose runtimeRef names ClusterTrainingRuntime ``name``; ``state`` is the TrainJob's latest true
    condition (Complete, Failed, Suspended…), else "Pending".

    Raises KubeError when the cluster cannot be read (KubeNotFound when TrainJobs are not served).
    """
    cluster = cluster or default_cluster()
    gateway = gateway or action_gateway_for_cluster(cluster)
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
                    "state": _trainjob_state(job),
                    "cluster": cluster.name,
                }
            )
    return sorted(found, key=lambda job: (job["namespace"], job["name"]))


def _trainjob_state(job: dict) -> str:
    conditions = [c for c in ((job.get("status") or {}).get("conditions") or []) if isinstance(c, dict)]
    true = [c for c in conditions if c.get("status") == "True" and c.get("type")]
    if not true:
        return "Pending"
    return str(max(true, key=lambda c: str(c.get("lastTransitionTime") or ""))["type"])


def impact_num_nodes(raw: str | None) -> int | None:
    """Return the ``numNodes`` asked for in an impact request (None when not given).

    Raises PolicyError naming ``numNodes`` unless it is a whole number from 1 to MAX_NUM_NODES.
    """
    if not raw:
        return None
    message = f"must be a whole number from 1 to {MAX_NUM_NODES}"
    try:
        num_nodes = int(raw)
    except ValueError:
        num_nodes = 0
    if not 1 <= num_nodes <= MAX_NUM_NODES:
        raise PolicyError(message, code="invalid", fields=[field_problem("numNodes", message)])
    return num_nodes


def policy_sync_impact(*, policy: RuntimePolicy, num_nodes: int | None = None, gateway=None) -> dict:
    """Return what applying the current revision changes: referencing TrainJobs and PodGroups old vs new.

    ``{trainjobs, trainjobs_error, note, num_nodes, old: {pod_groups, error}, new: {...}, yaml_diff}``; "old" is the
    applied revision on every target cluster (the oldest one applied), TrainJobs come from every target cluster.
    Never raises for cluster errors (they are reported).
    """
    impact: dict[str, Any] = {
        "note": "Runtimes only affect TrainJobs created after the change; running TrainJobs keep their PodGroups.",
        "trainjobs": [],
        "trainjobs_error": "",
    }
    errors = []
    for cluster in ([default_cluster()] if gateway is not None else policy_targets(policy)):
        try:
            impact["trainjobs"] += runtime_referencing_trainjobs(name=policy.name, gateway=gateway, cluster=cluster)
        except kube.KubeError as exc:
            errors.append(exc.message if gateway is not None else f"{cluster.name}: {exc.message}")
    impact["trainjobs_error"] = "\n".join(errors)
    old_manifest = None
    if policy.applied_revision:
        old_manifest = (
            PolicyRevision.objects.filter(policy=policy, number=policy.applied_revision)
            .values_list("manifest", flat=True)
            .first()
        )
    new_manifest = policy.manifest
    manifest_nodes = ((new_manifest.get("spec") or {}).get("mlPolicy") or {}).get("numNodes")
    nodes = num_nodes or int(manifest_nodes or IMPACT_DEFAULT_NUM_NODES)
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


def policy_cluster_delete(
    *, policy: RuntimePolicy, gateway: kube.Gateway | None = None, clusters: list[str] | None = None
) -> bool:
    """Delete the policy's ClusterTrainingRuntime from ``clusters`` (names; None = every cluster the policy has a
    sync row on) and mark the policy a draft there again.

    Returns False when the runtime was on none of them. Each cluster's sync row is reset by compare-and-set on the
    state and requested revision read before its delete: a sync requested meanwhile keeps its row (it will
    re-create the runtime). Raises PolicyError naming ``clusters`` for unknown names, KubeError when a cluster
    refuses (rows of clusters not reached yet are unchanged). Callers show :func:`runtime_referencing_trainjobs`
    as a warning first.
    """
    if clusters is not None:
        targets = clusters_named(clusters)
    else:
        ids = PolicySync.objects.filter(policy=policy).values_list("cluster_id", flat=True)
        targets = list(Cluster.objects.filter(pk__in=list(ids))) or [default_cluster()]
    deleted = False
    for cluster in targets:
        key = _Key(policy.pk, cluster.pk)
        before = key.rows().values("sync_state", "sync_requested_revision").first()
        gw = gateway or action_gateway_for_cluster(cluster)
        resource = gw.resolve(kube.CLUSTER_TRAINING_RUNTIME)
        deleted = (gw.delete(resource, name=policy.name) is not None) or deleted
        if before is not None:
            key.rows().filter(
                sync_state=before["sync_state"], sync_requested_revision=before["sync_requested_revision"]
            ).update(
                sync_state=SyncState.DRAFT,
                applied_revision=None,
                applied_resource_version="",
                applied_generation=None,
                drift_diff="",
                cluster_state=ClusterState.NOT_APPLIED,
            )
    policy.__dict__.pop("_cluster_syncs", None)
    return deleted


def policy_drift_view_data(
    *, policy: RuntimePolicy, gateway: kube.Gateway | None = None, cluster: Cluster | None = None
) -> dict[str, Any]:
    """Return what the drift page shows side by side for ``cluster`` (None: the first target cluster where the
    policy is drifted, else the default cluster), changing nothing (no check, no dry-run apply, no row).

    ``{result, live, ours, error, cluster, row}``: ``result`` None (a check is an explicit POST,
    `policy_drift_check`), the live object and that cluster's applied revision as YAML, the cluster's message when
    it could not be read, and that cluster's ``{sync_state, cluster_state, drift_diff, applied_revision}``.
    """
    if cluster is None:
        drifted = _drifted_clusters(policy, None)
        cluster = drifted[0] if drifted else default_cluster()
    row = PolicySync.objects.filter(policy=policy, cluster=cluster).values(
        "sync_state", "cluster_state", "drift_diff", "applied_revision"
    ).first() or {"sync_state": SyncState.DRAFT, "cluster_state": ClusterState.NOT_APPLIED, "drift_diff": "",
                  "applied_revision": None}
    data: dict[str, Any] = {"result": None, "live": "", "ours": "", "error": "", "cluster": cluster, "row": row}
    applied = row["applied_revision"]
    try:
        gateway = gateway or action_gateway_for_cluster(cluster)
        resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
        data["live"] = live_yaml(gateway.get(resource, name=policy.name))
        if applied:
            manifest = PolicyRevision.objects.get(policy=policy, number=applied).manifest
            data["ours"] = live_yaml(desired_object(manifest, revision=applied))
    except kube.KubeError as exc:
        data["error"] = exc.message
    return data
