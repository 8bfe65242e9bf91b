"""Serializers of the cluster sync API: inputs, sync status, bulk progress, impact, drift, adoption, cluster errors."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from runtimes.api.serializers.policies import PolicyClusterSyncSerializer, cluster_sync_rows
from runtimes.choices import SyncState
from trainer_portal.api.schema import ErrorSerializer

# --------------------------------------------------------------------------------------------------- inputs

MAX_CLUSTERS = 100


def clusters_field(help_text: str) -> serializers.ListField:
    """Return the optional ``clusters`` input: cluster names (an unknown one answers 400 naming ``clusters``)."""
    return serializers.ListField(
        child=serializers.CharField(max_length=63), required=False, allow_empty=False, max_length=MAX_CLUSTERS,
        help_text=help_text,
    )


class BulkSyncInputSerializer(serializers.Serializer):
    """Body of POST /runtimes/sync/: the policies to sync (every policy when ``names`` is omitted)."""

    names = serializers.ListField(
        child=serializers.CharField(max_length=253),
        required=False,
        allow_empty=False,
        help_text="Policy names; omit to sync every policy.",
    )
    clusters = clusters_field("Sync to these clusters only; omit to sync each policy to its target clusters.")
    confirmStartupDeadlock = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Apply policies whose gang never reaches minCount (startup order) too; without it they are named "
        "in a 409 and nothing is queued.",
    )


class SyncRequestInputSerializer(serializers.Serializer):
    """Optional body of POST /runtimes/{name}/sync/."""

    confirmStartupDeadlock = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Apply although a gang never reaches minCount (a dependsOn pair inside one gang); kept in the "
        "sync status as startupDeadlockConfirmed.",
    )
    clusters = clusters_field("Sync to these clusters only; omit to sync to the policy's target clusters.")


class DriftResolveInputSerializer(serializers.Serializer):
    """Body of POST /runtimes/{name}/drift/resolve/."""

    action = serializers.ChoiceField(
        choices=["reapply", "adopt"],
        help_text="reapply: force our applied revision onto the cluster (202); adopt: save the live object as a new "
        "revision (200).",
    )
    clusters = clusters_field("The clusters whose drift to resolve; omit for every target cluster where the policy "
                              "is drifted (an adopt needs exactly one).")


class DriftCheckInputSerializer(serializers.Serializer):
    """Optional body of POST /runtimes/{name}/drift/check/."""

    clusters = clusters_field("Check these clusters only; omit to check every target cluster.")


class TargetClustersInputSerializer(serializers.Serializer):
    """Body of PUT /runtimes/{name}/clusters/."""

    targetClusters = serializers.ListField(
        child=serializers.CharField(max_length=63), allow_empty=True, max_length=MAX_CLUSTERS,
        help_text="Cluster names the policy syncs to; [] = every enabled cluster. Clusters dropped keep what was "
        "applied there (delete it from the cluster explicitly).",
    )
    expectedTargetClusters = serializers.ListField(
        child=serializers.CharField(max_length=63), allow_empty=True, max_length=MAX_CLUSTERS, required=False,
        help_text="The `targetClusters` you last read. When given and someone changed them since, nothing is "
        "changed and the answer is 409: read them again and choose again.",
    )


class TargetClustersSerializer(serializers.Serializer):
    """A policy's chosen target clusters and where it stands on each target."""

    name = serializers.CharField()
    targetClusters = serializers.ListField(child=serializers.CharField(), help_text="[] = every enabled cluster.")
    clusters = PolicyClusterSyncSerializer(many=True)


# --------------------------------------------------------------------------------------------------- sync status


class SyncErrorFieldSerializer(serializers.Serializer):
    """A field the cluster named when it refused the last apply."""

    path = serializers.CharField(allow_blank=True)
    message = serializers.CharField(allow_blank=True)
    reason = serializers.CharField(allow_blank=True)


class IsoDateTimeField(serializers.DateTimeField):
    """A datetime as Python's ``isoformat()`` writes it (``+00:00``, microseconds kept), as the API always has."""

    def to_representation(self, value):
        return value.isoformat() if value else None


