"""REST endpoint of the cluster connection status (GET cluster/)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from runtimes.api import sync_serializers as ss
from runtimes.api.serializers.policies import ErrorSerializer
from runtimes.cluster import cluster_status
from trainer_portal.permissions import IsViewer

TAGS = ["cluster sync"]
FORBIDDEN = {403: OpenApiResponse(ErrorSerializer, description="Not logged in, or your role may not do this.")}


class ClusterApi(APIView):
    """The cluster connection status (GET, viewer)."""

    permission_classes = [IsViewer]

    @extend_schema(
        operation_id="cluster_status",
        summary="Cluster connection status",
        description="How the portal connects, whether the API server answers, its version, the served APIs, "
        "whether the installed CRD keeps spec.scheduling, and the worker's permissions. Never an error status: "
        "an unreachable cluster has `reachable: false` with `error` and `hint`.",
        responses={200: ss.ClusterStatusSerializer, **FORBIDDEN},
        tags=TAGS,
    )
    def get(self, request):
        return Response(cluster_status())
