"""REST API v1 routes, gathered from each app's ``api/*urls.py``.

Order matters: sync and preview routes such as ``runtimes/sync/`` must come before the policy routes,
or ``sync`` would be read as the name of a policy.
"""

from django.urls import include, path

from .cluster.api import ClusterApi

urlpatterns = [
    path("", include("trainer_portal.tokens.api_urls")),
    path("cluster/", ClusterApi.as_view(), name="api-cluster"),
    path("", include("runtimes.api.sync_urls")),
    path("", include("runtimes.api.preview_urls")),
    path("", include("runtimes.api.urls")),
]