class SyncStatusSerializer(serializers.Serializer):
    """Where one policy stands relative to its target clusters (serialises a RuntimePolicy).

    The top-level fields are the policy-wide view (`runtimes.domain.status.summarize`: the most urgent state, the
    revision applied everywhere; resourceVersion and generation of the default cluster); with one target cluster
    they are that cluster's own. `clusters` has each cluster's facts.
    """

    name = serializers.CharField()
    version = serializers.IntegerField(help_text="The policy's current revision.")
    state = serializers.ChoiceField(source="sync_state", choices=SyncState.choices)
    requestedRevision = serializers.IntegerField(
        source="sync_requested_revision", allow_null=True, help_text="Revision last queued for syncing."
    )
    appliedRevision = serializers.IntegerField(
        source="applied_revision", allow_null=True, help_text="Revision live on the cluster."
    )
    resourceVersion = serializers.CharField(source="applied_resource_version", allow_blank=True)
    generation = serializers.IntegerField(source="applied_generation", allow_null=True)
    lastSyncedAt = IsoDateTimeField(source="last_synced_at", allow_null=True)
    error = serializers.CharField(
        source="last_sync_error", allow_blank=True, help_text="Why the last sync failed ('' when it did not)."
    )
    errorFields = SyncErrorFieldSerializer(source="sync_error_fields", many=True)
    driftDiff = serializers.CharField(
        source="drift_diff", allow_blank=True, help_text="Unified diff portal → cluster when drifted."
    )
    startupDeadlockConfirmed = serializers.BooleanField(
        source="sync_startup_deadlock_confirmed",
        help_text="The last apply request confirmed that a gang never reaches minCount (startup order).",
    )
    upToDate = serializers.SerializerMethodField(
        help_text="Synced, and the applied revision is the current one, on every target cluster."
    )
    clusters = serializers.SerializerMethodField(help_text="The same facts per target cluster.")

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_upToDate(self, policy) -> bool:
        return policy.sync_state == SyncState.SYNCED and policy.applied_revision == policy.version

    @extend_schema_field(PolicyClusterSyncSerializer(many=True))
    def get_clusters(self, policy) -> list[dict]:
        return cluster_sync_rows(policy)


class SyncAcceptedSerializer(serializers.Serializer):
    """202 answer of a queued sync; poll ``statusUrl`` (also in the Location header)."""

    name = serializers.CharField()
    clusters = serializers.ListField(child=serializers.CharField(), help_text="The clusters it is queued for.")
    revision = serializers.IntegerField(help_text="The revision that will be applied.")
    state = serializers.ChoiceField(choices=SyncState.choices)
    statusUrl = serializers.CharField()


class BulkSyncAcceptedSerializer(serializers.Serializer):
    """202 answer of a bulk sync; poll ``statusUrl`` (also in the Location header) for progress."""

    batch = serializers.CharField(help_text="Bulk sync batch id.")
    job = serializers.CharField(help_text="Deprecated: the same id as `batch` (kept for one release).")
    total = serializers.IntegerField()
    statusUrl = serializers.CharField()


# --------------------------------------------------------------------------------------------------- bulk progress


class SyncBatchFailureSerializer(serializers.Serializer):
    name = serializers.CharField()
    cluster = serializers.CharField()
    error = serializers.CharField(allow_blank=True)


class SyncBatchItemSerializer(serializers.Serializer):
    """One (policy, cluster) pair of a bulk sync."""

    name = serializers.CharField()
    cluster = serializers.CharField()
    revision = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["pending", "succeeded", "failed"])
    state = serializers.ChoiceField(choices=SyncState.choices)
    error = serializers.CharField(allow_blank=True, help_text="The cluster's message when the item failed.")
    errorFields = SyncErrorFieldSerializer(
        many=True, help_text="The fields the cluster named (also `error_fields` until the next release)."
    )


class SyncBatchProgressSerializer(serializers.Serializer):
    """Progress of a bulk sync over (policy, cluster) pairs; items whose policy was deleted count as done."""

    id = serializers.CharField()
    createdAt = serializers.DateTimeField(help_text="Also `created_at` until the next release.")
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = SyncBatchFailureSerializer(many=True)
    pending = serializers.IntegerField()
    finished = serializers.BooleanField()
    items = SyncBatchItemSerializer(many=True)


# --------------------------------------------------------------------------------------------------- impact


