"""REST endpoints for cluster sync, drift and adoption (included under /api/v1/ by the lead).

* ``POST runtimes/{name}/sync/`` → 202 ``{name, revision, state, statusUrl}``; ``GET`` it for the sync status.
* ``GET runtimes/{name}/sync/impact/?numNodes=N`` → referencing TrainJobs and PodGroups old vs new.
* ``POST runtimes/sync/`` ``{names?: [...]}`` → 202 ``{job, statusUrl}`` (all policies when ``names`` is omitted).
* ``GET sync-jobs/{id}/`` → bulk progress ``{total, done, succeeded, failed: [{name, error}], pending, finished}``.
* ``POST runtimes/{name}/drift/check/`` → the drift found now; ``POST runtimes/{name}/drift/resolve/``
  ``{action: reapply|adopt}``.
* ``GET cluster/`` → connection status; ``POST cluster/adopt/`` → adopt every runtime on the cluster.

Reads need a portal role; writes need platform-admin. Cluster failures map to 502 (permanent) / 503 (transient).
"""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from runtimes import sync
from runtimes.choices import SyncState
from runtimes.cluster import cluster_status
from runtimes.errors import PolicyError
from runtimes.models import RuntimePolicy
from trainer_portal import kube
from trainer_portal.permissions import IsPlatformAdmin, IsViewer


class ClusterError(exceptions.APIException):
    """502/503 carrying the cluster's message, the error type and the field causes."""

    default_code = "cluster_error"

    def __init__(self, exc: kube.KubeError) -> None:
        self.status_code = status.HTTP_502_BAD_GATEWAY if exc.permanent else status.HTTP_503_SERVICE_UNAVAILABLE
        fields = [{"path": f["path"], "message": f["message"], "code": f["reason"] or "invalid"}
                  for f in sync.error_fields(exc)]
        super().__init__({"message": sync.describe_error(exc), "fields": fields, "code": "cluster_error"})
        self.extra = {"cluster": exc.as_dict()}


class PolicyActionError(exceptions.APIException):
    """400/404 for a refused sync action (unknown policy, bad action)."""

    default_code = "invalid"

    def __init__(self, message: str, *, status_code: int = 400, code: str = "invalid") -> None:
        self.status_code = status_code
        super().__init__({"message": message, "fields": [], "code": code})


def _policy(name: str) -> RuntimePolicy:
    policy = RuntimePolicy.objects.filter(name=name).first()
    if policy is None:
        raise PolicyActionError(f"No policy named '{name}'.", status_code=404, code="not_found")
    return policy


def sync_status_data(policy: RuntimePolicy) -> dict:
    """Return the sync status of ``policy`` as the API shows it."""
    return {
        "name": policy.name,
        "version": policy.version,
        "state": policy.sync_state,
        "requestedRevision": policy.sync_requested_revision,
        "appliedRevision": policy.applied_revision,
        "resourceVersion": policy.applied_resource_version,
        "generation": policy.applied_generation,
        "lastSyncedAt": policy.last_synced_at.isoformat() if policy.last_synced_at else None,
        "error": policy.last_sync_error,
        "errorFields": policy.sync_error_fields,
        "driftDiff": policy.drift_diff,
        "upToDate": policy.sync_state == SyncState.SYNCED and policy.applied_revision == policy.version,
    }


_SYNC_ACCEPTED = inline_serializer(
    name="SyncAccepted",
    fields={
        "name": serializers.CharField(),
        "revision": serializers.IntegerField(),
        "state": serializers.CharField(),
        "statusUrl": serializers.CharField(),
    },
)


class RuntimeSyncApi(APIView):
    """Queue one policy for syncing (POST, admin) or read its sync status (GET, viewer)."""

    def get_permissions(self):
        return [IsPlatformAdmin()] if self.request.method == "POST" else [IsViewer()]

    @extend_schema(responses={200: inline_serializer(name="SyncStatus", fields={"state": serializers.CharField()})})
    def get(self, request, name: str):
        return Response(sync_status_data(_policy(name)))

    @extend_schema(request=None, responses={202: _SYNC_ACCEPTED})
    def post(self, request, name: str):
        policy = _policy(name)
        force = str(request.query_params.get("force", "")).lower() in ("1", "true", "yes")
        with transaction.atomic():
            try:
                revision = sync.runtime_sync_request(policy=policy)
            except PolicyError as exc:
                raise PolicyActionError(exc.message, status_code=409, code="conflict")
            sync.enqueue_sync_on_commit(policy_id=policy.pk, revision=revision, force=force)
        url = reverse("api-runtime-sync", kwargs={"name": policy.name})
        return Response(
            {"name": policy.name, "revision": revision, "state": SyncState.QUEUED, "statusUrl": url},
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": url},
        )


