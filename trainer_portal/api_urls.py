"""REST API v1 routes: the token endpoint and each app's ``api/urls.py``."""

from django.urls import include, path

from .auth_api import ObtainTokenApi

urlpatterns = [
    path("auth/token/", ObtainTokenApi.as_view(), name="api-auth-token"),
    path("", include("runtimes.api.urls")),
]
