"""REST API v1 routes, gathered from each app's ``api/urls.py``."""

from django.urls import include, path

urlpatterns = [
    path("", include("runtimes.api.urls")),
]
