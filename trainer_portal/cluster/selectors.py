"""Reads for the cluster page and API: connection status, the live snapshot summary, node label keys, page panels.

Apps add sections to the /cluster/ page with :func:`register_page_panel` from their ``AppConfig.ready()``; the
cluster app renders them without knowing the app (its templates and context come with the panel).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Max
from django.http import HttpRequest

from trainer_portal import outbox, roles
from trainer_portal.errors import PortalError, field
from trainer_portal.placement.tracker import LiveSnapshot

from . import snapshots, status
from .models import Cluster, ClusterEvent

LABEL_KEYS_SHOWN = 40
PANEL_SLOTS = ("actions", "aside")


class UnknownCluster(PortalError):
    """The request named a cluster the portal does not manage (404, field ``cluster``)."""

    code = "not_found"
    status = 404


def clusters() -> list[Cluster]:
    """Return every cluster, the default first (for pickers)."""
    return list(Cluster.objects.order_by("-is_default", "name"))


def cluster_named(name: str | None) -> Cluster:
    """Return the cluster called ``name`` (the default cluster for None or ""). Raises UnknownCluster naming the
    ``cluster`` field and the clusters that exist."""
    name = (name or "").strip()
    found = Cluster.objects.filter(**({"name": name} if name else {"is_default": True})).first()
    if found is None:
        known = ", ".join(Cluster.objects.order_by("name").values_list("name", flat=True)[:20]) or "none"
        message = (f"No cluster is named {name!r}; use one of: {known}." if name
                   else "No default cluster is configured; name one with ?cluster=NAME.")
        raise UnknownCluster(message, fields=[field("cluster", message, "not_found")])
    return found


def cluster_status(cluster: Cluster | str | None = None) -> dict[str, Any]:
    """Return the cluster's last stored connection/API/CRD/RBAC status (see `status.stored_status`) with
    ``checked_at`` and ``stale``; never reaches the cluster. Raises Cluster.DoesNotExist for an unknown name."""
    return status.stored_status(cluster)


def scheduling_facts(cluster: Cluster | str | None = None) -> dict[str, Any]:
    """Return what validation follows from the cluster's last stored check: ``{topology_gate, disruption_mode}``
    (the default cluster when None). Every web replica answers the same."""
    return status.scheduling_facts(cluster)


def live_snapshot(cluster: Cluster | str | None = None) -> LiveSnapshot | None:
    """Return the cluster's stored live topology snapshot (cached per process by version), or None."""
    return snapshots.live_snapshot(cluster)


def label_key_counts(cluster: Cluster | str | None = None) -> list[dict[str, Any]]:
    """Return ``[{key, nodes, values: [{value, count}]}]`` of the live snapshot's node labels ([] without one)."""
    live = snapshots.live_snapshot(cluster)
    return live.label_keys() if live is not None else []


def live_snapshot_summary(cluster: Cluster | str | None = None) -> dict[str, Any]:
    """Return ``{snapshot, snapshot_age, snapshot_pods, label_keys}`` for the page: the LiveSnapshot (or None), its
    age in seconds (or None), the pods it counts and its first node label keys."""
    live = snapshots.live_snapshot(cluster)
    return {
        "snapshot": live,
        "snapshot_age": live.age_seconds if live is not None else None,
        "snapshot_pods": (live.stats.get("pods", live.snapshot.pod_count) if live is not None else 0),
        "label_keys": live.label_keys()[:LABEL_KEYS_SHOWN] if live else [],
    }


@dataclass(frozen=True)
class PagePanel:
    """A section an app adds to the cluster page: ``template`` rendered with ``context(request)`` in ``slot``
    ("actions": the page header's buttons; "aside": the side column, above the topology snapshot)."""

    name: str
    slot: str
    template: str
    context: Callable[[HttpRequest], dict[str, Any]]


_PANELS: dict[str, PagePanel] = {}


def register_page_panel(panel: PagePanel) -> None:
    """Add (or replace, by name) a cluster page panel; raises ValueError for an unknown slot."""
    if panel.slot not in PANEL_SLOTS:
        raise ValueError(f"unknown cluster page slot {panel.slot!r}; use one of {', '.join(PANEL_SLOTS)}")
    _PANELS[panel.name] = panel


def page_panels(request: HttpRequest) -> dict[str, list[dict[str, Any]]]:
    """Return ``{slot: [{name, template, context}]}`` for every slot, panels in registration order."""
    result: dict[str, list[dict[str, Any]]] = {slot: [] for slot in PANEL_SLOTS}
    for panel in _PANELS.values():
        result[panel.slot].append({"name": panel.name, "template": panel.template, "context": panel.context(request)})
    return result


# -- the outbox source (trainer_portal.outbox): cluster unreachable and watcher stale for notifications -----------

_NOTIFIED_KINDS = (ClusterEvent.Kind.UNREACHABLE, ClusterEvent.Kind.WATCHER_STALE)


def cluster_events_after(cursor: int, limit: int) -> list[outbox.Event]:
    """Return up to ``limit`` "unreachable" and "watcher stale" events with id > ``cursor`` (ascending) as outbox
    events (sequence: the id)."""
    rows = (ClusterEvent.objects.filter(id__gt=cursor, kind__in=_NOTIFIED_KINDS).select_related("cluster")
            .order_by("id")[:limit])
    return [outbox.Event(source="cluster", sequence=row.id, kind=row.kind, cluster_id=row.cluster_id,
                         cluster=row.cluster.name, at=row.at, subject=row.cluster.name, message=row.message[:2000],
                         path=f"/cluster/?cluster={row.cluster.name}") for row in rows]


def cluster_event_head() -> int:
    """Return the highest cluster event id written so far (0 for none)."""
    return ClusterEvent.objects.aggregate(m=Max("id"))["m"] or 0


def cluster_event_visible(user, event: outbox.Event) -> bool:
    """Return True when ``user`` may see the cluster pages."""
    return roles.has_capability(user, roles.CLUSTER_VIEW)


CLUSTER_SOURCE = outbox.Source(name="cluster", kinds=(outbox.CLUSTER_UNREACHABLE, outbox.WATCHER_STALE),
                               events_after=cluster_events_after, head=cluster_event_head,
                               visible=cluster_event_visible)
