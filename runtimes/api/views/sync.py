"""REST endpoints for cluster sync, drift and adoption (included under /api/v1/).

* ``POST runtimes/{name}/sync/`` → 202 ``{name, revision, state, statusUrl}``; ``GET`` it for the sync status.
* ``GET runtimes/{name}/sync/impact/?numNodes=N`` → referencing TrainJobs and PodGroups old vs new.
* ``POST runtimes/sync/`` ``{names?: [...]}`` → 202 ``{job, statusUrl}`` (all policies when ``names`` is omitted).
* ``GET sync-jobs/{id}/`` → bulk progress ``{total, done, succeeded, failed: [{name, error}], pending, finished}``.
* ``POST runtimes/{name}/drift/check/`` → the drift found now; ``POST runtimes/{name}/drift/resolve/``
  ``{action: reapply|adopt}``.
* ``POST cluster/adopt/`` → adopt every runtime on the cluster.

Reads need a portal role; writes need platform-admin. Cluster failures map to 502 (permanent) / 503 (transient).
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from runtimes import selectors
from runtimes.api.serializers import sync as ss
from runtimes.api.serializers.policies import ErrorSerializer
from runtimes.choices import SyncState
from runtimes.domain.constants import IMPACT_DEFAULT_NUM_NODES, MAX_NUM_NODES
from runtimes.errors import CONFIRM_STARTUP_DEADLOCK, SyncRefused
from runtimes.models import RuntimePolicy
from runtimes.services import clusters as target_services
from runtimes.services import sync, sync_batches
from trainer_portal.api.dialect import camel_body, wants_legacy_keys
from trainer_portal.permissions import HasCapability
from trainer_portal.roles import POLICIES_SYNC, POLICIES_VIEW

TAGS = ["cluster sync"]
FORBIDDEN = {403: OpenApiResponse(ErrorSerializer, description="Not logged in, or your role may not do this.")}
NOT_FOUND = {404: OpenApiResponse(ErrorSerializer, description="No policy with this name.")}
CONFLICT = OpenApiResponse(ErrorSerializer, description="The policy's sync state does not allow this now.")
CLUSTER_ERRORS = {
    502: OpenApiResponse(ss.ClusterErrorSerializer, description="The cluster refused the call (permanent)."),
    503: OpenApiResponse(ss.ClusterErrorSerializer, description="The cluster could not be reached (transient)."),
}




def _confirmed(request) -> bool:
    """Return whether the request confirms a startup-order deadlock (`confirmStartupDeadlock` in body or query)."""
    value = request.data.get(CONFIRM_STARTUP_DEADLOCK) if isinstance(request.data, dict) else None
    if value is None:
        value = request.query_params.get(CONFIRM_STARTUP_DEADLOCK)
    return value is True or str(value).lower() in ("1", "true", "yes")


def _clusters_in(request) -> list[str] | None:
    """Return the ``clusters`` a request names (None: not given). Raises ValidationError (400 naming ``clusters``)
    unless it is a non-empty list of names."""
    if not isinstance(request.data, dict) or request.data.get("clusters") is None:
        return None
    serializer = ss.DriftCheckInputSerializer(data={"clusters": request.data.get("clusters")})
    serializer.is_valid(raise_exception=True)
    return list(serializer.validated_data["clusters"])


def sync_status_data(policy: RuntimePolicy) -> dict:
    """Return the sync status of ``policy`` as the API shows it."""
    return ss.SyncStatusSerializer(policy).data


class RuntimeSyncApi(APIView):
    """Queue one policy for syncing (POST, admin) or read its sync status (GET, viewer)."""

    permission_classes = [HasCapability.of(POLICIES_VIEW, POLICIES_SYNC)]

    @extend_schema(
        operation_id="runtime_sync_status",
        summary="Get a policy's sync status",
        description="Where the policy stands relative to the cluster: state, requested and applied revision, the "
        "live resourceVersion, the last error with the fields the cluster named, and the drift diff.",
        responses={200: ss.SyncStatusSerializer, **FORBIDDEN, **NOT_FOUND},
        tags=TAGS,
    )
    def get(self, request, name: str):
        return Response(sync_status_data(selectors.policy_get(name=name)))

    @extend_schema(
        operation_id="policy_sync",
        summary="Sync a policy to the cluster",
        description="Queues the current revision for a server-side apply and answers 202 at once; poll "
        "`statusUrl` (also the `Location` header). `?force=true` takes over fields other managers own. A policy "
        "whose gang never reaches minCount (a dependsOn pair inside one gang) needs `confirmStartupDeadlock: true`; "
        "the sync status keeps that it was confirmed. The revision is queued for each of the policy's target "
        "clusters, or for the `clusters` named in the body (400 naming `clusters` for an unknown one).",
        parameters=[
            OpenApiParameter("force", OpenApiTypes.BOOL, description="Force conflicts on apply."),
            OpenApiParameter(CONFIRM_STARTUP_DEADLOCK, OpenApiTypes.BOOL,
                             description="Apply although a gang never schedules (startup order); also in the body."),
        ],
        request=ss.SyncRequestInputSerializer,
        responses={
            202: ss.SyncAcceptedSerializer,
            400: OpenApiResponse(ErrorSerializer, description="`clusters` names an unknown or disabled cluster, or "
                                 "the policy has no enabled target cluster."),
            **FORBIDDEN,
            **NOT_FOUND,
            409: OpenApiResponse(ErrorSerializer, description="The policy vanished while being queued; it keeps "
                                 "errors from an import (`not_applicable`); or its startup-order deadlock is not "
                                 "confirmed (`startup_deadlock_unconfirmed`, field `confirmStartupDeadlock`)."),
        },
        tags=TAGS,
    )
    def post(self, request, name: str):
        policy = selectors.policy_get(name=name)
        force = str(request.query_params.get("force", "")).lower() in ("1", "true", "yes")
        clusters = _clusters_in(request)
        revision = sync.policy_sync_request(
            policy=policy, force=force, confirm_startup_deadlock=_confirmed(request), clusters=clusters
        )
        names = clusters or [cluster.name for cluster in target_services.policy_targets(policy)]
        url = request.build_absolute_uri(reverse("api-runtime-sync", kwargs={"name": policy.name}))
        return Response(
            {"name": policy.name, "clusters": sorted(set(names)), "revision": revision, "state": SyncState.QUEUED,
             "statusUrl": url},
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": url},
        )


class RuntimeSyncImpactApi(APIView):
    """What applying the current revision changes (GET, viewer)."""

    # Answers through `camel_body`: the schema declares `?dialect` (trainer_portal.api.schema).
    camel_dialect = True

    permission_classes = [HasCapability.of(POLICIES_VIEW)]

    @extend_schema(
        operation_id="policy_sync_impact",
        summary="What syncing a policy would change",
        description="TrainJobs that reference the runtime, and the PodGroups the applied (`old`) and current "
        "(`new`) revisions produce for `numNodes` (default: the manifest's numNodes, else "
        f"{IMPACT_DEFAULT_NUM_NODES}). Cluster errors are "
        "reported in `trainjobs_error`, never as an error status.",
        parameters=[
            OpenApiParameter(
                "numNodes", OpenApiTypes.INT, description=f"Trainer nodes to expand for (1–{MAX_NUM_NODES})."
            ),
        ],
        responses={
            200: ss.SyncImpactSerializer,
            400: OpenApiResponse(
                ErrorSerializer, description=f"numNodes is not a whole number from 1 to {MAX_NUM_NODES}."
            ),
            **FORBIDDEN,
            **NOT_FOUND,
        },
        tags=TAGS,
    )
    def get(self, request, name: str):
        policy = selectors.policy_get(name=name)
        num_nodes = sync.impact_num_nodes(request.query_params.get("numNodes"))
        impact = sync.policy_sync_impact(policy=policy, num_nodes=num_nodes)
        return Response(camel_body(impact, legacy=wants_legacy_keys(request)))


class RuntimesBulkSyncApi(APIView):
    """Queue many (or all) policies for syncing; answer 202 with the bulk job's progress URL."""

    permission_classes = [HasCapability.of(POLICIES_SYNC)]

    @extend_schema(
        operation_id="runtimes_sync_bulk",
        summary="Sync many (or all) policies",
        description="Queues the named policies (every policy when `names` is omitted), each for its target "
        "clusters or for the `clusters` named, and answers 202 with the bulk job over (policy, cluster) pairs; poll "
        "`statusUrl` (also the `Location` header) for its progress.",
        request=ss.BulkSyncInputSerializer,
        responses={
            202: ss.BulkSyncAcceptedSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Unknown policy names (`fields[].path` is `names`) or "
                                 "unknown clusters (`clusters`)."),
            409: OpenApiResponse(ErrorSerializer, description="A policy keeps import errors, or a startup-order "
                                 "deadlock is not confirmed (`confirmStartupDeadlock`)."),
            **FORBIDDEN,
        },
        tags=TAGS,
    )
    def post(self, request):
        serializer = ss.BulkSyncInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        names = serializer.validated_data.get("names")
        confirm = serializer.validated_data.get(CONFIRM_STARTUP_DEADLOCK, False)
        batch = sync.policies_sync_request(
            names=names, actor=request.user, confirm_startup_deadlock=confirm,
            clusters=serializer.validated_data.get("clusters"),
        )
        url = request.build_absolute_uri(reverse("api-sync-batch", kwargs={"batch_id": batch.id.hex}))
        # "job" repeats "batch" for clients of the first release (deprecated with /sync-jobs/).
        return Response(
            {"batch": batch.id.hex, "job": batch.id.hex, "total": len(batch.items), "statusUrl": url},
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": url},
        )


