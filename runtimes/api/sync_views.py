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
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import APIView

from runtimes import sync
from runtimes.choices import SyncState
from runtimes.errors import CONFIRM_STARTUP_DEADLOCK, NotApplicable, PolicyError, StartupDeadlockUnconfirmed
from runtimes.models import RuntimePolicy
from trainer_portal import kube
from trainer_portal.permissions import IsPlatformAdmin, IsViewer

from . import sync_serializers as ss
from .serializers import ErrorSerializer

# Kept under their old names: the views validate request bodies with them.
BulkSyncInput = ss.BulkSyncInputSerializer
DriftResolveInput = ss.DriftResolveInputSerializer

TAGS = ["cluster sync"]
FORBIDDEN = {403: OpenApiResponse(ErrorSerializer, description="Not logged in, or your role may not do this.")}
NOT_FOUND = {404: OpenApiResponse(ErrorSerializer, description="No policy with this name.")}
CONFLICT = OpenApiResponse(ErrorSerializer, description="The policy's sync state does not allow this now.")
CLUSTER_ERRORS = {
    502: OpenApiResponse(ss.ClusterErrorSerializer, description="The cluster refused the call (permanent)."),
    503: OpenApiResponse(ss.ClusterErrorSerializer, description="The cluster could not be reached (transient)."),
}


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

    def __init__(
        self, message: str, *, status_code: int = 400, code: str = "invalid", fields: list[dict] | None = None
    ) -> None:
        self.status_code = status_code
        super().__init__({"message": message, "fields": fields or [], "code": code})


def _confirmed(request) -> bool:
    """Return whether the request confirms a startup-order deadlock (`confirmStartupDeadlock` in body or query)."""
    value = request.data.get(CONFIRM_STARTUP_DEADLOCK) if isinstance(request.data, dict) else None
    if value is None:
        value = request.query_params.get(CONFIRM_STARTUP_DEADLOCK)
    return value is True or str(value).lower() in ("1", "true", "yes")


def _apply_refusal(exc: PolicyError) -> PolicyActionError:
    """Return the 409 for a policy that cannot be applied as it is (stored errors, unconfirmed deadlock)."""
    if isinstance(exc, StartupDeadlockUnconfirmed):
        fields = [{"path": CONFIRM_STARTUP_DEADLOCK, "code": "required",
                   "message": "set to true to apply a policy whose gang never reaches minCount (startup order)"}]
        fields += [{"path": p["path"], "message": p["message"], "code": p["code"]} for p in exc.problems]
        return PolicyActionError(exc.message, status_code=409, code=exc.code, fields=fields)
    problems = getattr(exc, "problems", [])
    fields = [{"path": p["path"], "message": p["message"], "code": p["code"]} for p in problems]
    return PolicyActionError(exc.message, status_code=409, code=exc.code, fields=fields)


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
        "startupDeadlockConfirmed": policy.sync_startup_deadlock_confirmed,
        "upToDate": policy.sync_state == SyncState.SYNCED and policy.applied_revision == policy.version,
    }


class RuntimeSyncApi(APIView):
    """Queue one policy for syncing (POST, admin) or read its sync status (GET, viewer)."""

    def get_permissions(self):
        return [IsPlatformAdmin()] if self.request.method == "POST" else [IsViewer()]

    @extend_schema(
        operation_id="runtime_sync_status",
        summary="Get a policy's sync status",
        description="Where the policy stands relative to the cluster: state, requested and applied revision, the "
        "live resourceVersion, the last error with the fields the cluster named, and the drift diff.",
        responses={200: ss.SyncStatusSerializer, **FORBIDDEN, **NOT_FOUND},
        tags=TAGS,
    )
    def get(self, request, name: str):
        return Response(sync_status_data(_policy(name)))

    @extend_schema(
        operation_id="runtime_sync",
        summary="Sync a policy to the cluster",
        description="Queues the current revision for a server-side apply and answers 202 at once; poll "
        "`statusUrl` (also the `Location` header). `?force=true` takes over fields other managers own. A policy "
        "whose gang never reaches minCount (a dependsOn pair inside one gang) needs `confirmStartupDeadlock: true`; "
        "the sync status keeps that it was confirmed.",
        parameters=[
            OpenApiParameter("force", OpenApiTypes.BOOL, description="Force conflicts on apply."),
            OpenApiParameter(CONFIRM_STARTUP_DEADLOCK, OpenApiTypes.BOOL,
                             description="Apply although a gang never schedules (startup order); also in the body."),
        ],
        request=ss.SyncRequestInputSerializer,
        responses={
            202: ss.SyncAcceptedSerializer,
            **FORBIDDEN,
            **NOT_FOUND,
            409: OpenApiResponse(ErrorSerializer, description="The policy vanished while being queued; it keeps "
                                 "errors from an import (`not_applicable`); or its startup-order deadlock is not "
                                 "confirmed (`startup_deadlock_unconfirmed`, field `confirmStartupDeadlock`)."),
        },
        tags=TAGS,
    )
    def post(self, request, name: str):
        policy = _policy(name)
        force = str(request.query_params.get("force", "")).lower() in ("1", "true", "yes")
        with transaction.atomic():
            try:
                revision = sync.runtime_sync_request(policy=policy, confirm_startup_deadlock=_confirmed(request))
            except (NotApplicable, StartupDeadlockUnconfirmed) as exc:
                raise _apply_refusal(exc)
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

    @extend_schema(
        operation_id="runtime_sync_impact",
        summary="What syncing a policy would change",
        description="TrainJobs that reference the runtime, and the PodGroups the applied (`old`) and current "
        "(`new`) revisions produce for `numNodes` (default: the manifest's numNodes, else 4). Cluster errors are "
        "reported in `trainjobs_error`, never as an error status.",
        parameters=[
            OpenApiParameter("numNodes", OpenApiTypes.INT, description="Trainer nodes to expand for (1–100000)."),
        ],
        responses={
            200: ss.SyncImpactSerializer,
            400: OpenApiResponse(ErrorSerializer, description="numNodes is not a whole number from 1 to 100000."),
            **FORBIDDEN,
            **NOT_FOUND,
        },
        tags=TAGS,
    )
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


