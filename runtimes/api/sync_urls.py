"""REST routes for cluster sync (the lead includes them under /api/v1/ BEFORE runtimes.api.urls, so that
``runtimes/sync/`` is not read as a policy named "sync")."""

from django.urls import path

from . import sync_views

urlpatterns = [
    path("runtimes/sync/", sync_views.RuntimesBulkSyncApi.as_view(), name="api-runtimes-bulk-sync"),
    path("runtimes/<str:name>/sync/", sync_views.RuntimeSyncApi.as_view(), name="api-runtime-sync"),
    path("runtimes/<str:name>/sync/impact/", sync_views.RuntimeSyncImpactApi.as_view(), name="api-runtime-sync-impact"),
    path("runtimes/<str:name>/drift/check/", sync_views.DriftCheckApi.as_view(), name="api-runtime-drift-check"),
    path("runtimes/<str:name>/drift/resolve/", sync_views.DriftResolveApi.as_view(), name="api-runtime-drift-resolve"),
    path("sync-jobs/<str:job_id>/", sync_views.SyncJobApi.as_view(), name="api-sync-job"),
    path("cluster/adopt/", sync_views.ClusterAdoptApi.as_view(), name="api-cluster-adopt"),
]
