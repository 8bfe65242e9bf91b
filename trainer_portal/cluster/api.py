"""``GET /api/v1/cluster/`` (``?cluster=NAME``) and ``GET /api/v1/cluster/{name}/``: a cluster's last stored
connection status (any portal role); ``POST /api/v1/cluster/{name}/check/``: ask the worker to check it now. Also
the serializers (documentation of the plain data `status.stored_status` returns; keep them in step).

Nothing here reaches a cluster: the status is what the worker's background check stored, with ``checkedAt``."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer_portal.api.dialect import camel_body, wants_legacy_keys
from trainer_portal.health.selectors import background_health
from trainer_portal.health.serializers import BackgroundHealthFields
from trainer_portal.permissions import HasCapability
from trainer_portal.roles import CLUSTER_VIEW

from . import selectors, services

# The project-wide error body ({"error": {code, message, fields}}), documented once as the "Error" component.
ERROR_BODY = {"$ref": "#/components/schemas/Error"}


class ClusterVersionSerializer(serializers.Serializer):
    gitVersion = serializers.CharField(allow_blank=True)
    major = serializers.CharField(allow_blank=True)
    minor = serializers.CharField(allow_blank=True)
    platform = serializers.CharField(allow_blank=True)


class ClusterApiCheckSerializer(serializers.Serializer):
    groupVersion = serializers.CharField()
    served = serializers.BooleanField()
    error = serializers.CharField(allow_blank=True)
    hint = serializers.CharField(allow_blank=True)


class CrdSchedulingProbeSerializer(serializers.Serializer):
    accepted = serializers.BooleanField(allow_null=True, help_text="None when the probe could not run.")
    message = serializers.CharField(allow_blank=True)
    hint = serializers.CharField(allow_blank=True)


class SchedulingSupportSerializer(serializers.Serializer):
    supported = serializers.BooleanField(help_text="False when only Kubernetes 1.36 (v1alpha2) or no Workload API.")
    message = serializers.CharField(allow_blank=True)
    hint = serializers.CharField(allow_blank=True)


class TopologyGateSerializer(serializers.Serializer):
    enabled = serializers.BooleanField(allow_null=True, help_text="TopologyAwareWorkloadScheduling keeps PodGroup "
                                       "topology constraints; None when the probe could not run.")
    message = serializers.CharField(allow_blank=True)
    hint = serializers.CharField(allow_blank=True)


class DraClaimsGateSerializer(serializers.Serializer):
    enabled = serializers.BooleanField(allow_null=True, help_text="DRAWorkloadResourceClaims keeps PodGroup "
                                       "resourceClaims; None when the probe could not run.")
    message = serializers.CharField(allow_blank=True)
    hint = serializers.CharField(allow_blank=True)


class CrdSchemaSerializer(serializers.Serializer):
    present = serializers.BooleanField(help_text="False: Trainer < v2.4, or TrainJobWorkloadAwareScheduling off.")
    version = serializers.CharField(allow_blank=True)
    disruptionMode = serializers.ChoiceField(choices=["union", "string", ""],
                                             help_text="How the CRD embeds disruptionMode; '' when unknown.")
    minCount = serializers.BooleanField(allow_null=True, help_text="gang.minCount is in the embedded schema.")
    claimLevels = serializers.ListField(child=serializers.IntegerField(), help_text="Levels with resourceClaims.")
    embeddedTypes = serializers.CharField(allow_blank=True)
    summary = serializers.CharField()
    hint = serializers.CharField(allow_blank=True)


class ClusterPermissionSerializer(serializers.Serializer):
    verb = serializers.CharField()
    resource = serializers.CharField()
    namespace = serializers.CharField(allow_blank=True, required=False,
                                      help_text="The namespace the grant is checked in ('' = cluster-wide).")
    allowed = serializers.BooleanField()
    reason = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    hint = serializers.CharField(allow_blank=True)


class ClusterStatusSerializer(BackgroundHealthFields):
    """The cluster connection status; when unreachable, ``error`` and ``hint`` say why and what to do. Also the
    worker's and beat's heartbeats and the queue depth (``worker``, ``beat``, ``queueDepth``)."""

    connection = serializers.CharField()
    fieldManager = serializers.CharField()
    reachable = serializers.BooleanField()
    server = serializers.CharField(required=False, help_text="Only when reachable.")
    error = serializers.CharField(allow_blank=True)
    hint = serializers.CharField(allow_blank=True)
    version = ClusterVersionSerializer(allow_null=True)
    apis = ClusterApiCheckSerializer(many=True)
    schedulingVersions = serializers.ListField(child=serializers.CharField())
    crdScheduling = CrdSchedulingProbeSerializer(allow_null=True)
    schedulingSupport = SchedulingSupportSerializer(allow_null=True)
    topologyGate = TopologyGateSerializer(allow_null=True)
    draClaimsGate = DraClaimsGateSerializer(allow_null=True)
    crdSchema = CrdSchemaSerializer(allow_null=True)
    permissions = ClusterPermissionSerializer(many=True)
    checkedAt = serializers.FloatField(allow_null=True, help_text="Unix time of the last background check; null "
                                       "before the first.")
    elapsedMs = serializers.FloatField()
    cluster = serializers.CharField(help_text="The cluster's name.")
    checked = serializers.BooleanField(help_text="False until the worker has checked the cluster once.")
    stale = serializers.BooleanField(help_text="The last check is older than three check intervals (or none).")
    checkRequestedAt = serializers.FloatField(allow_null=True, help_text='Unix time of the last "check now".')


class CheckRequestedSerializer(serializers.Serializer):
    cluster = serializers.CharField()
    queued = serializers.BooleanField(help_text="False when a check was already asked for moments ago.")
    checkRequestedAt = serializers.FloatField()


CLUSTER_PARAM = OpenApiParameter("cluster", str, description="A cluster's name (default: the default cluster).")
_STATUS_DOC = (
    "What the worker's last background check of the cluster found (every minute, and on `POST …/check/`): how the "
    "portal connects, whether the API server answered, its version, the served APIs, whether the installed CRD "
    "keeps spec.scheduling, and the worker's permissions, with `checkedAt` and `stale`. Never waits on the cluster "
    "and never an error status for an unreachable cluster (`reachable: false` with `error` and `hint`). Keys are "
    "camelCase; until the next release each also appears under its first-release snake_case name "
    "(`field_manager`, …) unless `?dialect=camel` is given."
)
_NOT_FOUND = OpenApiResponse(ERROR_BODY, description="No cluster has that name (`error.fields[0].path` = cluster).")
_FORBIDDEN = OpenApiResponse(ERROR_BODY, description="Not logged in, or your role may not do this.")


def _status_response(request, cluster) -> Response:
    body = camel_body(selectors.cluster_status(cluster), legacy=wants_legacy_keys(request))
    return Response({**body, **background_health().as_api()})


class ClusterApi(APIView):
    """The default (or ``?cluster=``) cluster's stored connection status (GET, viewer)."""

    # Answers through `camel_body`: the schema declares `?dialect` (trainer_portal.api.schema).
    camel_dialect = True

    permission_classes = [HasCapability.of(CLUSTER_VIEW)]

    @extend_schema(
        operation_id="cluster_status",
        summary="Cluster connection status",
        description=_STATUS_DOC,
        parameters=[CLUSTER_PARAM],
        responses={200: ClusterStatusSerializer, 403: _FORBIDDEN, 404: _NOT_FOUND},
        tags=["cluster sync"],
    )
    def get(self, request):
        return _status_response(request, selectors.cluster_named(request.query_params.get("cluster")))


