"""REST endpoints of the placement preview: a saved policy, or an unsaved manifest sent in the body.

Both take the preview request as JSON and answer with the JSON of `runtimes.services.preview` (PodGroups, manifests and
their YAML, the verdict with its explanation, span, fragmentation and the rack-level heat map). Bad input is a 400
whose `error.fields[].path` names the field (`numNodes`, `resourcesPerNode.nvidia.com/gpu`, `manifest.spec…`).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from runtimes.api.serializers.preview import (
    PreviewRequestSerializer,
    PreviewResponseSerializer,
    UnsavedPreviewRequestSerializer,
)
from runtimes.domain.preview import PreviewRequest
from runtimes.services.preview import (
    preview_manifest,
    preview_policy,
)
from trainer_portal.api.schema import ErrorSerializer
from trainer_portal.permissions import HasCapability
from trainer_portal.roles import PREVIEW_RUN

_ERROR_EXAMPLE = OpenApiExample(
    "numNodes out of range",
    status_codes=["400"],
    response_only=True,
    value={
        "error": {
            "code": "invalid",
            "message": "numNodes: must be from 1 to 100,000; got 0",
            "fields": [{"path": "numNodes", "message": "must be from 1 to 100,000; got 0", "code": "invalid"}],
            "status": 400,
        }
    },
)
_REQUEST_EXAMPLE = OpenApiExample(
    "64 nodes × 8 GPUs on a fragmented synthetic cluster",
    request_only=True,
    value={
        "numNodes": 64,
        "resourcesPerNode": {"nvidia.com/gpu": "8", "cpu": "32", "memory": "256Gi"},
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "composite": False,
        "topology": {"source": "synthetic", "zones": 2, "blocksPerZone": 4, "racksPerBlock": 4, "nodesPerRack": 8,
                     "gpusPerNode": 8, "fragmentation": "F5", "seed": 1},
    },
)


_CLUSTER_PARAM = OpenApiParameter("cluster", OpenApiTypes.STR, description="Whose live topology a live source "
                                  "places on (a cluster's name; default: the default cluster).")


def _cluster(request) -> str | None:
    return request.query_params.get("cluster") or None


def _validated(serializer_class, data) -> PreviewRequest:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class RuntimePreviewApi(APIView):
    """Preview the PodGroups and placement of a TrainJob on a saved runtime policy."""

    permission_classes = [HasCapability.of(PREVIEW_RUN)]

    @extend_schema(
        operation_id="runtimes_preview",
        summary="Preview PodGroups and placement for a saved policy",
        description="Expands the policy for numNodes × resourcesPerNode as the Trainer v2.4 controller would and "
        "places the PodGroups on the chosen topology. Read-only: any viewer may call it.",
        parameters=[OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH, description="Policy name"),
                    _CLUSTER_PARAM],
        request=PreviewRequestSerializer,
        responses={
            200: PreviewResponseSerializer,
            404: OpenApiResponse(ErrorSerializer, description="No policy with this name."),
        },
        examples=[_REQUEST_EXAMPLE, _ERROR_EXAMPLE],
        tags=["preview"],
    )
    def post(self, request, name: str) -> Response:
        """Return 200 with the preview; 400 for bad input; 404 when no policy is named `name`."""
        preview_request = _validated(PreviewRequestSerializer, request.data)
        return Response(preview_policy(name=name, request=preview_request, cluster=_cluster(request)))


class UnsavedPreviewApi(APIView):
    """Preview the PodGroups and placement of a TrainJob on an unsaved runtime manifest."""

    permission_classes = [HasCapability.of(PREVIEW_RUN)]

    @extend_schema(
        operation_id="preview_unsaved",
        summary="Preview PodGroups and placement for an unsaved policy",
        description="Same as the saved-policy preview, but the ClusterTrainingRuntime comes in the body "
        "(`manifest`: an object, or YAML/JSON text). The manifest is validated first; problems come back as 400 "
        "with paths under `manifest.`.",
        parameters=[_CLUSTER_PARAM],
        request=UnsavedPreviewRequestSerializer,
        responses={200: PreviewResponseSerializer},
        examples=[_ERROR_EXAMPLE],
        tags=["preview"],
    )
    def post(self, request) -> Response:
        """Return 200 with the preview; 400 for bad input or an invalid manifest."""
        data = request.data
        preview_request = _validated(UnsavedPreviewRequestSerializer, data)
        manifest = data.get("manifest") if hasattr(data, "get") else None
        return Response(preview_manifest(manifest=manifest, request=preview_request, cluster=_cluster(request)))
