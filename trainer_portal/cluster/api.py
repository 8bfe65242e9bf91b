"""``GET /api/v1/cluster/``: the cluster connection status (any portal role), and its serializers (documentation of
the plain data `status.cluster_status` returns; keep them in step)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer_portal.api.dialect import camel_body, wants_legacy_keys
from trainer_portal.health.selectors import background_health
from trainer_portal.health.serializers import BackgroundHealthFields
from trainer_portal.permissions import IsViewer

from . import selectors

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
    crdSchema = CrdSchemaSerializer(allow_null=True)
    permissions = ClusterPermissionSerializer(many=True)
    checkedAt = serializers.FloatField(help_text="Unix time of the check.")
    elapsedMs = serializers.FloatField()


class ClusterApi(APIView):
    """The cluster connection status (GET, viewer)."""

    # Answers through `camel_body`: the schema declares `?dialect` (trainer_portal.api.schema).
    camel_dialect = True

    permission_classes = [IsViewer]

    @extend_schema(
        operation_id="cluster_status",
        summary="Cluster connection status",
        description="How the portal connects, whether the API server answers, its version, the served APIs, "
        "whether the installed CRD keeps spec.scheduling, and the worker's permissions. Never an error status: "
        "an unreachable cluster has `reachable: false` with `error` and `hint`. Keys are camelCase; until the "
        "next release each also appears under its first-release snake_case name (`field_manager`, …) unless "
        "`?dialect=camel` is given.",
        responses={200: ClusterStatusSerializer,
                   403: OpenApiResponse(ERROR_BODY, description="Not logged in, or your role may not do this.")},
        tags=["cluster sync"],
    )
    def get(self, request):
        body = camel_body(selectors.cluster_status(), legacy=wants_legacy_keys(request))
        return Response({**body, **background_health().as_api()})
