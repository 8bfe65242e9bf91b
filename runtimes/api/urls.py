"""REST API v1 routes for runtime policies (included under /api/v1/ by trainer_portal.api_urls).

`import/` and `validate/` come before `<name>/` so they are not read as policy names.
"""

from django.urls import path

from . import views

urlpatterns = [
    path("runtimes/", views.PolicyListCreateApi.as_view(), name="api-runtime-list"),
    path("runtimes/import/", views.PolicyImportApi.as_view(), name="api-runtime-import"),
    path("runtimes/validate/", views.PolicyValidateApi.as_view(), name="api-runtime-validate"),
    path("runtimes/<str:name>/", views.PolicyDetailApi.as_view(), name="api-runtime-detail"),
    path("runtimes/<str:name>/export/", views.PolicyExportApi.as_view(), name="api-runtime-export"),
    path("runtimes/<str:name>/revisions/", views.RevisionListApi.as_view(), name="api-runtime-revisions"),
    path(
        "runtimes/<str:name>/revisions/<int:number>/",
        views.RevisionDetailApi.as_view(),
        name="api-runtime-revision-detail",
    ),
    path("runtimes/<str:name>/diff/", views.RevisionDiffApi.as_view(), name="api-runtime-diff"),
    path("runtimes/<str:name>/rollback/", views.PolicyRollbackApi.as_view(), name="api-runtime-rollback"),
]
