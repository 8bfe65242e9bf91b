"""URLs of the policy pages (mounted at /runtimes/ under the "runtimes" namespace)."""

from django.urls import path

from . import views

app_name = "runtimes"
urlpatterns = [
    path("", views.PolicyListView.as_view(), name="list"),
    path("new/", views.PolicyCreateView.as_view(), name="new"),
    path("import/", views.PolicyImportView.as_view(), name="import"),
    path("export/", views.PolicyExportAllView.as_view(), name="export-all"),
    path("editor/render-yaml/", views.RenderYamlView.as_view(), name="render-yaml"),
    path("editor/parse-yaml/", views.ParseYamlView.as_view(), name="parse-yaml"),
    path("<str:name>/", views.PolicyDetailView.as_view(), name="detail"),
    path("<str:name>/edit/", views.PolicyEditView.as_view(), name="edit"),
    path("<str:name>/export/", views.PolicyExportView.as_view(), name="export"),
    path("<str:name>/history/", views.PolicyHistoryView.as_view(), name="history"),
    path("<str:name>/diff/", views.PolicyDiffView.as_view(), name="diff"),
    path("<str:name>/rollback/<int:number>/", views.PolicyRollbackView.as_view(), name="rollback"),
    path("<str:name>/delete/", views.PolicyDeleteView.as_view(), name="delete"),
]
