"""Chart tags for the TrainJob pages (overview, a runtime's jobs): server-rendered SVG from ``trainer_portal.charts``.

Each tag reads what the signed-in user may see through ``jobs.selectors`` (namespace isolation applies, as on the
list) and returns markup; pages include ``jobs/_charts.html`` or ``jobs/_runtime_charts.html`` and need no view change.
"""

from __future__ import annotations

from django import template
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from jobs import selectors
from jobs.choices import AdmissionState
from jobs.domain import states
from jobs.errors import InvalidQuery
from trainer_portal import charts

from .jobs_ui import level_label

register = template.Library()

# One colour per state family (waiting warm, held cool, finished neutral/red), Okabe-Ito based.
STATE_COLORS = {
    states.QUEUED: "#E69F00", states.QUOTA_RESERVED: "#F0C05A", states.WAITING_FOR_OBJECTS: "#D9A441",
    states.WAITING_FOR_STARTUP: "#C58B1C", states.GANG_PENDING: "#D55E00", states.UNSCHEDULABLE: "#A8432B",
    states.PREEMPTED: "#CC79A7", states.SUSPENDED: "#9CA3AF", states.ADMITTED: "#56B4E9",
    states.RUNNING: "#0072B2", states.SUCCEEDED: "#009E73", states.FAILED: "#7F1D1D", states.UNKNOWN: "#6B7280",
}
STATE_LABELS = dict(AdmissionState.choices)
SERIES_COLORS = charts.PALETTE


def state_mix_svg(counts: dict[str, int], *, title: str) -> SafeString:
    """Return the stacked bar of ``counts`` ({state: n}) in the states' own order."""
    parts = [charts.Part(STATE_LABELS.get(state, state), counts.get(state, 0), STATE_COLORS.get(state, ""))
             for state in AdmissionState.values]
    return mark_safe(charts.stacked_bar(parts, title=title))  # noqa: S308 — trainer_portal.charts escapes every text


def admission_svg(*, user, cluster: str | None = None, runtime: str | None = None, now=None) -> SafeString:
    """Return the p50 (solid) and p95 (dashed) time to admission per (runtime, level) over the last 24 h, 2-hour
    buckets; the busiest four pairs."""
    starts, series = selectors.admission_series(user=user, hours=24, buckets=12, cluster=cluster, runtime=runtime,
                                                now=now)
    labels = [timezone.localtime(start).strftime("%H:%M") for start in starts]
    lines = []
    for number, item in enumerate(series):
        name = f"{item.runtime or '—'} · {level_label(item.level)}"
        color = SERIES_COLORS[number % len(SERIES_COLORS)]
        lines.append(charts.Series(f"{name} p50", item.p50, color))
        lines.append(charts.Series(f"{name} p95", item.p95, color, dashed=True))
    title = "Time to admission, p50 and p95, last 24 h" + (f", runtime {runtime}" if runtime else "")
    return mark_safe(charts.line_chart(lines, labels, title=title))  # noqa: S308 — charts escapes every text


@register.simple_tag(takes_context=True)
def admission_chart(context, cluster: str | None = None, runtime: str | None = None) -> SafeString:
    """``{% admission_chart cluster=… runtime=… %}``: the time-to-admission chart for the signed-in user."""
    try:
        return admission_svg(user=context["request"].user, cluster=cluster or None, runtime=runtime or None)
    except InvalidQuery:  # a cluster deleted since the page was built: the page says so elsewhere
        return mark_safe("")


@register.simple_tag(takes_context=True)
def state_mix_chart(context, cluster: str | None = None, runtime: str | None = None) -> SafeString:
    """``{% state_mix_chart cluster=… runtime=… %}``: the state mix of the TrainJobs the signed-in user sees."""
    try:
        counts = selectors.trainjob_state_counts(user=context["request"].user, cluster=cluster or None,
                                                 runtime=runtime or None)
    except InvalidQuery:
        return mark_safe("")
    title = "TrainJobs by state" + (f", runtime {runtime}" if runtime else "")
    return state_mix_svg(counts, title=title)
