"""Template helpers of the policy pages: sync badges, scheduling levels, editor problem fields, the heat map.

Only presentation lives here; nothing queries the database or changes data.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from runtimes.forms.editor import problem_field_name

register = template.Library()

GROUP_KEYS = ("schedulingPolicy", "schedulingConstraints", "disruptionMode", "resourceClaims")
SYNC_BADGES: dict[str, str] = {
    "draft": "badge--plain",
    "queued": "badge--info",
    "syncing": "badge--info",
    "synced": "badge--ok",
    "failed": "badge--danger",
    "drifted": "badge--warn",
    "out_of_sync": "badge--warn",
}
CLUSTER_BADGES: dict[str, str] = {"matches": "badge--ok", "drifted": "badge--warn", "missing": "badge--danger"}


@register.filter
def sync_badge_class(state: str | None) -> str:
    """Return the badge modifier class for a sync state ("badge--ok" for synced, …)."""
    return SYNC_BADGES.get(str(state or ""), "")


@register.filter
def cluster_badge_class(state: str | None) -> str:
    """Return the badge modifier class for a cluster state ("badge--warn" for drifted, …)."""
    return CLUSTER_BADGES.get(str(state or ""), "badge--plain")


@register.filter
def scheduling_levels(manifest: object) -> list[dict[str, str]]:
    """Return the scheduling levels a manifest uses as badges: [{label, css, title}], empty list for none.

    Level 1 = `spec.scheduling` fields for the whole TrainJob, level 2 = `spec.scheduling.replicatedJobs[]`
    entries, level 3 = an entry's `job`; legacy `podGroupPolicy` shows as coscheduling/volcano.
    """
    spec = manifest.get("spec") if isinstance(manifest, dict) else None
    if not isinstance(spec, dict):
        return []
    badges: list[dict[str, str]] = []
    scheduling = spec.get("scheduling")
    if isinstance(scheduling, dict):
        if any(key in scheduling for key in ("schedulingPolicy", "schedulingConstraints", "disruptionMode")):
            badges.append({"label": "L1", "css": "badge--l1", "title": "Level 1: one gang for the whole TrainJob"})
        entries = scheduling.get("replicatedJobs")
        entries = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
        # An entry with only a `job` is a level-3 group; one with its own group fields is also a level-2 group.
        level2 = [e for e in entries if "job" not in e or any(key in e for key in GROUP_KEYS)]
        if level2:
            badges.append(
                {"label": f"L2 ×{len(level2)}", "css": "badge--l2", "title": "Level 2: groups of ReplicatedJobs"}
            )
        if entries and any("job" in entry for entry in entries):
            badges.append({"label": "L3", "css": "badge--l3", "title": "Level 3: one group per Job replica"})
        if not badges:
            badges.append({"label": "L1 (default gang)", "css": "badge--l1", "title": "spec.scheduling is empty"})
    group_policy = spec.get("podGroupPolicy")
    if isinstance(group_policy, dict):
        for name in ("coscheduling", "volcano"):
            if name in group_policy:
                badges.append({"label": f"legacy {name}", "css": "badge--legacy", "title": "spec.podGroupPolicy"})
    return badges


@register.filter
def problem_field(path: str | None) -> str:
    """Return the editor field (HTML name) that shows a problem at `path`, or "" when no field does."""
    return problem_field_name(path or "") or ""


@register.filter
def heatmap_html(heatmap: Mapping[str, Any]) -> SafeString:
    """Return the zone → block → rack heat map as compact HTML (one `<i>` per rack, a `title` tooltip each).

    Built here rather than in a template loop because a 50,000-node cluster has ~3,125 racks: a template would
    spend tens of milliseconds on it, and the markup must stay small (class names of two letters, no inline style).
    Names are escaped with the standard library's `html.escape` (quotes included), several times faster than
    Django's lazy-aware `escape` for thousands of short strings.
    """
    parts: list[str] = []
    for zone in heatmap.get("zones", []):
        zone_name = escape(zone["name"])
        placed_zone = " pv-zone--placed" if zone.get("placed") else (" pv-zone--near" if zone.get("near") else "")
        parts.append(
            f'<div class="pv-zone{placed_zone}"><div class="pv-zone__head"><span>zone <b>{zone_name}</b></span>'
            f'<span>{zone["free"]:,} of {zone["total"]:,} GPUs free</span></div>'
        )
        for block in zone.get("blocks", []):
            block_name = escape(block["name"])
            placed_block = " pv-block--placed" if block.get("placed") else (
                " pv-block--near" if block.get("near") else "")
            parts.append(
                f'<div class="pv-block{placed_block}"><span class="pv-block__name" '
                f'title="block {block_name}: {block["free"]:,} of {block["total"]:,} GPUs free">block {block_name}'
                f'<small>{block["free"]:,}/{block["total"]:,} free</small></span><div class="pv-racks">'
            )
            cells = []
            for rack in block.get("racks", []):
                placed = rack.get("placed") or 0
                title = f'rack {escape(rack["name"])}: {rack["free"]:,} of {rack["total"]:,} GPUs free'
                css = "hx" if rack["bucket"] < 0 else f"h{rack['bucket']}"
                if placed:
                    cells.append(f'<i class="{css} p" title="{title}, {placed:,} pods placed"></i>')
                elif rack.get("near"):
                    cells.append(f'<i class="{css} n" title="{title}, best domain (does not fit)"></i>')
                else:
                    cells.append(f"<i class={css} title=\"{title}\"></i>")
            parts.append("".join(cells))
            parts.append("</div></div>")
        parts.append("</div>")
    return mark_safe("".join(parts))  # noqa: S308 — every interpolated name is escaped above


# --------------------------------------------------------------------------------------------------- rendering
