"""Reads of the cluster registry: which clusters the portal manages, the default one, a cluster's health.

Pages and API answer from these (database only: nothing here reaches a cluster).
"""

from __future__ import annotations

from typing import Any

from .models import Cluster


class ClusterNotFound(LookupError):
    """No cluster by that name."""


def cluster_list() -> list[Cluster]:
    """Return every cluster, the default first, then by name."""
    return list(Cluster.objects.order_by("-is_default", "name"))


def default_cluster() -> Cluster | None:
    """Return the default cluster (None only in a database without clusters, which the migrations never leave)."""
    return Cluster.objects.filter(is_default=True).first()


def cluster_get(name: str) -> Cluster:
    """Return the cluster called ``name``. Raises ClusterNotFound."""
    cluster = Cluster.objects.filter(name=name).first() if name else None
    if cluster is None:
        raise ClusterNotFound(f"there is no cluster {name!r}")
    return cluster


def selected_cluster(name: str | None) -> Cluster | None:
    """Return the cluster a page shows for ``?cluster=name``: that cluster, or the default one when ``name`` is
    empty or names no cluster."""
    if name:
        found = Cluster.objects.filter(name=name).first()
        if found is not None:
            return found
    return default_cluster()


def cluster_health(cluster: Cluster) -> dict[str, Any]:
    """Return ``{state, checkedAt}`` of ``cluster``'s connection as the worker's last background check stored it:
    ``ok`` (it answered), ``unreachable``, or ``unknown`` before the first check. Never reaches the cluster."""
    from .models import ClusterHealth

    health = ClusterHealth.objects.filter(cluster=cluster).only("reachable", "checked_at").first()
    if health is None or health.checked_at is None:
        return {"state": "unknown", "checkedAt": None}
    return {"state": "ok" if health.reachable else "unreachable", "checkedAt": health.checked_at}