class SyncBatchApi(APIView):
    """Progress of a bulk sync batch (GET, viewer); also served at the deprecated ``sync-jobs/{id}/``."""

    # Answers through `camel_body`: the schema declares `?dialect` (trainer_portal.api.schema).
    camel_dialect = True

    permission_classes = [HasCapability.of(POLICIES_VIEW)]

    @extend_schema(
        operation_id="sync_batch_progress",
        summary="Progress of a bulk sync",
        description="Counts of done, succeeded and pending items, the failures with their errors, and each item's "
        "status. Batches are kept for a week. Keys are camelCase; until the next release `created_at` and "
        "`error_fields` also appear under those first-release names unless `?dialect=camel` is given.",
        responses={
            200: ss.SyncBatchProgressSerializer,
            **FORBIDDEN,
            404: OpenApiResponse(ErrorSerializer, description="No sync batch with this id (or it expired)."),
        },
        tags=TAGS,
    )
    def get(self, request, batch_id: str):
        progress = sync_batches.sync_batch_progress(batch_id=batch_id)
        return Response(camel_body(progress, legacy=wants_legacy_keys(request)))


class SyncJobApi(SyncBatchApi):
    """``GET sync-jobs/{id}/``: the deprecated alias of `SyncBatchApi` (kept for one release)."""

    @extend_schema(
        deprecated=True,
        operation_id="sync_job_progress",
        summary="Progress of a bulk sync (deprecated path)",
        description="The first release's path of `sync-batches/{id}/`; it answers the same and goes away in the "
        "next release.",
        responses={
            200: ss.SyncBatchProgressSerializer,
            **FORBIDDEN,
            404: OpenApiResponse(ErrorSerializer, description="No sync batch with this id (or it expired)."),
        },
        tags=TAGS,
    )
    def get(self, request, job_id: str):
        return super().get(request, batch_id=job_id)


