"""URL map for sync tests: the project's routes plus the sync API and cluster pages (until the lead wires them)."""

from django.urls import include, path

from trainer_portal.urls import urlpatterns as project_urlpatterns

urlpatterns = [
    path("api/v1/", include("runtimes.api.sync_urls")),
    path("cluster/", include("runtimes.cluster_urls")),
    *project_urlpatterns,
]
