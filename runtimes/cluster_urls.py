"""Routes of the cluster pages; the lead includes them under /cluster/ (namespace "cluster")."""

from django.urls import path

from . import cluster_views

app_name = "cluster"
urlpatterns = [
    path("sync/", cluster_views.BulkSyncView.as_view(), name="bulk-sync"),
    path("jobs/<str:job_id>/", cluster_views.SyncJobView.as_view(), name="job"),
    path("adopt/", cluster_views.AdoptView.as_view(), name="adopt"),
    path("runtimes/<str:name>/sync/", cluster_views.SyncRequestView.as_view(), name="sync"),
    path("runtimes/<str:name>/panel/", cluster_views.SyncPanelView.as_view(), name="panel"),
    path("runtimes/<str:name>/impact/", cluster_views.SyncImpactView.as_view(), name="impact"),
    path("runtimes/<str:name>/drift/", cluster_views.DriftView.as_view(), name="drift"),
    path("runtimes/<str:name>/delete/", cluster_views.ClusterDeleteView.as_view(), name="delete"),
]