class DriftCheckApi(APIView):
    """Compare one synced policy with the cluster now (POST, admin); record drifted or synced."""

    permission_classes = [HasCapability.of(POLICIES_SYNC)]

    @extend_schema(
        operation_id="policy_drift_check",
        summary="Check a policy for drift now",
        description="Compares the applied revision with the live object on each target cluster (or the `clusters` "
        "named) and records the policy as drifted or synced there. Only clusters where it is synced or drifted "
        "can be checked; 409 when there is none.",
        request=ss.DriftCheckInputSerializer,
        responses={
            200: ss.DriftCheckSerializer,
            400: OpenApiResponse(ErrorSerializer, description="`clusters` names an unknown or disabled cluster."),
            **FORBIDDEN,
            **NOT_FOUND,
            409: CONFLICT,
            **CLUSTER_ERRORS,
        },
        tags=TAGS,
    )
    def post(self, request, name: str):
        policy = selectors.policy_get(name=name)
        found = sync.policy_drift_check_clusters(policy=policy, clusters=_clusters_in(request))
        checked = [result for _, result in found if result is not None]
        if not checked:
            raise SyncRefused(
                f"'{name}' is {policy.sync_state}; only synced or drifted policies can be checked for drift."
            )
        result = next((r for r in checked if r.drifted), checked[0])
        policy = selectors.policy_get(name=name)
        return Response(
            {
                "drifted": result.drifted,
                "missing": result.missing,
                "changes": result.changes,
                "managers": result.managers,
                "diff": result.diff,
                "clusters": [
                    {
                        "cluster": cluster.name,
                        "checked": found_result is not None,
                        "drifted": bool(found_result and found_result.drifted),
                        "missing": bool(found_result and found_result.missing),
                        "changes": found_result.changes if found_result else [],
                        "managers": found_result.managers if found_result else [],
                        "diff": found_result.diff if found_result else "",
                    }
                    for cluster, found_result in found
                ],
                "sync": sync_status_data(policy),
            }
        )


