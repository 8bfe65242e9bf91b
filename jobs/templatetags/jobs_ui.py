"""Presentation helpers of the TrainJob pages: state badges, durations, sizes, the placement heat map.

Only formatting lives here; nothing queries the database or changes data.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any
from urllib.parse import quote

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from jobs.choices import AdmissionState, SchedulingLevel
from jobs.domain.states import WAITING_STATES

register = template.Library()

# Client-side bookkeeping of the live partial: never part of the filters, the change token or any link.
LIVE_PARAMS = ("_seq", "_m", "_c")

# state → badge modifier: waiting is "info", trouble is "danger"/"warn", holding capacity is "ok".
STATE_BADGES: dict[str, str] = {
    "queued": "badge--info",
    "inadmissible": "badge--danger",
    "quota-reserved": "badge--info",
    "waiting-for-objects": "badge--info",
    "waiting-for-startup": "badge--info",
    "gang-pending": "badge--warn",
    "unschedulable": "badge--danger",
    "admitted": "badge--ok",
    "running": "badge--ok",
    "preempted": "badge--danger",
    "suspended": "badge--plain",
    "succeeded": "badge--accent",
    "failed": "badge--danger",
    "unknown": "badge--plain",
}


@register.filter
def state_badge(state: str | None) -> str:
    """Return the badge modifier class for an admission state ("badge--warn" for gang-pending, …)."""
    return STATE_BADGES.get(state or "", "badge--plain")


def _seconds_text(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s" if minutes < 10 else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


@register.filter
def duration(seconds: float | None) -> str:
    """Return a compact duration: "42s", "3m 05s", "25m", "2h 03m", "3d 4h"; "" for None."""
    if seconds is None:
        return ""
    return _seconds_text(float(seconds))


@register.filter
def age(value: dt.datetime | None) -> str:
    """Return how long ago ``value`` was, compactly ("3m 05s"); "" for None."""
    if value is None:
        return ""
    return _seconds_text((timezone.now() - value).total_seconds())


@register.filter
def between(start: dt.datetime | None, end: dt.datetime | None) -> str:
    """Return the compact duration from ``start`` to ``end`` ("" when either is missing)."""
    if start is None or end is None:
        return ""
    return _seconds_text((end - start).total_seconds())


@register.filter
def job_size(job: Any) -> str:
    """Return "4 × 8 GPUs" (nodes × GPUs per node), "4 nodes" without GPUs, "—" when unknown."""
    nodes = getattr(job, "num_nodes", 0) or 0
    gpus = getattr(job, "gpus_per_node", 0) or 0
    if not nodes:
        return "—"
    if gpus:
        return f"{nodes} × {gpus} GPUs"
    return f"{nodes} node{'s' if nodes != 1 else ''}"


@functools.cache
def _url_prefix(name: str) -> str:
    return reverse(name)


@register.filter
def job_url(job: Any) -> str:
    """Return the detail URL of ``job`` (reversed once: a list renders it for every row), qualified with
    ``?cluster=`` when the job is not on the default cluster (the unqualified path means the default)."""
    url = f"{_url_prefix('jobs:list')}{quote(job.namespace, safe='')}/{quote(job.name, safe='')}/"
    cluster = _cluster_of(job)
    if cluster is not None and not cluster.is_default:
        url += f"?cluster={quote(cluster.name, safe='')}"
    return url


def _cluster_of(job: Any) -> Any:
    """Return the cluster row of ``job`` (a TrainJob or a detail), or None for objects without one."""
    job = getattr(job, "job", job)
    return job.cluster if getattr(job, "cluster_id", None) else None


@register.filter
def cluster_query(job: Any) -> str:
    """Return ``?cluster=<name>`` for a job off the default cluster, else "" (appended to job links)."""
    cluster = _cluster_of(job)
    return f"?cluster={quote(cluster.name, safe='')}" if cluster is not None and not cluster.is_default else ""


@register.filter
@functools.lru_cache(maxsize=1024)
def runtime_url(name: str) -> str:
    """Return the policy page URL of runtime ``name`` (by URL name; the jobs app imports nothing of runtimes)."""
    return reverse("runtimes:detail", args=[name])


STATE_LABELS = dict(AdmissionState.choices)
# A level not known yet (a suspended job's PodGroups do not exist) is shown as a dash, not as a finding.
LEVEL_LABELS = {**dict(SchedulingLevel.choices), SchedulingLevel.UNKNOWN.value: "—"}


@register.filter
def state_label(state: str) -> str:
    """Return the human label of an admission state ("Gang pending")."""
    return STATE_LABELS.get(state, state)


@register.filter
def level_label(level: str) -> str:
    """Return the human label of a scheduling level ("ReplicatedJob")."""
    return LEVEL_LABELS.get(level, level)


@register.filter
def get_key(mapping: object, key: str) -> object:
    """Return ``mapping[key]`` (None when missing or not a mapping): dict keys with dashes or capitals."""
    if isinstance(mapping, Mapping):
        return mapping.get(key)
    return None


@register.simple_tag(takes_context=True)
def jobs_query(context: template.Context, **changes: object) -> str:
    """Return the current query string with ``changes`` applied (None or "" removes a key), starting with "?".

    Changing a filter or the sort always drops the page cursor: a cursor belongs to one list."""
    request = context.get("request")
    if request is None:
        return "?"
    params = request.GET.copy()
    for bookkeeping in LIVE_PARAMS:  # the live partial's own parameters never leak into links
        params.pop(bookkeeping, None)
    if "cursor" not in changes:
        params.pop("cursor", None)
    for key, value in changes.items():
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = str(value)
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.simple_tag
def sort_link(current: str, key: str) -> str:
    """Return the sort value a column header links to: ``key`` ascending, or descending when already ascending."""
    return f"-{key}" if current == key else key


def _start_line(job: Any) -> str:
    text = start_short(job.estimated_start) if job.state in WAITING_STATES else ""
    return f'<div class="small muted jobs-start">{escape(text)}</div>' if text else ""


@register.filter
def start_short(estimate: Mapping[str, Any] | None) -> str:
    """Return the compact estimated start for a list row ("starts in ~2 h"; "" without a median)."""
    if not estimate or estimate.get("p50") is None:
        return ""
    seconds = (estimate["p50"] - timezone.now()).total_seconds()
    return "starts any moment" if seconds <= 60 else f"starts in ~{_seconds_text(seconds)}"


@register.filter
def start_long(estimate: Mapping[str, Any] | None) -> str:
    """Return the estimated start for the job page ("likely 15:10 UTC (10 % by 14:05, 90 % by 16:30) — <basis>");
    "start not estimated — <basis>" without quantiles; "" without an estimate."""
    if not estimate:
        return ""
    basis = estimate.get("basis") or ""
    if estimate.get("p50") is None:
        return f"start not estimated — {basis}" if basis else ""

    def at(value: dt.datetime | None) -> str:
        return f"{value.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC" if value is not None else "?"

    text = (f"likely {at(estimate['p50'])} ({start_short(estimate)}; 10 % by {at(estimate.get('p10'))}, 90 % by "
            f"{at(estimate.get('p90'))})")
    return f"{text} — {basis}" if basis else text


@register.simple_tag
def job_row(job: Any, tracking: Any, oob: bool = False, link_runtime: bool = False) -> SafeString:
    """Return one list row (``<tr id="job-<uid>">``) of ``job``; ``oob`` marks it for an htmx out-of-band swap;
    ``link_runtime`` links the runtime to its policy page (only for roles that may open it: ``caps.policies_view``).

    Built here rather than in a template because the list renders 50 rows on every change and the template
    version cost ~20 ms of the page's budget; every value is escaped with the standard library's ``html.escape``.
    """
    stale = bool(getattr(tracking, "stale", False))
    state = escape(job.state)
    if job.runtime_name and job.runtime_kind == "ClusterTrainingRuntime" and link_runtime:
        runtime = f'<a href="{escape(runtime_url(job.runtime_name))}">{escape(job.runtime_name)}</a>'
    elif job.runtime_kind == "ClusterTrainingRuntime" and job.runtime_name:
        runtime = escape(job.runtime_name)
    elif job.runtime_name:
        runtime = f'{escape(job.runtime_name)} <span class="small muted">({escape(job.runtime_kind)})</span>'
    else:
        runtime = '<span class="muted">—</span>'
    creator = f'<div class="small muted">by {escape(job.creator)}</div>' if job.creator else ""
    stale_badge = (f' <span class="badge badge--plain jobs-stale-badge" title="{escape(tracking.message)}">stale'
                   "</span>") if stale else ""
    since = timezone.localtime(job.since) if timezone.is_aware(job.since) else job.since
    place = job.queue_place
    if place is not None:
        position = (f' <span class="badge badge--info jobs-position" title="{escape(getattr(job, "queue_line", ""))}">'
                    f'#{place["position"]}</span>' if place["position"] is not None else "")
        queue = f"{escape(place['localQueue'] or '')}{position}"
    else:
        queue = '<span class="muted">—</span>'
    cluster = _cluster_of(job)
    cluster_line = (f'<div class="small muted jobs-cluster" title="cluster">{escape(cluster.label)}</div>'
                    if cluster is not None else "")
    row = (
        f'<tr id="job-{escape(job.uid)}" class="jobs-row{" is-stale" if stale else ""}" data-state="{state}"'
        f'{" hx-swap-oob=\"true\"" if oob else ""}>'
        f'<td class="nowrap">{escape(job.namespace)}{cluster_line}</td>'
        f'<th scope="row" class="name"><a href="{escape(job_url(job))}">{escape(job.name)}</a>{creator}</th>'
        f"<td>{runtime}</td>"
        f'<td class="nowrap">{escape(job_size(job))}</td>'
        f"<td>{escape(level_label(job.level))}</td>"
        f'<td class="nowrap"><span class="badge {state_badge(job.state)} jobs-state'
        f'{" jobs-state--stale" if stale else ""}" data-state="{state}">{escape(state_label(job.state))}</span>'
        f"{stale_badge}</td>"
        f'<td class="nowrap"><time datetime="{since.isoformat()}" data-since="{int(job.since.timestamp())}" '
        f'title="since {since:%Y-%m-%d %H:%M:%S}">{age(job.since)}</time></td>'
        f'<td class="jobs-reason"><span class="jobs-reason__line" title="{escape(job.message)}"'
        f' data-reason="{escape(job.reason)}">{escape(job.short_reason)}</span>{_start_line(job)}</td>'
        f'<td class="nowrap">{queue}</td></tr>'
    )
    return mark_safe(row)  # noqa: S308 — every interpolated value is escaped above


def placement_cells(pods: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return where ``pods`` landed as zones → blocks → racks with pod counts, every level sorted by name.

    Pods without a node are left out; a missing zone/block/rack label shows as "—".
    """
    zones: dict[str, dict[str, dict[str, int]]] = {}
    for pod in pods:
        if not pod.get("node"):
            continue
        zone = pod.get("zone") or "—"
        block = pod.get("block") or "—"
        rack = pod.get("rack") or "—"
        racks = zones.setdefault(zone, {}).setdefault(block, {})
        racks[rack] = racks.get(rack, 0) + 1
    result = []
    for zone in sorted(zones):
        blocks = []
        for block in sorted(zones[zone]):
            racks = [{"name": rack, "pods": count} for rack, count in sorted(zones[zone][block].items())]
            blocks.append({"name": block, "pods": sum(r["pods"] for r in racks), "racks": racks})
        result.append({"name": zone, "pods": sum(b["pods"] for b in blocks), "blocks": blocks})
    return result


