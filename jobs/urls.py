"""TrainJob pages under /jobs/. Fixed routes have one or three segments and a job's detail two, so no TrainJob's
namespace or name can shadow a page (a namespace called "grants" still reaches its jobs)."""

from django.urls import path

from . import views

app_name = "jobs"

urlpatterns = [
    path("", views.job_list, name="list"),
    path("live/", views.job_list_live, name="live"),
    path("overview/", views.overview, name="overview"),
    path("export.csv", views.job_export_csv, name="export-csv"),
    path("grants/", views.grants, name="grants"),
    path("grants/<int:pk>/delete/", views.grant_delete, name="grant-delete"),
    path("runtimes/<str:name>/jobs/", views.for_runtime, name="for-runtime"),
    path("<str:namespace>/<str:name>/", views.job_detail, name="detail"),
    path("<str:namespace>/<str:name>/live/", views.job_detail_live, name="detail-live"),
]
