"""REST endpoints of the placement preview: a saved policy, or an unsaved manifest sent in the body.

Both take the preview request as JSON and answer with the JSON of `runtimes.preview` (PodGroups, manifests and
their YAML, the verdict with its explanation, span, fragmentation and the rack-level heat map). Bad input is a 400
whose `error.fields[].path` names the field (`numNodes`, `resourcesPerNode.nvidia.com/gpu`, `manifest.spec…`).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from runtimes.services.preview import (
    API_VERSIONS,
    FRAGMENTATIONS,
    MAX_NUM_NODES,
    preview_manifest,
    preview_policy,
    preview_request_parse,
)
from trainer_portal.permissions import IsViewer


def _topology_serializer(name: str) -> serializers.Serializer:
    return inline_serializer(
        name=name,
        fields={
            "source": serializers.ChoiceField(choices=["synthetic", "live"], required=False, default="synthetic"),
            "zones": serializers.IntegerField(required=False, min_value=1, max_value=64, default=3),
            "blocksPerZone": serializers.IntegerField(required=False, min_value=1, max_value=256, default=8),
            "racksPerBlock": serializers.IntegerField(required=False, min_value=1, max_value=4096, default=4),
            "nodesPerRack": serializers.IntegerField(required=False, min_value=1, max_value=512, default=16),
            "gpusPerNode": serializers.IntegerField(required=False, min_value=0, max_value=64, default=8),
            "fragmentation": serializers.ChoiceField(choices=list(FRAGMENTATIONS), required=False, default="F0"),
            "seed": serializers.IntegerField(required=False, min_value=0, default=0),
        },
    )


_REQUEST_FIELDS = {
    "numNodes": serializers.IntegerField(min_value=1, max_value=MAX_NUM_NODES, help_text="TrainJob trainer.numNodes"),
    "resourcesPerNode": serializers.DictField(
        child=serializers.CharField(),
        required=False,
        help_text="Resource name → Kubernetes quantity for each trainer node, e.g. "
        '{"nvidia.com/gpu": "8", "cpu": "32", "memory": "256Gi"}. GPUs are whole numbers.',
    ),
    "apiVersion": serializers.ChoiceField(choices=list(API_VERSIONS), required=False, default=next(iter(API_VERSIONS))),
    "composite": serializers.BooleanField(required=False, default=False,
                                          help_text="Gang of gangs (CompositePodGroup, scheduling.k8s.io/v1alpha3)"),
    "trainJobName": serializers.CharField(required=False, default="preview"),
}

PreviewRequestSerializer = inline_serializer(
    name="PreviewRequest",
    fields={**_REQUEST_FIELDS, "topology": _topology_serializer("PreviewTopology")},
)
UnsavedPreviewRequestSerializer = inline_serializer(
    name="UnsavedPreviewRequest",
    fields={
        **_REQUEST_FIELDS,
        "topology": _topology_serializer("UnsavedPreviewTopology"),
        "manifest": serializers.JSONField(
            help_text="The unsaved ClusterTrainingRuntime: an object, or its YAML/JSON text as a string."
        ),
    },
)
PreviewResponseSerializer = inline_serializer(
    name="PreviewResult",
    fields={
        "request": serializers.JSONField(help_text="The validated request, defaults filled in."),
        "policy": inline_serializer(
            name="PreviewPolicy",
            fields={"name": serializers.CharField(), "saved": serializers.BooleanField()},
        ),
        "podGroups": serializers.ListField(
            child=inline_serializer(
                name="PreviewPodGroup",
                fields={
                    "kind": serializers.CharField(),
                    "name": serializers.CharField(),
                    "templateName": serializers.CharField(),
                    "level": serializers.IntegerField(),
                    "policy": serializers.ChoiceField(choices=["gang", "basic"]),
                    "minCount": serializers.IntegerField(allow_null=True),
                    "topologyKey": serializers.CharField(allow_null=True),
                    "podCount": serializers.IntegerField(),
                },
            )
        ),
        "expansion": serializers.JSONField(help_text="Pod sets, totals and warnings of the expansion."),
        "manifests": serializers.JSONField(help_text="{workload: object|null, podGroups: [objects]}"),
        "yaml": serializers.CharField(help_text="Workload and (Composite)PodGroups as one multi-document YAML."),
        "verdict": inline_serializer(
            name="PreviewVerdict",
            fields={
                "fits": serializers.BooleanField(),
                "summary": serializers.CharField(),
                "explanation": serializers.ListField(child=serializers.CharField()),
                "bindingLevel": serializers.CharField(allow_null=True),
            },
        ),
        "span": serializers.ListField(child=serializers.DictField(), help_text="[{label, value}]: zones, blocks, "
                                      "racks and nodes the whole TrainJob uses."),
        "fragmentation": serializers.ListField(child=serializers.DictField(), help_text="[{label, value}]: largest "
                                               "gang still placeable per level, free and stranded GPUs, empty racks "
                                               "(before → after)."),
        "quality": serializers.ListField(
            child=inline_serializer(
                name="PreviewQuality",
                fields={
                    "group": serializers.CharField(),
                    "pods": serializers.IntegerField(),
                    "lca": serializers.ChoiceField(choices=["node", "rack", "block", "zone", "cluster"]),
                    "racksUsed": serializers.IntegerField(),
                    "sameRackPairs": serializers.FloatField(),
                    "sameBlockPairs": serializers.FloatField(),
                    "rackBalance": serializers.FloatField(),
                },
            ),
            help_text="Locality per placed PodGroup (placement.md §8).",
        ),
        "locality": serializers.ListField(child=serializers.DictField(), help_text="The largest group's locality "
                                          "as [{label, value}] for display."),
        "placement": serializers.JSONField(help_text="The engine's result: per group fits, domain, pods per node, "
                                                     "span, explanation, fragmentation after placement."),
        "heatmap": serializers.JSONField(help_text="zones → blocks → racks with free/total GPUs and placed pods."),
        "topology": serializers.JSONField(help_text="Source, node count, label keys and snapshot age."),
        "caveat": serializers.CharField(),
        "warnings": serializers.ListField(child=serializers.CharField()),
    },
)
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


class RuntimePreviewApi(APIView):
    """Preview the PodGroups and placement of a TrainJob on a saved runtime policy."""

    permission_classes = [IsViewer]

    @extend_schema(
        operation_id="runtimes_preview",
        summary="Preview PodGroups and placement for a saved policy",
        description="Expands the policy for numNodes × resourcesPerNode as the Trainer v2.4 controller would and "
        "places the PodGroups on the chosen topology. Read-only: any viewer may call it.",
        parameters=[OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH, description="Policy name")],
        request=PreviewRequestSerializer,
        responses={200: PreviewResponseSerializer, 400: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
        examples=[_REQUEST_EXAMPLE, _ERROR_EXAMPLE],
        tags=["preview"],
    )
    def post(self, request, name: str) -> Response:
        """Return 200 with the preview; 400 for bad input; 404 when no policy is named `name`."""
        preview_request = preview_request_parse(request.data)
        return Response(preview_policy(name=name, request=preview_request))


class UnsavedPreviewApi(APIView):
    """Preview the PodGroups and placement of a TrainJob on an unsaved runtime manifest."""

    permission_classes = [IsViewer]

    @extend_schema(
        operation_id="preview_unsaved",
        summary="Preview PodGroups and placement for an unsaved policy",
        description="Same as the saved-policy preview, but the ClusterTrainingRuntime comes in the body "
        "(`manifest`: an object, or YAML/JSON text). The manifest is validated first; problems come back as 400 "
        "with paths under `manifest.`.",
        request=UnsavedPreviewRequestSerializer,
        responses={200: PreviewResponseSerializer, 400: OpenApiTypes.OBJECT},
        examples=[_ERROR_EXAMPLE],
        tags=["preview"],
    )
    def post(self, request) -> Response:
        """Return 200 with the preview; 400 for bad input or an invalid manifest."""
        data = request.data
        preview_request = preview_request_parse(data)
        manifest = data.get("manifest") if hasattr(data, "get") else None
        return Response(preview_manifest(manifest=manifest, request=preview_request))