class ClusterNamedApi(APIView):
    """One named cluster's stored connection status (GET, viewer)."""

    # Answers through `camel_body`: the schema declares `?dialect` (trainer_portal.api.schema).
    camel_dialect = True

    permission_classes = [HasCapability.of(CLUSTER_VIEW)]

    @extend_schema(
        operation_id="cluster_status_named",
        summary="One cluster's connection status",
        description=_STATUS_DOC,
        responses={200: ClusterStatusSerializer, 403: _FORBIDDEN, 404: _NOT_FOUND},
        tags=["cluster sync"],
    )
    def get(self, request, name: str):
        return _status_response(request, selectors.cluster_named(name))


class ClusterCheckApi(APIView):
    """Ask the worker to check one cluster now (POST, viewer): 202, the check runs in the background."""

    permission_classes = [HasCapability.of(CLUSTER_VIEW)]

    @extend_schema(
        operation_id="cluster_check",
        summary="Check a cluster now",
        description="Queues a background check of the cluster (connection, APIs, CRD schema, gates, RBAC) and "
        "answers at once with 202; `GET /api/v1/cluster/{name}/` shows the result when `checkedAt` passes "
        "`checkRequestedAt`. A second request within a few seconds queues nothing (`queued: false`). 503 with "
        "Retry-After when the task queue cannot be reached.",
        request=None,
        responses={202: CheckRequestedSerializer, 403: _FORBIDDEN, 404: _NOT_FOUND,
                   503: OpenApiResponse(ERROR_BODY, description="The task queue is unreachable; retry later.")},
        tags=["cluster sync"],
    )
    def post(self, request, name: str):
        cluster = selectors.cluster_named(name)
        queued, requested_at = services.request_check(cluster)
        return Response({"cluster": cluster.name, "queued": queued, "checkRequestedAt": requested_at}, status=202)
