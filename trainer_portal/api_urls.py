"""REST API v1 routes: the token endpoint, the cluster status and each app's ``api/urls.py``."""

from django.urls import include, path

from trainer_portal.cluster.api import ClusterApi

urlpatterns = [
    path("", include("trainer_portal.tokens.api_urls")),
    path("", include("trainer_portal.users.api_urls")),
    path("cluster/", ClusterApi.as_view(), name="api-cluster"),
    path("", include("runtimes.api.urls")),
    path("", include("jobs.api.urls")),
]
