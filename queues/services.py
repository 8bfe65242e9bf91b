"""Writes of the queue read model (only the queue watcher calls these, only while it holds the cluster's Lease).

Rows are upserted by their natural key (``bulk_create(update_conflicts=True)``, one statement per table and batch)
and deleted when the cluster no longer has them; the caller hands over only what changed since its last write, so a
flush after one admission writes the few dozen rows whose position moved, not the whole queue.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .models import ClusterQueue, Cohort, LocalQueue, QueuedWorkload, QueueWatchState, ResourceFlavor

BATCH = 1000
# (model, natural key fields, fields written)
TABLES: dict[str, tuple[type, tuple[str, ...], tuple[str, ...]]] = {
    "flavors": (ResourceFlavor, ("name",), ("node_labels",)),
    "cohorts": (Cohort, ("name",), ("has_object",)),
    "clusterqueues": (ClusterQueue, ("name",), (
        "cohort", "queueing_strategy", "fair_sharing_weight", "weighted_share", "usage", "preemption", "conditions",
        "pending", "reserving", "admitted")),
    "localqueues": (LocalQueue, ("namespace", "name"), (
        "cluster_queue", "usage", "conditions", "pending", "reserving", "admitted")),
    "workloads": (QueuedWorkload, ("namespace", "name"), (
        "uid", "local_queue", "cluster_queue", "state", "priority", "queued_at", "position_in_cluster_queue",
        "position_in_local_queue", "reason", "message", "job_kind", "job_name", "job_uid", "requests")),
}

Rows = Mapping[tuple, dict]


def apply_changes(cluster_id: int, changes: Mapping[str, tuple[Rows, Iterable[tuple]]], *, full: bool) -> int:
    """Write ``changes`` (per table: rows to upsert keyed by natural key, and keys to delete) for one cluster in one
    transaction; with ``full`` every row of the cluster not in the upserts is deleted first. Returns the number of
    rows written or deleted. Raises DatabaseError when the database refuses (nothing is written then)."""
    written = 0
    with transaction.atomic():
        for table, (upserts, deletes) in changes.items():
            model, key_fields, fields = TABLES[table]
            if full:
                keep = set(upserts)
                stale = [k for k in model.objects.filter(cluster_id=cluster_id).values_list(*key_fields)
                         if tuple(k) not in keep]
                written += _delete(model, cluster_id, key_fields, stale)
            else:
                written += _delete(model, cluster_id, key_fields, list(deletes))
            objects = [model(cluster_id=cluster_id, **dict(zip(key_fields, key, strict=True)), **values)
                       for key, values in upserts.items()]
            for start in range(0, len(objects), BATCH):
                model.objects.bulk_create(objects[start:start + BATCH], update_conflicts=True,
                                          unique_fields=["cluster", *key_fields], update_fields=list(fields))
            written += len(objects)
        if written:
            QueueWatchState.objects.get_or_create(cluster_id=cluster_id)
            QueueWatchState.objects.filter(cluster_id=cluster_id).update(change_seq=F("change_seq") + 1)
    return written


def _delete(model, cluster_id: int, key_fields: tuple[str, ...], keys: list[tuple]) -> int:
    if not keys:
        return 0
    deleted = 0
    if len(key_fields) == 1:
        names = [k[0] for k in keys]
        for start in range(0, len(names), BATCH):
            deleted += model.objects.filter(cluster_id=cluster_id, name__in=names[start:start + BATCH]).delete()[0]
        return deleted
    by_namespace: dict[str, list[str]] = defaultdict(list)
    for namespace, name in keys:
        by_namespace[namespace].append(name)
    for namespace, names in by_namespace.items():
        for start in range(0, len(names), BATCH):
            deleted += model.objects.filter(cluster_id=cluster_id, namespace=namespace,
                                            name__in=names[start:start + BATCH]).delete()[0]
    return deleted


def record_state(cluster_id: int, *, served: bool, synced: bool, positions: tuple[str, str] | None,
                 error: str, now: dt.datetime | None = None) -> None:
    """Record the watcher's health: whether Kueue is served, the last sync and (when read) the position source and
    its error. Returns nothing. Raises DatabaseError."""
    now = now or timezone.now()
    values: dict = {"kueue_served": served, "heartbeat_at": now, "last_error": error[:2000]}
    if synced:
        values["synced_at"] = now
    if positions is not None:
        values["position_source"], values["positions_error"] = positions[0], positions[1][:2000]
        values["positions_at"] = now
    state, created = QueueWatchState.objects.get_or_create(cluster_id=cluster_id, defaults=values)
    if not created:
        QueueWatchState.objects.filter(pk=state.pk).update(**values)