class RuntimesBulkSyncApi(APIView):
    """Queue many (or all) policies for syncing; answer 202 with the bulk job's progress URL."""

    permission_classes = [IsPlatformAdmin]

    @extend_schema(
        operation_id="runtimes_sync_bulk",
        summary="Sync many (or all) policies",
        description="Queues the named policies (every policy when `names` is omitted) and answers 202 with the "
        "bulk job; poll `statusUrl` (also the `Location` header) for its progress.",
        request=ss.BulkSyncInputSerializer,
        responses={
            202: ss.BulkSyncAcceptedSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Unknown policy names; `fields[].path` is `names`."),
            409: OpenApiResponse(ErrorSerializer, description="A policy keeps import errors, or a startup-order "
                                 "deadlock is not confirmed (`confirmStartupDeadlock`)."),
            **FORBIDDEN,
        },
        tags=TAGS,
    )
    def post(self, request):
        serializer = BulkSyncInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        names = serializer.validated_data.get("names")
        confirm = serializer.validated_data.get(CONFIRM_STARTUP_DEADLOCK, False)
        with transaction.atomic():
            try:
                items = sync.runtimes_sync_request(names=names, confirm_startup_deadlock=confirm)
            except (NotApplicable, StartupDeadlockUnconfirmed) as exc:
                raise _apply_refusal(exc)
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

    @extend_schema(
        operation_id="sync_job_progress",
        summary="Progress of a bulk sync",
        description="Counts of done, succeeded and pending items, the failures with their errors, and each item's "
        "status. Jobs are kept for a day.",
        responses={
            200: ss.SyncJobProgressSerializer,
            **FORBIDDEN,
            404: OpenApiResponse(ErrorSerializer, description="No sync job with this id (or it expired)."),
        },
        tags=TAGS,
    )
    def get(self, request, job_id: str):
        progress = sync.sync_job_progress(job_id=job_id)
        if progress is None:
            raise PolicyActionError(f"No sync job '{job_id}' (jobs are kept for a day).", status_code=404,
                                    code="not_found")
        return Response(progress)


class DriftCheckApi(APIView):
    """Compare one synced policy with the cluster now (POST, admin); record drifted or synced."""

    permission_classes = [IsPlatformAdmin]

    @extend_schema(
        operation_id="runtime_drift_check",
        summary="Check a policy for drift now",
        description="Compares the applied revision with the live object and records the policy as drifted or "
        "synced. Only synced or drifted policies can be checked.",
        request=None,
        responses={
            200: ss.DriftCheckSerializer,
            **FORBIDDEN,
            **NOT_FOUND,
            409: CONFLICT,
            **CLUSTER_ERRORS,
        },
        tags=TAGS,
    )
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


class DriftResolveApi(APIView):
    """Resolve a drift: ``reapply`` ours with force (202), or ``adopt`` the live object as a new revision (200)."""

    permission_classes = [IsPlatformAdmin]

    @extend_schema(
        operation_id="runtime_drift_resolve",
        summary="Resolve a policy's drift",
        description="`reapply` queues a forced apply of the applied revision (202; poll `statusUrl`); `adopt` "
        "saves the live object as a new revision and marks it synced (200). The policy must be drifted.",
        request=ss.DriftResolveInputSerializer,
        responses={
            200: OpenApiResponse(ss.DriftResolvedSerializer, description="Adopted the live object."),
            202: OpenApiResponse(ss.DriftResolvedSerializer, description="Re-apply queued."),
            400: OpenApiResponse(ErrorSerializer, description="`action` is not reapply or adopt."),
            **FORBIDDEN,
            **NOT_FOUND,
            409: OpenApiResponse(ErrorSerializer, description="Not drifted, or nothing on the cluster to adopt."),
            **CLUSTER_ERRORS,
        },
        tags=TAGS,
    )
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


class ClusterAdoptApi(APIView):
    """Adopt every ClusterTrainingRuntime on the cluster as a policy (POST, admin); idempotent."""

    permission_classes = [IsPlatformAdmin]

    @extend_schema(
        operation_id="cluster_adopt",
        summary="Adopt the cluster's runtimes as policies",
        description="Creates a policy for each ClusterTrainingRuntime on the cluster that has none; identical "
        "ones are reported unchanged and differing ones are left alone. Idempotent.",
        request=None,
        responses={200: ss.AdoptResultSerializer, **FORBIDDEN, **CLUSTER_ERRORS},
        tags=TAGS,
    )
    def post(self, request):
        try:
            result = sync.runtimes_adopt(actor=request.user)
        except kube.KubeError as exc:
            raise ClusterError(exc)
        return Response(result.as_dict())
