"""The /cluster/ page (``?cluster=NAME``; the default cluster without): connection, versions, served APIs, CRD
probe, permissions — as the worker's last background check stored them, with when — the live topology snapshot,
and the panels apps registered (``selectors.register_page_panel``). ``POST /cluster/check/`` asks the worker to check
a cluster now. Any portal role may view and ask; a GET changes nothing and never waits on a cluster.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View

from trainer_portal.permissions import CapabilityRequiredMixin
from trainer_portal.roles import CLUSTER_VIEW

from . import selectors, services


def _cluster_or_404(name: str | None):
    try:
        return selectors.cluster_named(name)
    except selectors.UnknownCluster as exc:
        raise Http404(exc.message) from None


class ClusterPageView(CapabilityRequiredMixin, View):
    """The cluster status page (HTML)."""

    capability = CLUSTER_VIEW

    def get(self, request):
        cluster = _cluster_or_404(request.GET.get("cluster"))
        status = selectors.cluster_status(cluster)
        context = {
            "cluster": cluster,
            "clusters": selectors.clusters(),
            "status": status,
            "checked_at": _when(status.get("checked_at")),
            "check_requested_at": _when(status.get("check_requested_at")),
            **selectors.live_snapshot_summary(cluster),
            "panels": selectors.page_panels(request),
        }
        return render(request, "cluster/page.html", context)


def _when(unix: float | None) -> datetime | None:
    return datetime.fromtimestamp(unix, UTC) if unix else None


class ClusterCheckView(CapabilityRequiredMixin, View):
    """POST: queue a background check of the cluster named in the form; back to its page with a message."""

    capability = CLUSTER_VIEW
    http_method_names = ["post"]

    def post(self, request):
        cluster = _cluster_or_404(request.POST.get("cluster"))
        try:
            queued, _ = services.request_check(cluster)
        except services.CheckNotQueued as exc:
            messages.error(request, exc.message)
        else:
            messages.info(request, f"Checking {cluster.name} in the background: this page shows the result when it "
                                   "is done." if queued else f"A check of {cluster.name} is already on its way.")
        return redirect(f"{reverse('cluster:page')}?{urlencode({'cluster': cluster.name})}")
