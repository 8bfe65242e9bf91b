"""REST API v1 routes of the policy app (included under /api/v1/ by ``trainer_portal.api_urls``).

Order matters: fixed paths under ``runtimes/`` (``sync/``, ``import/``, ``validate/``, ``export/``) come before
``runtimes/<name>/``, or they would be read as the name of a policy.
"""

from django.urls import path

from runtimes.api.views import policies, preview, sync

urlpatterns = [
    path("runtimes/", policies.PolicyListCreateApi.as_view(), name="api-runtime-list"),
    path("runtimes/sync/", sync.RuntimesBulkSyncApi.as_view(), name="api-runtimes-bulk-sync"),
    path("runtimes/import/", policies.PolicyImportApi.as_view(), name="api-runtime-import"),
    path("runtimes/validate/", policies.PolicyValidateApi.as_view(), name="api-runtime-validate"),
    path("runtimes/export/", policies.PolicyBulkExportApi.as_view(), name="api-runtimes-export"),
    path("runtimes/<str:name>/", policies.PolicyDetailApi.as_view(), name="api-runtime-detail"),
    path("runtimes/<str:name>/export/", policies.PolicyExportApi.as_view(), name="api-runtime-export"),
    path("runtimes/<str:name>/revisions/", policies.RevisionListApi.as_view(), name="api-runtime-revisions"),
    path(
        "runtimes/<str:name>/revisions/<int:number>/",
        policies.RevisionDetailApi.as_view(),
        name="api-runtime-revision-detail",
    ),
    path("runtimes/<str:name>/diff/", policies.RevisionDiffApi.as_view(), name="api-runtime-diff"),
    path("runtimes/<str:name>/rollback/", policies.PolicyRollbackApi.as_view(), name="api-runtime-rollback"),
    path("runtimes/<str:name>/sync/", sync.RuntimeSyncApi.as_view(), name="api-runtime-sync"),
    path("runtimes/<str:name>/clusters/", sync.RuntimeTargetClustersApi.as_view(), name="api-runtime-clusters"),
    path("runtimes/<str:name>/sync/impact/", sync.RuntimeSyncImpactApi.as_view(), name="api-runtime-sync-impact"),
    path("runtimes/<str:name>/drift/check/", sync.DriftCheckApi.as_view(), name="api-runtime-drift-check"),
    path("runtimes/<str:name>/drift/resolve/", sync.DriftResolveApi.as_view(), name="api-runtime-drift-resolve"),
    path("runtimes/<str:name>/preview/", preview.RuntimePreviewApi.as_view(), name="api-runtime-preview"),
    path("preview/", preview.UnsavedPreviewApi.as_view(), name="api-preview"),
    path("sync-batches/<str:batch_id>/", sync.SyncBatchApi.as_view(), name="api-sync-batch"),
    # Deprecated alias of sync-batches/ (the first release's name); remove in the next release.
    path("sync-jobs/<str:job_id>/", sync.SyncJobApi.as_view(), name="api-sync-job"),
    path("cluster/adopt/", sync.ClusterAdoptApi.as_view(), name="api-cluster-adopt"),
]