class ImpactTrainJobSerializer(serializers.Serializer):
    namespace = serializers.CharField()
    name = serializers.CharField()
    created = serializers.CharField(allow_blank=True, help_text="creationTimestamp")
    state = serializers.CharField(help_text="The TrainJob's latest true condition (Complete, Failed…), else Pending.")
    cluster = serializers.CharField(help_text="The cluster the TrainJob runs on.")


class ImpactPodGroupSerializer(serializers.Serializer):
    template = serializers.CharField()
    level = serializers.IntegerField()
    policy = serializers.ChoiceField(choices=["gang", "basic"])
    minCount = serializers.IntegerField(allow_null=True)
    topologyKey = serializers.CharField(allow_null=True)
    replicatedJobs = serializers.ListField(child=serializers.CharField())
    podCount = serializers.IntegerField()
    kind = serializers.CharField()


class ImpactSideSerializer(serializers.Serializer):
    """The PodGroups one revision produces for ``numNodes``."""

    podGroups = ImpactPodGroupSerializer(many=True)
    error = serializers.CharField(allow_blank=True)
    totalPods = serializers.IntegerField()


class SyncImpactSerializer(serializers.Serializer):
    """What applying the current revision changes: old = the applied revision, new = the current one.

    Keys are camelCase; until the next release each renamed key also appears under its first-release snake_case
    name (``num_nodes``, ``pod_groups``, …) unless ``?dialect=camel`` is given.
    """

    note = serializers.CharField()
    trainjobs = ImpactTrainJobSerializer(many=True, help_text="TrainJobs whose runtimeRef names this runtime.")
    trainjobsError = serializers.CharField(allow_blank=True, help_text="Why TrainJobs could not be listed.")
    numNodes = serializers.IntegerField()
    old = ImpactSideSerializer()
    new = ImpactSideSerializer()
    yamlDiff = serializers.CharField(allow_blank=True)


# --------------------------------------------------------------------------------------------------- drift


class DriftChangeSerializer(serializers.Serializer):
    path = serializers.CharField()
    op = serializers.CharField(help_text="added, removed or changed")
    ours = serializers.JSONField(allow_null=True, help_text="Value the applied revision gives.")
    live = serializers.JSONField(allow_null=True, help_text="Value on the cluster.")


class DriftClusterCheckSerializer(serializers.Serializer):
    """The drift found on one cluster (``checked`` False: the policy is not applied there, nothing to compare)."""

    cluster = serializers.CharField()
    checked = serializers.BooleanField()
    drifted = serializers.BooleanField()
    missing = serializers.BooleanField(help_text="The object is gone from this cluster.")
    changes = DriftChangeSerializer(many=True)
    managers = serializers.ListField(child=serializers.CharField())
    diff = serializers.CharField(allow_blank=True)


class DriftCheckSerializer(serializers.Serializer):
    """The drift found now. The top-level fields are the first drifted cluster's (default cluster first), else
    the default cluster's; `clusters` has every checked cluster."""

    drifted = serializers.BooleanField(help_text="Drifted on at least one checked cluster.")
    missing = serializers.BooleanField(help_text="The object is gone from the cluster.")
    changes = DriftChangeSerializer(many=True)
    managers = serializers.ListField(child=serializers.CharField(), help_text="Other field managers that changed it.")
    diff = serializers.CharField(allow_blank=True)
    clusters = DriftClusterCheckSerializer(many=True)
    sync = SyncStatusSerializer()


class DriftResolvedSerializer(serializers.Serializer):
    # A plain string: a second component with the same choice set would make drf-spectacular's enum naming collide.
    action = serializers.CharField(help_text="The action taken: reapply or adopt.")
    sync = SyncStatusSerializer()
    statusUrl = serializers.CharField()





class AdoptFailureSerializer(serializers.Serializer):
    name = serializers.CharField()
    error = serializers.CharField()


class AdoptResultSerializer(serializers.Serializer):
    """What adopting the cluster's ClusterTrainingRuntimes did (idempotent)."""

    created = serializers.ListField(child=serializers.CharField())
    unchanged = serializers.ListField(child=serializers.CharField(), help_text="Already identical policies.")
    differing = serializers.ListField(child=serializers.CharField(), help_text="Policies that differ; left alone.")
    failed = AdoptFailureSerializer(many=True)


# --------------------------------------------------------------------------------------------------- errors

# 502/503 cluster failures have the one error body; its `error.cluster` says what the Kubernetes API answered.
ClusterErrorSerializer = ErrorSerializer
