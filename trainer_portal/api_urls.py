"""REST API v1 routes: the token endpoint and each app's ``api/urls.py``."""

from django.urls import include, path

from trainer_portal.api.auth import ObtainTokenApi

urlpatterns = [
    path("auth/token/", ObtainTokenApi.as_view(), name="api-auth-token"),
    path("", include("runtimes.api.urls")),
]
