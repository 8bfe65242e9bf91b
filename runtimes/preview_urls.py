"""Routes of the placement preview pages; the lead includes them under /preview/ (namespace "preview")."""

from django.urls import path

from . import preview_views

app_name = "preview"
urlpatterns = [
    path("", preview_views.PreviewPageView.as_view(), name="page"),
    path("results/", preview_views.PreviewResultsView.as_view(), name="results"),
    path("panel/<str:name>/", preview_views.PreviewPanelView.as_view(), name="panel"),
]
