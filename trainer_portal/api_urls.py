"""REST API v1 routes: the token endpoint, the cluster status, the clusters and each app's ``api/urls.py``."""

from django.urls import include, path

from trainer_portal.cluster.api import ClusterApi, ClusterCheckApi, ClusterNamedApi
from trainer_portal.cluster.registry_api import ClusterDetailApi, ClusterListApi

urlpatterns = [
    path("", include("trainer_portal.tokens.api_urls")),
    path("", include("trainer_portal.users.api_urls")),
    path("cluster/", ClusterApi.as_view(), name="api-cluster"),
    path("clusters/", ClusterListApi.as_view(), name="api-clusters"),
    path("clusters/<str:name>/", ClusterDetailApi.as_view(), name="api-cluster-detail"),
    path("", include("runtimes.api.urls")),
    path("", include("jobs.api.urls")),
    path("", include("forecast.api_urls")),
    path("", include("queues.api.urls")),
    path("notifications/", include("notifications.api_urls")),
    # After the apps: their fixed paths under cluster/ (cluster/adopt/) win over a cluster's name.
    path("cluster/<str:name>/", ClusterNamedApi.as_view(), name="api-cluster-named"),
    path("cluster/<str:name>/check/", ClusterCheckApi.as_view(), name="api-cluster-check"),
]
