"""Reads for the cluster page and API: connection status, the live snapshot summary, node label keys, page panels.

Apps add sections to the /cluster/ page with :func:`register_page_panel` from their ``AppConfig.ready()``; the
cluster app renders them without knowing the app (its templates and context come with the panel).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest

from trainer_portal.cluster import snapshots, status

LABEL_KEYS_SHOWN = 40
PANEL_SLOTS = ("actions", "aside")


def cluster_status(**kwargs: Any) -> dict[str, Any]:
    """Return the connection/API/CRD/RBAC status as plain data (see `status.cluster_status`); never raises."""
    return status.cluster_status(**kwargs)


def scheduling_facts() -> dict[str, Any]:
    """Return what validation follows from the last status check: ``{topology_gate, dra_claims_gate,
    disruption_mode}``."""
    return status.scheduling_facts()


def label_key_counts() -> list[dict[str, Any]]:
    """Return ``[{key, nodes, values: [{value, count}]}]`` of the live snapshot's node labels ([] without one)."""
    live = snapshots.live_snapshot()
    return live.label_keys() if live is not None else []


def live_snapshot_summary() -> dict[str, Any]:
    """Return ``{snapshot, snapshot_age, label_keys}`` for the page: the LiveSnapshot (or None), its file age in
    seconds (or None) and its first node label keys."""
    live = snapshots.live_snapshot()
    return {
        "snapshot": live,
        "snapshot_age": snapshots.snapshot_age_seconds(),
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