def _bucket(count: int, most: int) -> int:
    """Return the colour step 1..5 of ``count`` pods against the fullest rack (the preview's legend classes)."""
    if most <= 0:
        return 1
    return max(1, min(5, 1 + (4 * count) // most))


def _free_bucket(free: int, total: int) -> int:
    """Return the preview's colour step of a rack: 0 (no GPU free) … 5 (all free); -1 when it has no GPUs."""
    if total <= 0:
        return -1
    if free <= 0:
        return 0
    if free >= total:
        return 5
    return min(4, 1 + (4 * free) // total)


def _cluster_heatmap(zones_placed: list[dict[str, Any]], summary: Mapping[str, Any]) -> list[str]:
    """Return the heat map parts of the whole cluster (free GPUs per rack), the job's racks outlined."""
    placed = {(z["name"], b["name"], r["name"]): r["pods"]
              for z in zones_placed for b in z["blocks"] for r in b["racks"]}
    placed_zones = {z["name"] for z in zones_placed}
    placed_blocks = {(z["name"], b["name"]) for z in zones_placed for b in z["blocks"]}
    parts: list[str] = []
    for zone in summary.get("zones", []):
        zone_name = escape(zone["name"])
        parts.append(f'<div class="pv-zone{" pv-zone--placed" if zone["name"] in placed_zones else ""}">'
                     f'<div class="pv-zone__head"><b>{zone_name}</b><span>{zone["freeGpus"]:,} / '
                     f'{zone["totalGpus"]:,} GPUs free</span></div>')
        for block in zone.get("blocks", []):
            name = escape(block["name"])
            here = (zone["name"], block["name"]) in placed_blocks
            parts.append(f'<div class="pv-block{" pv-block--placed" if here else ""}"><span class="pv-block__name" '
                         f'title="{name}: {block["freeGpus"]:,} / {block["totalGpus"]:,} GPUs free">{name}</span>'
                         f'<div class="pv-racks">')
            for rack in block.get("racks", []):
                bucket = _free_bucket(rack["freeGpus"], rack["totalGpus"])
                css = "hx" if bucket < 0 else f"h{bucket}"
                title = f'{escape(rack["name"])}: {rack["freeGpus"]:,}/{rack["totalGpus"]:,} free'
                pods = placed.get((zone["name"], block["name"], rack["name"]), 0)
                if pods:
                    parts.append(f'<i class="{css} p" title="{title}, {pods:,} pods of this job"></i>')
                else:
                    parts.append(f'<i class="{css}" title="{title}"></i>')
            parts.append("</div></div>")
        parts.append("</div>")
    return parts


@register.simple_tag
def placement_heatmap(pods: Iterable[Mapping[str, Any]], summary: Mapping[str, Any] | None = None) -> SafeString:
    """Return the heat map of where a gang's pods landed, in the placement preview's look (``pv-*`` classes).

    With the live snapshot's ``summary`` (zones → blocks → racks of free/total GPUs): the whole cluster coloured
    by free GPUs, the racks holding the job's pods outlined. Without it: only the job's racks, the colour step
    growing with the pods in each. Every name is escaped.
    """
    zones = placement_cells(pods)
    if summary and summary.get("zones"):
        return mark_safe("".join(_cluster_heatmap(zones, summary)))  # noqa: S308 — names escaped in the builder
    most = max((rack["pods"] for zone in zones for block in zone["blocks"] for rack in block["racks"]), default=0)
    parts: list[str] = []
    for zone in zones:
        parts.append(f'<div class="pv-zone pv-zone--placed"><div class="pv-zone__head"><b>{escape(zone["name"])}</b>'
                     f'<span>{zone["pods"]:,} pod{"s" if zone["pods"] != 1 else ""}</span></div>')
        for block in zone["blocks"]:
            name = escape(block["name"])
            parts.append(f'<div class="pv-block pv-block--placed"><span class="pv-block__name" '
                         f'title="{name}: {block["pods"]:,} pods">{name}</span><div class="pv-racks">')
            for rack in block["racks"]:
                parts.append(f'<i class="h{_bucket(rack["pods"], most)} p" '
                             f'title="{escape(rack["name"])}: {rack["pods"]:,} pods"></i>')
            parts.append("</div></div>")
        parts.append("</div>")
    return mark_safe("".join(parts))  # noqa: S308 — every interpolated name is escaped above
