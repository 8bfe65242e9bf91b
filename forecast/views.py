"""Forecast pages: the waiting queue with estimated starts and their measured accuracy; what-if simulations."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from trainer_portal import roles
from trainer_portal.permissions import capability_required

from . import selectors, services
from .domain import compact
from .forms import WhatIfForm


def _cluster(request: HttpRequest):
    name = request.GET.get("cluster") or request.POST.get("cluster") or None
    cluster = selectors.cluster_or_none(name)
    if cluster is None:
        raise Http404(f"No cluster named {name!r}." if name else "No default cluster is configured.")
    return cluster


@require_http_methods(["GET", "HEAD"])
@capability_required(roles.JOBS_ALL_NAMESPACES)
def index(request: HttpRequest) -> HttpResponse:
    """The waiting jobs of a cluster in order, each with its likely start range and what it rests on."""
    cluster = _cluster(request)
    now = timezone.now()
    rows = selectors.estimate_list(cluster, request.GET.get("namespace") or None)
    items = [{"row": row, "compact": compact(row.p50, now)} for row in rows]
    run = selectors.last_run(cluster)
    stale = run is not None and (selectors.age_seconds(run.computed_at) or 0) > selectors.stale_after_seconds()
    return render(request, "forecast/index.html", {"cluster": cluster, "items": items, "run": run, "stale": stale,
                                                   "accuracy": run.backtest if run and run.backtest else None})


@require_http_methods(["GET", "HEAD", "POST"])
@capability_required(roles.PREVIEW_RUN)
def whatif(request: HttpRequest) -> HttpResponse:
    """The what-if form (prefilled from ?runtime=&level=, as the policy page links it) and the recent runs."""
    cluster = _cluster(request)
    if request.method == "POST":
        form = WhatIfForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            created = services.whatif_create(cluster=cluster, title=data.get("title") or "",
                                             candidate=form.candidate(), days=data["days"], seed=data["seed"],
                                             user=request.user)
            return redirect("forecast:whatif-detail", pk=created.pk)
        status = 400
    else:
        form = WhatIfForm(initial={"runtime": request.GET.get("runtime", ""), "level": request.GET.get("level", ""),
                                   "days": 7, "seed": 0, "count": 8, "gpus_per_node": 8})
        status = 200
    return render(request, "forecast/whatif.html", {"cluster": cluster, "form": form,
                                                    "whatifs": selectors.whatif_list(cluster, 20)}, status=status)


@require_http_methods(["GET", "HEAD"])
@capability_required(roles.PREVIEW_RUN)
def whatif_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One what-if: progress while it runs, then current and candidate side by side."""
    item = selectors.whatif_get(pk)
    if item is None:
        raise Http404("No such what-if.")
    rows = []
    if item.result:
        current, candidate = item.result.get("current", {}), item.result.get("candidate", {})
        for label, key, kind in (("Time to admission p50", "waitP50Seconds", "time"),
                                 ("Time to admission p95", "waitP95Seconds", "time"),
                                 ("Jobs that would never fit", "neverFit", "count"),
                                 ("Still waiting at the end", "stillWaiting", "count"),
                                 ("GPU utilization", "gpuUtilization", "share"),
                                 ("Fragmentation (free GPUs on partly used nodes)", "fragmentation", "share")):
            rows.append({"label": label, "before": _fmt(current.get(key), kind),
                         "after": _fmt(candidate.get(key), kind)})
    return render(request, "forecast/whatif_detail.html", {"item": item, "rows": rows,
                                                           "progress": round(item.progress * 100)})


@require_http_methods(["POST"])
@capability_required(roles.PREVIEW_RUN)
def whatif_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel a queued or running what-if, back to its page."""
    item = selectors.whatif_get(pk)
    if item is None:
        raise Http404("No such what-if.")
    services.whatif_cancel(item)
    return redirect("forecast:whatif-detail", pk=pk)


def _fmt(value, kind: str) -> str:
    if value is None:
        return "—"
    if kind == "time":
        minutes = value / 60
        return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"
    if kind == "share":
        return f"{value:.0%}"
    return f"{value:,}"
