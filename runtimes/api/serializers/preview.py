"""Serializers of the placement preview API.

`PreviewRequestSerializer` is the API's description of the preview input AND its validation: its fields document
the request for the OpenAPI schema with the bounds of `runtimes.domain.preview` (so the schema cannot drift from
what is enforced), and validating it runs the domain parser, which reports every problem with its field path.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
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


# --------------------------------------------------------------------------------------------------- response
# Every key the preview answers with is declared (a test validates real answers with undeclared keys refused):
# typed clients generated from the schema get all of it. The Kubernetes objects under `manifests` are the one
# free-form part: they are Workload and PodGroup manifests as the controller would create them.

_LEVELS = ["node", "rack", "block", "zone", "cluster"]


class PreviewPolicySerializer(serializers.Serializer):
    name = serializers.CharField()
    saved = serializers.BooleanField(help_text="False for an unsaved manifest sent in the body.")


class PreviewDomainSerializer(serializers.Serializer):
    """The topology domain a group was placed in."""

    level = serializers.CharField(help_text="zone, block, rack, host or cluster")
    key = serializers.CharField(allow_null=True, help_text="The node label of that level.")
    value = serializers.CharField(allow_null=True, help_text="The label value (the domain's name).")
    path = serializers.ListField(child=serializers.CharField(), help_text="zone → block → rack names down to it.")


class PreviewSpanSerializer(serializers.Serializer):
    """How many zones, blocks, racks and nodes the pods use."""

    zones = serializers.IntegerField()
    blocks = serializers.IntegerField()
    racks = serializers.IntegerField()
    nodes = serializers.IntegerField()


class PreviewGroupSummarySerializer(serializers.Serializer):
    """A PodGroup's placement, in short."""

    fits = serializers.BooleanField()
    short = serializers.CharField(help_text='e.g. "rack rack-00000 · 4 nodes"')
    summary = serializers.CharField()
    domain = PreviewDomainSerializer(allow_null=True)
    span = PreviewSpanSerializer()


class PreviewPodGroupSerializer(serializers.Serializer):
    """One (Composite)PodGroup the Trainer controller would create, and where it lands."""

    kind = serializers.CharField(help_text="PodGroup or CompositePodGroup")
    name = serializers.CharField()
    templateName = serializers.CharField()
    level = serializers.IntegerField()
    policy = serializers.ChoiceField(choices=["gang", "basic"])
    minCount = serializers.IntegerField(allow_null=True)
    minGroupCount = serializers.IntegerField(allow_null=True, help_text="CompositePodGroup: children that must fit.")
    topologyKey = serializers.CharField(allow_null=True)
    replicatedJobs = serializers.ListField(child=serializers.CharField())
    jobIndex = serializers.IntegerField(allow_null=True, help_text="Per-job groups: the job's index.")
    podCount = serializers.IntegerField()
    disruptionMode = serializers.CharField(allow_null=True)
    parent = serializers.CharField(allow_null=True, help_text="The CompositePodGroup this group belongs to.")
    resourceClaims = serializers.ListField(child=serializers.DictField(), help_text="The group's resourceClaims "
                                           "entries ({name, resourceClaimName | resourceClaimTemplateName}).")
    placement = PreviewGroupSummarySerializer(allow_null=True)


class PreviewPodSetSerializer(serializers.Serializer):
    replicatedJob = serializers.CharField()
    replicas = serializers.IntegerField()
    podsPerReplica = serializers.IntegerField()
    count = serializers.IntegerField(help_text="Pods of this ReplicatedJob.")
    ancestor = serializers.CharField(allow_blank=True, allow_null=True)
    resourcesPerPod = serializers.DictField(child=serializers.CharField(), help_text="Resource → quantity.")
    sharedClaims = serializers.ListField(child=serializers.CharField())


