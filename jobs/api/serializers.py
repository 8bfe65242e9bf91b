"""Shapes of the TrainJob REST API (camelCase JSON). All read-only: the API never changes a TrainJob."""

from __future__ import annotations

import datetime as dt

from rest_framework import serializers

from jobs.choices import AdmissionState, SchedulingLevel
from jobs.selectors import DEFAULT_LIMIT, DEFAULT_SORT, MAX_LIMIT, SORTS


class ApiTimeField(serializers.DateTimeField):
    """A time as the whole TrainJob API writes it: UTC, whole seconds, ``Z`` ("2026-12-01T12:04:35Z"), the way
    Kubernetes writes its timestamps, so times from the cluster and from the tracker look alike."""

    def to_representation(self, value):
        """Return ``value`` in the API's one time format (None stays None)."""
        if value is None:
            return None
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ListQuerySerializer(serializers.Serializer):
    """Query parameters of ``GET /api/v1/trainjobs/`` (comma-separated lists for state and level)."""

    cluster = serializers.CharField(required=False, max_length=63,
                                    help_text="Only this cluster (its name); every cluster when absent.")
    namespace = serializers.CharField(required=False, max_length=63, help_text="Only this namespace.")
    state = serializers.CharField(required=False, max_length=400,
                                  help_text=f"Comma-separated states: {', '.join(AdmissionState.values)}.")
    runtime = serializers.CharField(required=False, max_length=253, help_text="Only jobs of this runtime.")
    level = serializers.CharField(required=False, max_length=200,
                                  help_text=f"Comma-separated levels: {', '.join(SchedulingLevel.values)}.")
    queue = serializers.CharField(required=False, max_length=253, help_text="Only jobs of this Kueue LocalQueue.")
    search = serializers.CharField(required=False, max_length=200,
                                   help_text="Substring of name, namespace, runtime, creator or reason.")
    sort = serializers.ChoiceField(choices=list(SORTS), required=False, default=DEFAULT_SORT,
                                   help_text="Row order; the id breaks ties, so rows never reshuffle.")
    cursor = serializers.CharField(required=False, max_length=1000, help_text="The `cursor` of the previous page.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, default=DEFAULT_LIMIT)
    gone = serializers.BooleanField(required=False, default=False,
                                    help_text="Include TrainJobs already deleted from the cluster.")


class SummaryQuerySerializer(serializers.Serializer):
    """Query parameters of ``GET /api/v1/trainjobs/summary/``."""

    cluster = serializers.CharField(required=False, max_length=63,
                                    help_text="Only this cluster (its name); every cluster when absent.")
    namespace = serializers.CharField(required=False, max_length=63, help_text="Only this namespace.")


class PodGroupSerializer(serializers.Serializer):
    """One PodGroup of a TrainJob: policy, minCount and how many members are bound ("63 / 64")."""

    name = serializers.CharField()
    policy = serializers.CharField(help_text="gang, basic or unknown.")
    minCount = serializers.IntegerField(allow_null=True)
    bound = serializers.IntegerField(help_text="Member pods with a node.")
    members = serializers.IntegerField(required=False, help_text="Member pods that exist.")
    condition = serializers.CharField(allow_blank=True, help_text="e.g. PodGroupInitiallyScheduled=False.")
    reason = serializers.CharField(allow_blank=True)
    message = serializers.CharField(allow_blank=True)
    topologyKey = serializers.CharField(required=False, allow_blank=True)


class QueuePlaceSerializer(serializers.Serializer):
    """Where the job is in Kueue's line (null on the TrainJob when Kueue does not manage it)."""

    localQueue = serializers.CharField(allow_null=True, help_text="The LocalQueue (the job's queue-name label).")
    clusterQueue = serializers.CharField(allow_null=True, help_text="Its ClusterQueue, null while unknown.")
    position = serializers.IntegerField(allow_null=True, min_value=1,
                                        help_text="1-based position in `positionIn`; null when unknown.")
    positionIn = serializers.ChoiceField(choices=["LocalQueue", "ClusterQueue"], allow_null=True,
                                         help_text="Which queue the position counts in.")
    pendingInQueue = serializers.IntegerField(allow_null=True, help_text="Pending workloads in that queue.")
    positionSource = serializers.CharField(
        help_text='"visibility-api" when Kueue\'s visibility API said; "unknown" when it is missing, refused us, '
                  "or nobody asked yet.")


class StartEstimateSerializer(serializers.Serializer):
    """When the waiting job is likely to start (quantiles of a simulated start); times null when not estimable."""

    p10 = ApiTimeField(allow_null=True)
    p50 = ApiTimeField(allow_null=True)
    p90 = ApiTimeField(allow_null=True)
    basis = serializers.CharField(help_text="What the estimate rests on, or why there is none.")
    computedAt = ApiTimeField()


class TrackingSerializer(serializers.Serializer):
    """Whether the states shown are current ("tracking stale since 12:04 — cluster unreachable")."""

    stale = serializers.BooleanField()
    since = ApiTimeField(allow_null=True)
    why = serializers.CharField(allow_blank=True)
    message = serializers.CharField()


_TIME = ApiTimeField()
_POD_GROUP_KEYS = ("name", "policy", "minCount", "bound", "condition", "reason", "message")
_POD_GROUP_OPTIONAL = ("members", "topologyKey")


class TrainJobSerializer(serializers.Serializer):
    """A TrainJob as the list shows it.

    ``to_representation`` builds the dict directly: a page of 50 rows through DRF's generic field machinery cost
    most of the request. ``generic_representation`` is DRF's own output, and a test holds the two equal.
    """

    cluster = serializers.CharField(source="cluster.name", help_text="Name of the cluster the TrainJob runs on.")
    namespace = serializers.CharField()
    name = serializers.CharField()
    uid = serializers.CharField()
    runtime = serializers.CharField(source="runtime_name")
    runtimeKind = serializers.CharField(source="runtime_kind")
    state = serializers.ChoiceField(choices=AdmissionState.choices)
    reasonCode = serializers.CharField(source="reason", help_text="Code of the one leading reason (stable).")
    reason = serializers.CharField(source="short_reason",
                                   help_text='The reason in a few words ("3 of 64 pods placed"), for lists.')
    message = serializers.CharField(help_text="The full reason, for humans.")
    since = ApiTimeField(help_text="When the job entered its current state.")
    submittedAt = ApiTimeField(source="submitted_at")
    admittedAt = ApiTimeField(source="admitted_at", allow_null=True)
    finishedAt = ApiTimeField(source="finished_at", allow_null=True)
    goneAt = ApiTimeField(source="gone_at", allow_null=True,
                                       help_text="When the TrainJob was deleted from the cluster.")
    numNodes = serializers.IntegerField(source="num_nodes")
    gpusPerNode = serializers.IntegerField(source="gpus_per_node")
    level = serializers.ChoiceField(choices=SchedulingLevel.choices)
    queue = QueuePlaceSerializer(source="queue_place", allow_null=True,
                                 help_text="The job's place in Kueue; null when Kueue does not manage it.")
    estimatedStart = StartEstimateSerializer(source="estimated_start", allow_null=True,
                                             help_text="When it is likely to start; null when nobody estimates it.")
    creator = serializers.CharField(allow_blank=True)
    priorityClass = serializers.CharField(source="priority_class", allow_blank=True)
    podGroups = PodGroupSerializer(source="pod_groups", many=True)

    def to_representation(self, job) -> dict:
        if type(self) is not TrainJobSerializer:
            return super().to_representation(job)
        time = _TIME.to_representation
        return {
            "cluster": job.cluster.name, "namespace": job.namespace, "name": job.name, "uid": job.uid,
            "runtime": job.runtime_name,
            "runtimeKind": job.runtime_kind, "state": job.state, "reasonCode": job.reason,
            "reason": job.short_reason, "message": job.message,
            "since": time(job.since), "submittedAt": time(job.submitted_at),
            "admittedAt": time(job.admitted_at) if job.admitted_at else None,
            "finishedAt": time(job.finished_at) if job.finished_at else None,
            "goneAt": time(job.gone_at) if job.gone_at else None,
            "numNodes": job.num_nodes, "gpusPerNode": job.gpus_per_node, "level": job.level,
            "queue": job.queue_place, "estimatedStart": _estimate(job.estimated_start), "creator": job.creator,
            "priorityClass": job.priority_class,
            "podGroups": [{**{key: group.get(key) for key in _POD_GROUP_KEYS},
                           **{key: group[key] for key in _POD_GROUP_OPTIONAL if key in group}}
                          for group in job.pod_groups or ()],
        }

    def generic_representation(self, job) -> dict:
        """Return DRF's field-by-field representation (what ``to_representation`` must equal)."""
        return super().to_representation(job)


def _estimate(estimate: dict | None) -> dict | None:
    if estimate is None:
        return None
    time = _TIME.to_representation
    return {**estimate, **{key: time(estimate[key]) for key in ("p10", "p50", "p90", "computedAt")}}


class TransitionSerializer(serializers.Serializer):
    """One state change on the timeline."""

    fromState = serializers.CharField(source="from_state", allow_blank=True)
    toState = serializers.CharField(source="to_state")
    reason = serializers.CharField(allow_blank=True)
    message = serializers.CharField(allow_blank=True)
    at = ApiTimeField()


class WorkloadTemplateSerializer(serializers.Serializer):
    name = serializers.CharField(allow_blank=True)
    policy = serializers.CharField()
    minCount = serializers.IntegerField(allow_null=True)
    topologyKey = serializers.CharField(allow_blank=True, required=False)


class WorkloadSerializer(serializers.Serializer):
    """The scheduling.k8s.io Workload of the job (empty when there is none)."""

    name = serializers.CharField(required=False)
    apiVersion = serializers.CharField(required=False)
    templates = WorkloadTemplateSerializer(many=True, required=False)


class PodSerializer(serializers.Serializer):
    name = serializers.CharField()
    phase = serializers.CharField()
    node = serializers.CharField(allow_blank=True)
    podGroup = serializers.CharField(allow_blank=True)
    zone = serializers.CharField(allow_blank=True)
    block = serializers.CharField(allow_blank=True)
    rack = serializers.CharField(allow_blank=True)


class InvolvedObjectSerializer(serializers.Serializer):
    kind = serializers.CharField(allow_blank=True)
    name = serializers.CharField(allow_blank=True)


class EventSerializer(serializers.Serializer):
    """A related Kubernetes Event."""

    type = serializers.CharField(allow_blank=True)
    reason = serializers.CharField(allow_blank=True)
    message = serializers.CharField(allow_blank=True)
    count = serializers.IntegerField()
    lastTimestamp = serializers.CharField(allow_blank=True)
    involvedObject = InvolvedObjectSerializer()


class HolderSerializer(serializers.Serializer):
    """An admitted gang occupying the capacity this job waits for."""

    namespace = serializers.CharField()
    name = serializers.CharField()
    nodes = serializers.IntegerField(help_text="Nodes of the best domain its pods occupy.")
    gpus = serializers.IntegerField(help_text="GPUs it holds in the best domain.")
    numNodes = serializers.IntegerField()
    runningSince = ApiTimeField(allow_null=True)
    creator = serializers.CharField(allow_blank=True)


class ExplanationSerializer(serializers.Serializer):
    """Why it waits: the placement engine on the live snapshot for exactly this gang."""

    available = serializers.BooleanField(help_text="False when there is no live snapshot or nothing to explain.")
    fits = serializers.BooleanField(allow_null=True)
    message = serializers.CharField()
    need = serializers.CharField(allow_blank=True, help_text='e.g. "64 nodes × 8 GPUs in one zone".')
    bestDomain = serializers.CharField(allow_blank=True, allow_null=True)
    have = serializers.IntegerField(allow_null=True, help_text="What the best domain fits, in `unit`.")
    needCount = serializers.IntegerField(allow_null=True, help_text="What the gang needs, in `unit`.")
    unit = serializers.CharField(allow_blank=True, help_text='"pods", or "slices of N pods".')
    excluded = serializers.DictField(child=serializers.IntegerField())
    alternatives = serializers.ListField(child=serializers.CharField())
    holders = HolderSerializer(many=True)
    otherNodes = serializers.IntegerField(help_text="Nodes of the best domain held by jobs you may not see.")
    snapshotAgeSeconds = serializers.FloatField(allow_null=True)


class TrainJobDetailSerializer(TrainJobSerializer):
    """A TrainJob with its tree, timeline, events and explanation."""

    workload = WorkloadSerializer()
    pods = PodSerializer(many=True)
    events = EventSerializer(many=True)
    timeline = TransitionSerializer(many=True)
    timeToAdmissionSeconds = serializers.FloatField(source="time_to_admission_seconds", allow_null=True)
    explanation = ExplanationSerializer(allow_null=True)
    tracking = TrackingSerializer()


class TrainJobPageSerializer(serializers.Serializer):
    """One page of TrainJobs and the cursor of the next."""

    items = TrainJobSerializer(many=True)
    next = serializers.CharField(allow_null=True, help_text="URL of the next page, or null on the last.")
    cursor = serializers.CharField(allow_null=True, help_text="Pass as `cursor` to get the next page.")
    tracking = TrackingSerializer()


class SummarySerializer(serializers.Serializer):
    """Counts of visible TrainJobs per state."""

    counts = serializers.DictField(child=serializers.IntegerField(), help_text="{state: count}, every state.")
    total = serializers.IntegerField()
    tracking = TrackingSerializer()


class DetailQuerySerializer(serializers.Serializer):
    """Query parameters of ``GET /api/v1/trainjobs/{namespace}/{name}/``."""

    cluster = serializers.CharField(required=False, max_length=63,
                                    help_text="The TrainJob's cluster (its name); the default cluster when absent.")