class RuntimeSyncImpactApi(APIView):
    """What applying the current revision changes (GET, viewer)."""

    permission_classes = [IsViewer]

    def get(self, request, name: str):
        policy = _policy(name)
        raw = request.query_params.get("numNodes")
        num_nodes = None
        if raw:
            try:
                num_nodes = int(raw)
                if not 1 <= num_nodes <= 100_000:
                    raise ValueError
            except ValueError:
                raise exceptions.ValidationError({"numNodes": ["must be a whole number from 1 to 100000"]})
        return Response(sync.runtime_sync_impact(policy=policy, num_nodes=num_nodes))


class BulkSyncInput(serializers.Serializer):
    names = serializers.ListField(child=serializers.CharField(max_length=253), required=False, allow_empty=False)


class RuntimesBulkSyncApi(APIView):
    """Queue many (or all) policies for syncing; answer 202 with the bulk job's progress URL."""

    permission_classes = [IsPlatformAdmin]

    @extend_schema(request=BulkSyncInput, responses={202: inline_serializer(name="BulkSyncAccepted", fields={
        "job": serializers.CharField(), "total": serializers.IntegerField(), "statusUrl": serializers.CharField()})})
    def post(self, request):
        serializer = BulkSyncInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        names = serializer.validated_data.get("names")
        with transaction.atomic():
            try:
                items = sync.runtimes_sync_request(names=names)
            except PolicyError as exc:
                raise exceptions.ValidationError({"names": [exc.message]})
            job = sync.sync_job_create(items=items, actor=request.user)
            sync.enqueue_bulk_on_commit(items=items)
        url = reverse("api-sync-job", kwargs={"job_id": job["id"]})
        return Response(
            {"job": job["id"], "total": len(items), "statusUrl": url},
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": url},
        )


class SyncJobApi(APIView):
    """Progress of a bulk sync (GET, viewer)."""

    permission_classes = [IsViewer]

    def get(self, request, job_id: str):
        progress = sync.sync_job_progress(job_id=job_id)
        if progress is None:
            raise PolicyActionError(f"No sync job '{job_id}' (jobs are kept for a day).", status_code=404,
                                    code="not_found")
        return Response(progress)


class DriftCheckApi(APIView):
    """Compare one synced policy with the cluster now (POST, admin); record drifted or synced."""

    permission_classes = [IsPlatformAdmin]

    def post(self, request, name: str):
        policy = _policy(name)
        try:
            result = sync.runtime_drift_check(policy_id=policy.pk)
        except kube.KubeError as exc:
            raise ClusterError(exc)
        if result is None:
            raise PolicyActionError(
                f"'{name}' is {policy.sync_state}; only synced or drifted policies can be checked for drift.",
                status_code=409,
                code="conflict",
            )
        policy.refresh_from_db()
        return Response(
            {
                "drifted": result.drifted,
                "missing": result.missing,
                "changes": result.changes,
                "managers": result.managers,
                "diff": result.diff,
                "sync": sync_status_data(policy),
            }
        )


class DriftResolveInput(serializers.Serializer):
    action = serializers.ChoiceField(choices=["reapply", "adopt"])


class DriftResolveApi(APIView):
    """Resolve a drift: ``reapply`` ours with force (202), or ``adopt`` the live object as a new revision (200)."""

    permission_classes = [IsPlatformAdmin]

    @extend_schema(request=DriftResolveInput)
    def post(self, request, name: str):
        serializer = DriftResolveInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        action = serializer.validated_data["action"]
        policy = _policy(name)
        if policy.sync_state != SyncState.DRIFTED:
            raise PolicyActionError(
                f"'{name}' is {policy.sync_state}, not drifted; run a drift check first.", status_code=409,
                code="conflict",
            )
        try:
            with transaction.atomic():
                revision = sync.runtime_drift_resolve(policy=policy, action=action, actor=request.user)
                if revision is not None:
                    sync.enqueue_sync_on_commit(policy_id=policy.pk, revision=revision, force=True)
        except kube.KubeError as exc:
            raise ClusterError(exc)
        except PolicyError as exc:
            raise PolicyActionError(exc.message, status_code=409, code=getattr(exc, "code", "conflict"))
        policy.refresh_from_db()
        url = reverse("api-runtime-sync", kwargs={"name": policy.name})
        code = status.HTTP_202_ACCEPTED if revision is not None else status.HTTP_200_OK
        return Response({"action": action, "sync": sync_status_data(policy), "statusUrl": url}, status=code)


class ClusterApi(APIView):
    """The cluster connection status (GET, viewer)."""

    permission_classes = [IsViewer]

    def get(self, request):
        return Response(cluster_status())


class ClusterAdoptApi(APIView):
    """Adopt every ClusterTrainingRuntime on the cluster as a policy (POST, admin); idempotent."""

    permission_classes = [IsPlatformAdmin]

    @extend_schema(request=None)
    def post(self, request):
        try:
            result = sync.runtimes_adopt(actor=request.user)
        except kube.KubeError as exc:
            raise ClusterError(exc)
        return Response(result.as_dict())
