"""REST API v1 for forecasts: estimated starts, the backtest's accuracy, what-if simulations.

Estimates and accuracy cover a whole cluster's queue, so they need ``jobs.all_namespaces`` (viewers and platform
admins); a data scientist sees the estimate of their own jobs on the TrainJob API (``estimatedStart``). What-ifs are
simulations, like previews: ``preview.run``. Nothing here reaches a cluster: reads are what the worker stored, a new
what-if is queued for a worker.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer_portal import roles
from trainer_portal.permissions import HasCapability

from . import selectors, services
from .models import WhatIf

CanSeeQueue = HasCapability.of(roles.JOBS_ALL_NAMESPACES)
CanSimulate = HasCapability.of(roles.PREVIEW_RUN)


# -- serializers ------------------------------------------------------------------------------------------------------


class ClusterQuerySerializer(serializers.Serializer):
    cluster = serializers.CharField(required=False, allow_blank=True, max_length=253,
                                    help_text="The cluster's name (default: the default cluster).")
    namespace = serializers.CharField(required=False, allow_blank=True, max_length=63)


class EstimateSerializer(serializers.Serializer):
    namespace = serializers.CharField()
    name = serializers.CharField()
    uid = serializers.CharField()
    rank = serializers.IntegerField(help_text="Place in cluster order among the waiting jobs (1 = next).")
    p10 = serializers.DateTimeField(allow_null=True)
    p50 = serializers.DateTimeField(allow_null=True)
    p90 = serializers.DateTimeField(allow_null=True)
    basis = serializers.CharField(help_text="What the estimate rests on, or 'unknown: <reason>'.")
    computedAt = serializers.DateTimeField(source="computed_at")


class EstimateListSerializer(serializers.Serializer):
    cluster = serializers.CharField()
    status = serializers.CharField(allow_null=True, help_text="ok, unknown (reason says why) or null before the "
                                   "first computation.")
    reason = serializers.CharField(allow_blank=True)
    computedAt = serializers.DateTimeField(allow_null=True)
    items = EstimateSerializer(many=True)


class AccuracySerializer(serializers.Serializer):
    cluster = serializers.CharField()
    computedAt = serializers.DateTimeField(allow_null=True)
    checkpoints = serializers.IntegerField()
    estimates = serializers.IntegerField()
    unknown = serializers.IntegerField()
    medianAbsErrorSeconds = serializers.FloatField(allow_null=True)
    p90AbsErrorSeconds = serializers.FloatField(allow_null=True)
    coverage = serializers.FloatField(allow_null=True, help_text="How often the true start fell in p10–p90.")
    baselineMedianAbsErrorSeconds = serializers.FloatField(
        allow_null=True, help_text="The naive 'now + median wait so far' estimate's error, for comparison.")
    heldOut = serializers.IntegerField(help_text="Estimates calibrated on earlier moments' estimates only (the rest "
                                       "had too little history before them).")
    rawCoverageHeldOut = serializers.FloatField(allow_null=True, help_text="How often the simulated p10–p90 held the "
                                                "true start, over the held-out estimates.")
    calibratedCoverage = serializers.FloatField(allow_null=True, help_text="How often the calibrated range (what the "
                                                "portal shows) held the true start, over the same estimates.")


class TopologyChangeSerializer(serializers.Serializer):
    runtime = serializers.CharField(max_length=253)
    topologyLevel = serializers.ChoiceField(choices=services.LEVELS,
                                            help_text="The level its gangs must fit in ('none': anywhere).")


class NodeChangeSerializer(serializers.Serializer):
    domain = serializers.RegexField(r"^[^/\s]+(/[^/\s]+){0,2}$", max_length=200,
                                    help_text="zone, zone/block or zone/block/rack.")
    change = serializers.ChoiceField(choices=("add", "cordon"))
    count = serializers.IntegerField(min_value=0, max_value=10_000, default=0,
                                     help_text="Nodes to add, or to cordon (0: the whole domain).")
    gpusPerNode = serializers.IntegerField(min_value=0, max_value=64, default=8)


class CandidateSerializer(serializers.Serializer):
    topology = TopologyChangeSerializer(many=True, required=False, default=list)
    nodes = NodeChangeSerializer(many=True, required=False, default=list)
    strictFifo = serializers.ListField(child=serializers.CharField(max_length=253), required=False, default=list,
                                       max_length=100)


class WhatIfCreateSerializer(serializers.Serializer):
    cluster = serializers.CharField(required=False, allow_blank=True, max_length=253)
    title = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")
    days = serializers.IntegerField(min_value=1, max_value=90, default=7)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    candidate = CandidateSerializer()

    def validate_candidate(self, value: dict) -> dict:
        if not value.get("topology") and not value.get("nodes") and not value.get("strictFifo"):
            raise ValidationError("name at least one change: topology, nodes or strictFifo")
        return value


class ReplaySerializer(serializers.Serializer):
    jobs = serializers.IntegerField()
    started = serializers.IntegerField()
    waitP50Seconds = serializers.FloatField(allow_null=True)
    waitP95Seconds = serializers.FloatField(allow_null=True)
    neverFit = serializers.IntegerField()
    stillWaiting = serializers.IntegerField()
    gpuUtilization = serializers.FloatField()
    fragmentation = serializers.FloatField()


class WhatIfResultSerializer(serializers.Serializer):
    current = ReplaySerializer()
    candidate = ReplaySerializer()


class WhatIfSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    cluster = serializers.CharField(source="cluster.name")
    title = serializers.CharField(allow_blank=True)
    candidate = CandidateSerializer()
    days = serializers.IntegerField()
    seed = serializers.IntegerField()
    status = serializers.ChoiceField(choices=WhatIf.Status.choices)
    progress = serializers.FloatField()
    jobs = serializers.IntegerField(help_text="Recorded jobs replayed.")
    result = WhatIfResultSerializer(allow_null=True, source="result_or_none")
    error = serializers.CharField(allow_blank=True)
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class WhatIfListSerializer(serializers.Serializer):
    items = WhatIfSerializer(many=True)


def _cluster(name: str | None):
    cluster = selectors.cluster_or_none(name)
    if cluster is None:
        raise ValidationError({"cluster": [f"no cluster named {name!r}" if name else "no default cluster"]})
    return cluster


def _whatif_data(whatif: WhatIf) -> dict:
    whatif.result_or_none = whatif.result or None
    return WhatIfSerializer(whatif).data


# -- views ------------------------------------------------------------------------------------------------------------

_ERRORS = {400: OpenApiResponse(description="A parameter is invalid (named in the error).")}


class EstimateListApi(APIView):
    """``GET /api/v1/forecast/estimates/``: the estimated start of every waiting job of a cluster, in order."""

    permission_classes = [CanSeeQueue]

    @extend_schema(operation_id="forecast_estimates", summary="Estimated starts of the waiting TrainJobs",
                   parameters=[ClusterQuerySerializer], responses={200: EstimateListSerializer, **_ERRORS},
                   tags=["forecast"])
    def get(self, request):
        query = ClusterQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        cluster = _cluster(query.validated_data.get("cluster"))
        run = selectors.last_run(cluster)
        items = selectors.estimate_list(cluster, query.validated_data.get("namespace"))
        data = {"cluster": cluster.name, "status": run.status if run else None, "reason": run.reason if run else "",
                "computedAt": run.computed_at if run else None, "items": items}
        return Response(EstimateListSerializer(data).data)


class AccuracyApi(APIView):
    """``GET /api/v1/forecast/accuracy/``: how good the estimates were over recorded history (the backtest)."""

    permission_classes = [CanSeeQueue]

    @extend_schema(operation_id="forecast_accuracy", summary="Backtest accuracy of the estimated starts",
                   parameters=[ClusterQuerySerializer], responses={200: AccuracySerializer, **_ERRORS},
                   tags=["forecast"])
    def get(self, request):
        query = ClusterQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        cluster = _cluster(query.validated_data.get("cluster"))
        run = selectors.last_run(cluster)
        report = run.backtest if run and run.backtest else {}
        data = {"cluster": cluster.name, "computedAt": run.backtest_at if run else None,
                "checkpoints": report.get("checkpoints", 0), "estimates": report.get("estimates", 0),
                "unknown": report.get("unknown", 0), "medianAbsErrorSeconds": report.get("medianAbsErrorSeconds"),
                "p90AbsErrorSeconds": report.get("p90AbsErrorSeconds"), "coverage": report.get("coverage"),
                "baselineMedianAbsErrorSeconds": report.get("baselineMedianAbsErrorSeconds"),
                "heldOut": report.get("heldOut", 0), "rawCoverageHeldOut": report.get("rawCoverageHeldOut"),
                "calibratedCoverage": report.get("calibratedCoverage")}
        return Response(AccuracySerializer(data).data)


class WhatIfListApi(APIView):
    """``GET/POST /api/v1/forecast/whatifs/``: the newest what-if simulations; start a new one."""

    permission_classes = [CanSimulate]

    @extend_schema(operation_id="forecast_whatifs_list", summary="What-if simulations, newest first",
                   parameters=[ClusterQuerySerializer], responses={200: WhatIfListSerializer, **_ERRORS},
                   tags=["forecast"])
    def get(self, request):
        query = ClusterQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        name = query.validated_data.get("cluster")
        cluster = _cluster(name) if name else None
        return Response({"items": [_whatif_data(w) for w in selectors.whatif_list(cluster)]})

    @extend_schema(operation_id="forecast_whatifs_create", summary="Simulate a candidate setting over recorded "
                   "history", request=WhatIfCreateSerializer,
                   responses={202: WhatIfSerializer, **_ERRORS}, tags=["forecast"])
    def post(self, request):
        body = WhatIfCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        cluster = _cluster(data.get("cluster"))
        whatif = services.whatif_create(cluster=cluster, title=data.get("title", ""), candidate=data["candidate"],
                                        days=data["days"], seed=data["seed"], user=request.user)
        return Response(_whatif_data(whatif), status=202)


class WhatIfDetailApi(APIView):
    """``GET /api/v1/forecast/whatifs/{whatif_id}/``: one what-if with its progress and, once done, its results."""

    permission_classes = [CanSimulate]

    @extend_schema(operation_id="forecast_whatif", summary="One what-if simulation",
                   responses={200: WhatIfSerializer, 404: OpenApiResponse(description="No such what-if.")},
                   tags=["forecast"])
    def get(self, request, whatif_id: int):
        whatif = selectors.whatif_get(whatif_id)
        if whatif is None:
            raise NotFound(f"no what-if {whatif_id}")
        return Response(_whatif_data(whatif))


class WhatIfCancelApi(APIView):
    """``POST /api/v1/forecast/whatifs/{whatif_id}/cancel/``: stop a queued or running what-if."""

    permission_classes = [CanSimulate]

    @extend_schema(operation_id="forecast_whatif_cancel", summary="Cancel a what-if simulation", request=None,
                   responses={200: WhatIfSerializer, 404: OpenApiResponse(description="No such what-if.")},
                   tags=["forecast"])
    def post(self, request, whatif_id: int):
        whatif = selectors.whatif_get(whatif_id)
        if whatif is None:
            raise NotFound(f"no what-if {whatif_id}")
        return Response(_whatif_data(services.whatif_cancel(whatif)))