class PreviewExpansionSerializer(serializers.Serializer):
    """What the TrainJob expands to: pod sets, totals and warnings."""

    trainjob = serializers.CharField()
    namespace = serializers.CharField()
    apiVersion = serializers.CharField()
    numNodes = serializers.IntegerField()
    workloadName = serializers.CharField()
    composite = serializers.BooleanField()
    totalPods = serializers.IntegerField()
    totalResources = serializers.DictField(child=serializers.CharField())
    podSets = PreviewPodSetSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField())


@extend_schema_field({"type": "object", "additionalProperties": True,
                      "description": "A Kubernetes object (apiVersion, kind, metadata, spec)."})
class KubernetesObjectField(serializers.JSONField):
    """A Kubernetes manifest, free-form by nature."""


class PreviewManifestsSerializer(serializers.Serializer):
    workload = KubernetesObjectField(allow_null=True, help_text="The scheduling.k8s.io Workload (null: none).")
    podGroups = serializers.ListField(child=KubernetesObjectField(), help_text="(Composite)PodGroups in creation "
                                      "order.")


class PreviewVerdictSerializer(serializers.Serializer):
    fits = serializers.BooleanField()
    summary = serializers.CharField()
    explanation = serializers.ListField(child=serializers.CharField())
    bindingLevel = serializers.CharField(allow_null=True)
    startupDeadlock = serializers.BooleanField(help_text="A gang never reaches minCount: a dependsOn pair inside "
                                               "one gang (startup order).")


class LabelValueSerializer(serializers.Serializer):
    label = serializers.CharField()
    value = serializers.JSONField(help_text="A number or a text.")


class PreviewQualitySerializer(serializers.Serializer):
    group = serializers.CharField()
    pods = serializers.IntegerField()
    lca = serializers.ChoiceField(choices=_LEVELS)
    racksUsed = serializers.IntegerField()
    sameRackPairs = serializers.FloatField()
    sameBlockPairs = serializers.FloatField()
    rackBalance = serializers.FloatField()


class PlacementExplanationSerializer(serializers.Serializer):
    """Why a group does not fit: the binding level, the best domain's have vs need, exclusions, alternatives."""

    bindingLevel = serializers.CharField()
    bestDomain = serializers.CharField(allow_null=True)
    have = serializers.IntegerField()
    need = serializers.IntegerField()
    unit = serializers.CharField()
    totalNodes = serializers.IntegerField()
    excluded = serializers.DictField(child=serializers.IntegerField(), help_text="Reason → nodes excluded.")
    alternatives = serializers.ListField(child=serializers.CharField())
    message = serializers.CharField(allow_blank=True)


class PlacementRackSerializer(serializers.Serializer):
    zone = serializers.CharField()
    block = serializers.CharField()
    rack = serializers.CharField()
    pods = serializers.IntegerField()


class PlacementGroupSerializer(serializers.Serializer):
    """The placement engine's answer for one group."""

    name = serializers.CharField()
    kind = serializers.CharField()
    policy = serializers.CharField()
    level = serializers.IntegerField()
    topologyKey = serializers.CharField(allow_null=True)
    podCount = serializers.IntegerField()
    minCount = serializers.IntegerField(allow_null=True)
    fits = serializers.BooleanField()
    placed = serializers.IntegerField()
    domain = PreviewDomainSerializer(allow_null=True)
    podsPerNode = serializers.DictField(child=serializers.IntegerField(), help_text="Node name → pods placed.")
    span = PreviewSpanSerializer()
    racks = PlacementRackSerializer(many=True)
    message = serializers.CharField()
    explanation = PlacementExplanationSerializer(allow_null=True)
    parent = serializers.CharField(allow_null=True)


class FragmentationSerializer(serializers.Serializer):
    gpusPerPod = serializers.IntegerField()
    largestGang = serializers.DictField(child=serializers.IntegerField(), help_text="Level → the largest gang "
                                        "(pods) still placeable in one domain of it.")
    strandedGpus = serializers.IntegerField()
    emptyRacks = serializers.IntegerField()
    freeGpus = serializers.IntegerField()


class FragmentationChangeSerializer(serializers.Serializer):
    before = FragmentationSerializer(allow_null=True)
    after = FragmentationSerializer(allow_null=True)


