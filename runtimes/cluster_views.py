"""The cluster status page (connection, versions, APIs, CRD probe, permissions, snapshot, sync overview)."""

from __future__ import annotations

from django.shortcuts import render
from django.views import View

from runtimes.choices import SyncState
from runtimes.cluster import cluster_status
from runtimes.models import RuntimePolicy
from runtimes.topology import live_snapshot, snapshot_age_seconds
from trainer_portal.permissions import ViewerRequiredMixin


class ClusterPageView(ViewerRequiredMixin, View):
    """The cluster status page: connection, versions, APIs, CRD probe, permissions, snapshot, sync overview."""

    def get(self, request):
        live = live_snapshot()
        counts = dict.fromkeys(SyncState.values, 0)
        for state in RuntimePolicy.objects.values_list("sync_state", flat=True):
            counts[state] = counts.get(state, 0) + 1
        context = {
            "status": cluster_status(),
            "snapshot": live,
            "snapshot_age": snapshot_age_seconds(),
            "label_keys": live.label_keys()[:40] if live else [],
            "state_counts": counts,
            "attention": RuntimePolicy.objects.filter(
                sync_state__in=[SyncState.FAILED, SyncState.DRIFTED]
            ).order_by("name")[:50],
            "job_id": request.GET.get("job", ""),
        }
        return render(request, "cluster/page.html", context)



