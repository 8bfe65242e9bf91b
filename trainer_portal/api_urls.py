"""REST API v1 routes: the token endpoint, the cluster status and each app's ``api/urls.py``."""

from django.urls import include, path

from trainer_portal.api.auth import ObtainTokenApi
from trainer_portal.cluster.api import ClusterApi

urlpatterns = [
    path("auth/token/", ObtainTokenApi.as_view(), name="api-auth-token"),
    path("cluster/", ClusterApi.as_view(), name="api-cluster"),
    path("", include("runtimes.api.urls")),
    path("", include("jobs.api.urls")),
]
