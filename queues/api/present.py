"""Plain dicts of the read model in the API's shape (shared by the API and the pages' templates)."""

from __future__ import annotations

from ..models import ClusterQueue, LocalQueue, QueuedWorkload


def freshness(cluster, fresh) -> dict:
    return {"cluster": cluster.name, "asOf": fresh.as_of, "stale": fresh.stale, "staleReason": fresh.why,
            "kueueServed": fresh.kueue_served, "positionSource": fresh.position_source}


def cluster_queue(queue: ClusterQueue) -> dict:
    return {"name": queue.name, "cohort": queue.cohort, "queueingStrategy": queue.queueing_strategy,
            "fairSharingWeight": queue.fair_sharing_weight, "weightedShare": queue.weighted_share,
            "active": queue.active, "pending": queue.pending, "reserving": queue.reserving,
            "admitted": queue.admitted, "usage": list(queue.usage)}


def local_queue(queue: LocalQueue) -> dict:
    return {"namespace": queue.namespace, "name": queue.name, "clusterQueue": queue.cluster_queue,
            "pending": queue.pending, "reserving": queue.reserving, "admitted": queue.admitted,
            "usage": list(queue.usage)}


def _one_based(value: int | None) -> int | None:
    return None if value is None else value + 1


def workload(row: QueuedWorkload) -> dict:
    return {"namespace": row.namespace, "name": row.name, "localQueue": row.local_queue,
            "clusterQueue": row.cluster_queue, "state": row.state, "priority": row.priority,
            "positionInClusterQueue": _one_based(row.position_in_cluster_queue),
            "positionInLocalQueue": _one_based(row.position_in_local_queue), "reason": row.reason,
            "message": row.message,
            "job": {"kind": row.job_kind, "name": row.job_name, "uid": row.job_uid} if row.job_name else None,
            "requests": dict(row.requests)}
