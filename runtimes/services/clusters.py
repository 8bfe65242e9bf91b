"""Which clusters a policy syncs to, and how the sync services reach each cluster.

`gateway_for_cluster` is the worker's way in (the settings' request timeout: an apply may take its time);
`action_gateway_for_cluster` bounds every call by ``CLUSTER_ACTION_TIMEOUT_SECONDS`` and is what work a web request
waits on uses (drift checks, re-apply, adopt, impact, delete, the drift page's live object), so a hung API server
holds a web worker that long at most and the request answers 503 with Retry-After.

A policy's targets are the clusters chosen for it (`RuntimePolicy.target_clusters`) or, when none is chosen, every
enabled cluster. `gateway_for_cluster` is the one place the policy services turn a `Cluster` row into a gateway:
the worker's way in (the settings' request timeout, an apply may take its time). `action_gateway_for_cluster` bounds
every call by ``CLUSTER_ACTION_TIMEOUT_SECONDS``; it is what work a web request waits on uses (drift checks,
re-apply, adopt, impact, delete, the drift page's live object), so a hung API server holds a web worker that long at
most and the request answers 503 with Retry-After.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from runtimes.errors import PolicyError, TargetClustersChanged
from trainer_portal.cluster.connections import action_gateway as action_gateway_for_cluster  # noqa: F401
from trainer_portal.cluster.connections import gateway_for_cluster  # noqa: F401 - the policy services' way in
from trainer_portal.cluster.models import Cluster
from trainer_portal.errors import field as field_problem


def default_cluster() -> Cluster:
    """Return the default cluster (the one URLs and API paths that name none mean); create it when the table is
    empty (a fresh test database keeps the row its migration made, but a flushed one may not)."""
    cluster = Cluster.objects.filter(is_default=True).first()
    if cluster is None:
        cluster, _ = Cluster.objects.get_or_create(name="default", defaults={"is_default": True})
    return cluster


def enabled_clusters() -> list[Cluster]:
    """Return the enabled clusters, default first (the default cluster alone in a database that has lost every
    cluster row)."""
    clusters = list(Cluster.objects.filter(enabled=True))
    if not clusters and not Cluster.objects.exists():
        clusters = [default_cluster()]
    return sorted(clusters, key=lambda c: (not c.is_default, c.name))


def cluster_by_id(cluster_id: int | None) -> Cluster:
    """Return cluster ``cluster_id`` (the default cluster for None). Raises Cluster.DoesNotExist."""
    return default_cluster() if cluster_id is None else Cluster.objects.get(pk=cluster_id)


def policy_targets(policy) -> list[Cluster]:
    """Return the enabled clusters ``policy`` syncs to, default first, then by name.

    A database without any cluster row (flushed by hand) gets its default cluster back, so syncing keeps working.
    """
    targets = [entry.cluster for entry in policy.cluster_syncs()]
    if not targets and not Cluster.objects.exists():
        policy.__dict__.pop("_cluster_syncs", None)
        return [default_cluster()]
    return targets


def resolve_targets(policy, names: Iterable[str] | None, *, field: str = "clusters") -> list[Cluster]:
    """Return the clusters named in ``names`` (None: the policy's targets), default first.

    Raises PolicyError naming ``field`` for a name no enabled cluster has, and for an explicit empty list.
    """
    if names is None:
        return policy_targets(policy)
    return clusters_named(names, field=field)


def clusters_named(names: Iterable[str], *, field: str = "clusters") -> list[Cluster]:
    """Return the enabled clusters called ``names``, default first. Raises PolicyError naming ``field`` for unknown
    or disabled names (the message lists the known ones) and for an empty list."""
    wanted = [str(name) for name in names]
    if not wanted:
        message = "must name at least one cluster; omit it to use the policy's target clusters"
        raise PolicyError(message, code="invalid", fields=[field_problem(field, message)])
    known = {c.name: c for c in Cluster.objects.filter(enabled=True)}
    unknown = sorted({name for name in wanted if name not in known})
    if unknown:
        message = (f"unknown or disabled cluster(s): {', '.join(unknown)}; known: {', '.join(sorted(known)) or 'none'}")
        raise PolicyError(message, code="invalid", fields=[field_problem(field, message)])
    chosen = {known[name] for name in wanted}
    return sorted(chosen, key=lambda c: (not c.is_default, c.name))


def target_names(policy) -> list[str]:
    """Return the names of the clusters chosen for ``policy``, sorted ([] when none is chosen: every cluster)."""
    return sorted(policy.target_clusters.values_list("name", flat=True))


def policy_targets_set(*, policy, names: Iterable[str] | None,
                       expected: Iterable[str] | None = None) -> list[Cluster]:
    """Restrict ``policy`` to the clusters ``names`` (None or []: every enabled cluster); return the targets.

    ``expected`` is the choice the caller last saw (None: don't check). The check and the write happen in one
    transaction with the policy row locked, so of two admins editing the same targets the second is told instead of
    silently undoing the first. Clusters dropped from the targets keep what was applied there (nothing is deleted);
    their rows no longer count in the policy's summary. Raises PolicyError naming ``targetClusters`` for unknown
    names, TargetClustersChanged (409) when ``expected`` no longer matches.
    """
    wanted = list(names) if names is not None else []
    chosen = clusters_named(wanted, field="targetClusters") if wanted else []
    with transaction.atomic():
        type(policy).objects.select_for_update().filter(pk=policy.pk).exists()
        if expected is not None:
            current = target_names(policy)
            if sorted(set(expected)) != current:
                raise TargetClustersChanged(current)
        if chosen:
            policy.target_clusters.set(chosen)
        else:
            policy.target_clusters.clear()
    policy.__dict__.pop("_cluster_syncs", None)
    return policy_targets(policy)
