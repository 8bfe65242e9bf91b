"""API routes of the tokens app (included under /api/v1/)."""

from django.urls import path

from . import api

urlpatterns = [
    path("auth/token/", api.ObtainTokenApi.as_view(), name="api-auth-token"),
    path("auth/tokens/", api.TokenListCreateApi.as_view(), name="api-auth-tokens"),
    path("auth/tokens/<int:token_id>/", api.TokenDetailApi.as_view(), name="api-auth-token-detail"),
]
