"""REST routes for TrainJobs under /api/v1/ (``summary/`` before ``<namespace>/<name>/``: no clash, since a detail
path has two segments)."""

from django.urls import path

from . import views

urlpatterns = [
    path("trainjobs/", views.TrainJobListApi.as_view(), name="api-trainjobs"),
    path("trainjobs/summary/", views.TrainJobSummaryApi.as_view(), name="api-trainjobs-summary"),
    path("trainjobs/<str:namespace>/<str:name>/", views.TrainJobDetailApi.as_view(), name="api-trainjob"),
]
