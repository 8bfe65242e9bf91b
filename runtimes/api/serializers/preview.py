"""Serializers of the placement preview API.

`PreviewRequestSerializer` is the API's description of the preview input AND its validation: its fields document
the request for the OpenAPI schema with the bounds of `runtimes.domain.preview` (so the schema cannot drift from
what is enforced), and validating it runs the domain parser, which reports every problem with its field path.
"""

from __future__ import annotations

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from runtimes.domain.constants import MAX_NUM_NODES
from runtimes.domain.preview import (
    API_V1BETA1,
    API_VERSIONS,
    DEFAULT_RESOURCES,
    FRAGMENTATIONS,
    SOURCE_LIVE,
    SOURCE_SYNTHETIC,
    SYNTHETIC_BOUNDS,
    PreviewRequest,
    SyntheticTopology,
)
from runtimes.services.preview import preview_request_parse
from trainer_portal.placement.quantities import GPU

_DEFAULTS = SyntheticTopology()


def _bounded(key: str, default: int) -> serializers.IntegerField:
    low, high = SYNTHETIC_BOUNDS[key]
    return serializers.IntegerField(required=False, min_value=low, max_value=high, default=default)


class PreviewTopologySerializer(serializers.Serializer):
    """Where to place: the synthetic generator's parameters, or the live cluster snapshot."""

    source = serializers.ChoiceField(
        choices=[SOURCE_SYNTHETIC, SOURCE_LIVE],
        required=False,
        help_text="Default: live when the worker has a snapshot of the cluster, else synthetic (as on the preview "
        "page). The response's topologySource says which one was used.",
    )
    zones = _bounded("zones", _DEFAULTS.zones)
    blocksPerZone = _bounded("blocksPerZone", _DEFAULTS.blocks_per_zone)
    racksPerBlock = _bounded("racksPerBlock", _DEFAULTS.racks_per_block)
    nodesPerRack = _bounded("nodesPerRack", _DEFAULTS.nodes_per_rack)
    gpusPerNode = _bounded("gpusPerNode", _DEFAULTS.gpus_per_node)
    fragmentation = serializers.ChoiceField(
        choices=list(FRAGMENTATIONS), required=False, default=_DEFAULTS.fragmentation
    )
    seed = _bounded("seed", _DEFAULTS.seed)


class PreviewRequestSerializer(serializers.Serializer):
    """What to expand and on which cluster; validating it returns the domain `PreviewRequest`.

    Raises (from ``is_valid(raise_exception=True)`` / ``validated_data``) `PreviewInputError`, whose fields name
    each problem's path (``numNodes``, ``resourcesPerNode.nvidia.com/gpu``, ``topology.zones``, …).
    """

    numNodes = serializers.IntegerField(min_value=1, max_value=MAX_NUM_NODES, help_text="TrainJob trainer.numNodes")
    resourcesPerNode = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        default=dict(DEFAULT_RESOURCES),
        help_text="Resource name → Kubernetes quantity for each trainer node, e.g. "
        f'{{"{GPU}": "8", "cpu": "32", "memory": "256Gi"}}. GPUs are whole numbers.',
    )
    apiVersion = serializers.ChoiceField(choices=list(API_VERSIONS), required=False, default=API_V1BETA1)
    composite = serializers.BooleanField(
        required=False, default=False, help_text="Gang of gangs (CompositePodGroup, scheduling.k8s.io/v1alpha3)"
    )
    trainJobName = serializers.CharField(required=False, default="preview")
    topology = PreviewTopologySerializer(required=False)

    def to_internal_value(self, data) -> PreviewRequest:
        # The domain parser is the validation: it knows cross-field rules (composite needs v1beta1, the synthetic
        # size limit, a live snapshot must exist) and reports every problem at once with its path.
        return preview_request_parse(data)

    def to_representation(self, instance: PreviewRequest) -> dict:
        return instance.echo()


class UnsavedPreviewRequestSerializer(PreviewRequestSerializer):
    """The preview request plus the unsaved ClusterTrainingRuntime to preview."""

    manifest = serializers.JSONField(
        help_text="The unsaved ClusterTrainingRuntime: an object, or its YAML/JSON text as a string."
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
            help_text="Locality per placed PodGroup (docs/reference/placement.md §8).",
        ),
        "locality": serializers.ListField(child=serializers.DictField(), help_text="The largest group's locality "
                                          "as [{label, value}] for display."),
        "placement": serializers.JSONField(help_text="The engine's result: per group fits, domain, pods per node, "
                                                     "span, explanation, fragmentation after placement."),
        "heatmap": serializers.JSONField(help_text="zones → blocks → racks with free/total GPUs and placed pods."),
        "topologySource": serializers.ChoiceField(
            choices=[SOURCE_SYNTHETIC, SOURCE_LIVE, "snapshot"],
            help_text="The topology the placement used: live (the worker's cluster snapshot), synthetic, or "
            "snapshot (one given by the caller).",
        ),
        "topology": serializers.JSONField(help_text="Source, node count, label keys and snapshot age."),
        "caveat": serializers.CharField(),
        "warnings": serializers.ListField(child=serializers.CharField()),
    },
)