class PlacementResultSerializer(serializers.Serializer):
    """The engine's result: per group fits, domain, pods per node, span, explanation; fragmentation after."""

    fits = serializers.BooleanField()
    message = serializers.CharField()
    groups = PlacementGroupSerializer(many=True)
    fragmentation = FragmentationChangeSerializer()
    snapshotVersion = serializers.IntegerField()
    totalNodes = serializers.IntegerField()


class TopologyKeysSerializer(serializers.Serializer):
    zone = serializers.CharField()
    block = serializers.CharField()
    rack = serializers.CharField()
    host = serializers.CharField()


class HeatmapRackSerializer(serializers.Serializer):
    name = serializers.CharField()
    free = serializers.IntegerField()
    total = serializers.IntegerField()
    nodes = serializers.IntegerField()
    bucket = serializers.IntegerField(help_text="Free-GPU share bucket (0–5) for the colour.")
    placed = serializers.IntegerField()
    near = serializers.BooleanField()


class HeatmapBlockSerializer(serializers.Serializer):
    name = serializers.CharField()
    free = serializers.IntegerField()
    total = serializers.IntegerField()
    nodes = serializers.IntegerField()
    placed = serializers.IntegerField()
    near = serializers.BooleanField()
    racks = HeatmapRackSerializer(many=True)


class HeatmapZoneSerializer(HeatmapBlockSerializer):
    racks = None
    blocks = HeatmapBlockSerializer(many=True)


class HeatmapSerializer(serializers.Serializer):
    """zones → blocks → racks with free/total GPUs and placed pods."""

    zones = HeatmapZoneSerializer(many=True)
    rackCount = serializers.IntegerField()
    nodeCount = serializers.IntegerField()
    placedRacks = serializers.IntegerField()
    freeGpus = serializers.IntegerField()
    totalGpus = serializers.IntegerField()
    keys = TopologyKeysSerializer()
    label = serializers.CharField()


class PreviewTopologyInfoSerializer(serializers.Serializer):
    source = serializers.CharField()
    description = serializers.CharField()
    nodes = serializers.IntegerField()
    keys = TopologyKeysSerializer()
    ageSeconds = serializers.FloatField(allow_null=True, help_text="Age of the live snapshot (null: synthetic).")


class PreviewResultSerializer(serializers.Serializer):
    """The preview: PodGroups, their manifests and YAML, the verdict, span, fragmentation and the heat map."""

    request = PreviewRequestSerializer(help_text="The validated request, defaults filled in.")
    policy = PreviewPolicySerializer()
    podGroups = PreviewPodGroupSerializer(many=True)
    expansion = PreviewExpansionSerializer()
    manifests = PreviewManifestsSerializer()
    yaml = serializers.CharField(help_text="Workload and (Composite)PodGroups as one multi-document YAML.")
    verdict = PreviewVerdictSerializer()
    span = LabelValueSerializer(many=True, help_text="Zones, blocks, racks and nodes the whole TrainJob uses.")
    fragmentation = LabelValueSerializer(many=True, help_text="Largest gang still placeable per level, free and "
                                         "stranded GPUs, empty racks (before → after).")
    quality = PreviewQualitySerializer(many=True, help_text="Locality per placed PodGroup.")
    locality = LabelValueSerializer(many=True, help_text="The largest group's locality, for display.")
    placement = PlacementResultSerializer(allow_null=True)
    heatmap = HeatmapSerializer(allow_null=True)
    topologySource = serializers.ChoiceField(
        choices=[SOURCE_SYNTHETIC, SOURCE_LIVE, "snapshot"],
        help_text="The topology the placement used: live (the worker's cluster snapshot), synthetic, or "
        "snapshot (one given by the caller).",
    )
    topology = PreviewTopologyInfoSerializer()
    caveat = serializers.CharField(allow_blank=True)
    warnings = serializers.ListField(child=serializers.CharField())


# The name the views use; the schema component keeps its first name, PreviewResult.
PreviewResponseSerializer = PreviewResultSerializer
