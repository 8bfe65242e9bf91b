"""The /cluster/ page: connection, versions, served APIs, CRD probe, permissions, the live topology snapshot, and
the panels apps registered (``selectors.register_page_panel``). Any portal role may view it; a GET changes nothing.
"""

from __future__ import annotations

from django.shortcuts import render
from django.views import View

from trainer_portal.permissions import CapabilityRequiredMixin
from trainer_portal.roles import CLUSTER_VIEW

from . import selectors


class ClusterPageView(CapabilityRequiredMixin, View):
    """The cluster status page (HTML)."""

    capability = CLUSTER_VIEW

    def get(self, request):
        context = {
            "status": selectors.cluster_status(),
            **selectors.live_snapshot_summary(),
            "panels": selectors.page_panels(request),
        }
        return render(request, "cluster/page.html", context)
