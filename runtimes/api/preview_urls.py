"""REST routes of the placement preview; the lead includes them under /api/v1/."""

from django.urls import path

from . import preview_views

urlpatterns = [
    path("runtimes/<str:name>/preview/", preview_views.RuntimePreviewApi.as_view(), name="api-runtime-preview"),
    path("preview/", preview_views.UnsavedPreviewApi.as_view(), name="api-preview"),
]
