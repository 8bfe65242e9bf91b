"""The policy app's pages, mounted at the site root under the "runtimes" namespace.

Three prefixes, one app: the policy pages under /runtimes/, the placement preview under /preview/ and the
per-policy cluster sync actions under /cluster/ (the cluster status page itself, /cluster/, is not a policy page).
"""

from django.urls import include, path

from runtimes.views import editor, policies, preview, sync

policy_patterns = [
    path("", policies.PolicyListView.as_view(), name="list"),
    path("new/", editor.PolicyCreateView.as_view(), name="new"),
    path("import/", policies.PolicyImportView.as_view(), name="import"),
    path("export/", policies.PolicyExportAllView.as_view(), name="export-all"),
    path("editor/render-yaml/", editor.RenderYamlView.as_view(), name="render-yaml"),
    path("editor/parse-yaml/", editor.ParseYamlView.as_view(), name="parse-yaml"),
    path("<str:name>/", policies.PolicyDetailView.as_view(), name="detail"),
    path("<str:name>/edit/", editor.PolicyEditView.as_view(), name="edit"),
    path("<str:name>/export/", policies.PolicyExportView.as_view(), name="export"),
    path("<str:name>/history/", policies.PolicyHistoryView.as_view(), name="history"),
    path("<str:name>/diff/", policies.PolicyDiffView.as_view(), name="diff"),
    path("<str:name>/rollback/<int:number>/", policies.PolicyRollbackView.as_view(), name="rollback"),
    path("<str:name>/delete/", policies.PolicyDeleteView.as_view(), name="delete"),
]

preview_patterns = [
    path("", preview.PreviewPageView.as_view(), name="preview"),
    path("results/", preview.PreviewResultsView.as_view(), name="preview-results"),
    path("panel/<str:name>/", preview.PreviewPanelView.as_view(), name="preview-panel"),
]

sync_patterns = [
    path("sync/", sync.BulkSyncView.as_view(), name="bulk-sync"),
    path("jobs/<str:batch_id>/", sync.SyncBatchView.as_view(), name="sync-batch"),
    path("adopt/", sync.AdoptView.as_view(), name="adopt"),
    path("runtimes/<str:name>/sync/", sync.SyncRequestView.as_view(), name="sync"),
    path("runtimes/<str:name>/panel/", sync.SyncPanelView.as_view(), name="sync-panel"),
    path("runtimes/<str:name>/impact/", sync.SyncImpactView.as_view(), name="impact"),
    path("runtimes/<str:name>/drift/", sync.DriftView.as_view(), name="drift"),
    path("runtimes/<str:name>/targets/", sync.TargetClustersView.as_view(), name="targets"),
    path("runtimes/<str:name>/drift/reapply/", sync.DriftReapplyView.as_view(), name="drift-reapply"),
    path("runtimes/<str:name>/delete/", sync.ClusterDeleteView.as_view(), name="cluster-delete"),
]

app_name = "runtimes"
urlpatterns = [
    path("runtimes/", include(policy_patterns)),
    path("preview/", include(preview_patterns)),
    path("cluster/", include(sync_patterns)),
]