class DriftResolveApi(APIView):
    """Resolve a drift: ``reapply`` ours with force (202), or ``adopt`` the live object as a new revision (200)."""

    permission_classes = [HasCapability.of(POLICIES_SYNC)]

    @extend_schema(
        operation_id="policy_drift_resolve",
        summary="Resolve a policy's drift",
        description="`reapply` queues a forced apply of the applied revision (202; poll `statusUrl`); `adopt` "
        "saves the live object as a new revision and marks it synced (200). The policy must be drifted. Without "
        "`clusters`, every target cluster where it is drifted is resolved (an adopt needs exactly one: name it).",
        request=ss.DriftResolveInputSerializer,
        responses={
            200: OpenApiResponse(ss.DriftResolvedSerializer, description="Adopted the live object."),
            202: OpenApiResponse(ss.DriftResolvedSerializer, description="Re-apply queued."),
            400: OpenApiResponse(ErrorSerializer, description="`action` is not reapply or adopt; `clusters` names an "
                                 "unknown cluster, or an adopt would have to choose among several."),
            **FORBIDDEN,
            **NOT_FOUND,
            409: OpenApiResponse(ErrorSerializer, description="Not drifted, or nothing on the cluster to adopt."),
            **CLUSTER_ERRORS,
        },
        tags=TAGS,
    )
    def post(self, request, name: str):
        serializer = ss.DriftResolveInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        action = serializer.validated_data["action"]
        policy = selectors.policy_get(name=name)
        revision = sync.policy_drift_resolve(
            policy=policy, action=action, actor=request.user, clusters=serializer.validated_data.get("clusters")
        )
        policy = selectors.policy_get(name=name)
        url = request.build_absolute_uri(reverse("api-runtime-sync", kwargs={"name": policy.name}))
        code = status.HTTP_202_ACCEPTED if revision is not None else status.HTTP_200_OK
        return Response({"action": action, "sync": sync_status_data(policy), "statusUrl": url}, status=code)




class RuntimeTargetClustersApi(APIView):
    """The clusters a policy syncs to: read them with its state on each (GET, viewer) or choose them (PUT, admin)."""

    permission_classes = [HasCapability.of(POLICIES_VIEW, POLICIES_SYNC)]

    def _data(self, policy) -> dict:
        return {
            "name": policy.name,
            "targetClusters": sorted(cluster.name for cluster in policy.target_clusters.all()),
            "clusters": ss.cluster_sync_rows(policy),
        }

    @extend_schema(
        operation_id="runtime_target_clusters",
        summary="A policy's target clusters",
        description="The clusters chosen for the policy (`[]`: every enabled cluster) and where it stands on each "
        "target cluster.",
        responses={200: ss.TargetClustersSerializer, **FORBIDDEN, **NOT_FOUND},
        tags=TAGS,
    )
    def get(self, request, name: str):
        return Response(self._data(selectors.policy_get(name=name)))

    @extend_schema(
        operation_id="runtime_target_clusters_set",
        summary="Choose a policy's target clusters",
        description="Restricts the policy to `targetClusters` (`[]`: every enabled cluster). Nothing is applied or "
        "deleted: sync the policy to apply it on new targets; a cluster dropped keeps what was applied there.",
        request=ss.TargetClustersInputSerializer,
        responses={
            200: ss.TargetClustersSerializer,
            400: OpenApiResponse(ErrorSerializer, description="`targetClusters` names an unknown or disabled "
                                 "cluster."),
            409: OpenApiResponse(ErrorSerializer, description="`expectedTargetClusters` no longer matches: someone "
                                 "changed the targets meanwhile."),
            **FORBIDDEN,
            **NOT_FOUND,
        },
        tags=TAGS,
    )
    def put(self, request, name: str):
        serializer = ss.TargetClustersInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        policy = selectors.policy_get(name=name)
        target_services.policy_targets_set(policy=policy, names=serializer.validated_data["targetClusters"],
                                           expected=serializer.validated_data.get("expectedTargetClusters"))
        return Response(self._data(selectors.policy_get(name=name)))


class ClusterAdoptApi(APIView):
    """Adopt every ClusterTrainingRuntime on the cluster as a policy (POST, admin); idempotent."""

    permission_classes = [HasCapability.of(POLICIES_SYNC)]

    @extend_schema(
        operation_id="cluster_adopt",
        summary="Adopt the cluster's runtimes as policies",
        description="Creates a policy for each ClusterTrainingRuntime on the cluster (`?cluster=`, else the "
        "default cluster) that has none; identical ones are reported unchanged and differing ones are left alone. "
        "Idempotent.",
        parameters=[
            OpenApiParameter("cluster", OpenApiTypes.STR,
                             description="The cluster to adopt from (its name); the default cluster when absent."),
        ],
        request=None,
        responses={
            200: ss.AdoptResultSerializer,
            400: OpenApiResponse(ErrorSerializer, description="`cluster` names an unknown or disabled cluster."),
            **FORBIDDEN,
            **CLUSTER_ERRORS,
        },
        tags=TAGS,
    )
    def post(self, request):
        name = request.query_params.get("cluster")
        cluster = target_services.clusters_named([name], field="cluster")[0] if name else None
        return Response(sync.policies_adopt(actor=request.user, cluster=cluster).as_dict())


