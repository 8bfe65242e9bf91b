"""Presentation helpers for portal templates: relative times, badges, scheduling levels and diff colouring.

Only formatting lives here; nothing queries the database or changes data.
"""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.timesince import timesince

register = template.Library()

GROUP_KEYS = ("schedulingPolicy", "schedulingConstraints", "disruptionMode", "resourceClaims")
SYNC_BADGES: dict[str, str] = {
    "draft": "badge--plain",
    "queued": "badge--info",
    "syncing": "badge--info",
    "synced": "badge--ok",
    "failed": "badge--danger",
    "drifted": "badge--warn",
}


@register.filter
def ago(value: datetime | None) -> str:
    """Return "5 minutes ago" (first unit only) for a past datetime, "just now" under a minute, "" for None."""
    if not value:
        return ""
    delta = timezone.now() - value
    if delta.total_seconds() < 60:
        return "just now"
    return timesince(value, depth=1) + " ago"


@register.filter
def sync_badge_class(state: str | None) -> str:
    """Return the badge modifier class for a sync state ("badge--ok" for synced, …)."""
    return SYNC_BADGES.get(str(state or ""), "")


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
def diff_lines(text: str | None) -> list[dict[str, str]]:
    """Split unified-diff text into [{text, css}] so each line can be coloured (add, del, hunk, meta)."""
    lines = []
    for line in (text or "").splitlines():
        if line.startswith(("+++", "---")):
            css = "diff__line--meta"
        elif line.startswith("@@"):
            css = "diff__line--hunk"
        elif line.startswith("+"):
            css = "diff__line--add"
        elif line.startswith("-"):
            css = "diff__line--del"
        else:
            css = ""
        lines.append({"text": line, "css": css})
    return lines


@register.filter
def get_item(mapping: object, key: str) -> object:
    """Return mapping[key] (or None) so templates can look up dict values by a variable key."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.simple_tag(takes_context=True)
def query_with(context: template.Context, **changes: object) -> str:
    """Return the current query string with `changes` applied (None or "" removes a key), starting with "?"."""
    request = context.get("request")
    params = request.GET.copy() if request is not None else None
    if params is None:
        return ""
    for key, value in changes.items():
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = str(value)
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.filter
def line_numbers(text: str | None) -> str:
    """Return "1\\n2\\n…" with one number per line of `text` (at least one), for the YAML editor's gutter."""
    count = max(1, (text or "").count("\n") + (0 if (text or "").endswith("\n") else 1))
    return "\n".join(str(number) for number in range(1, count + 1))


@register.filter
def problem_field(path: str | None) -> str:
    """Return the editor field (HTML name) that shows a problem at `path`, or "" when no field does."""
    from runtimes.forms.editor import problem_field_name

    return problem_field_name(path or "") or ""
