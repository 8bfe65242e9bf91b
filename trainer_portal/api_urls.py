"""REST API v1 routes, gathered from each app's ``api/*urls.py``.

Order matters: sync and preview routes such as ``runtimes/sync/`` must come before the policy routes,
or ``sync`` would be read as the name of a policy.
"""

from django.urls import include, path

from .auth_api import ObtainTokenApi
from .cluster.api import ClusterApi

urlpatterns = [
    path("auth/token/", ObtainTokenApi.as_view(), name="api-auth-token"),
    path("cluster/", ClusterApi.as_view(), name="api-cluster"),
    path("", include("runtimes.api.sync_urls")),
    path("", include("runtimes.api.preview_urls")),
    path("", include("runtimes.api.urls")),
]
