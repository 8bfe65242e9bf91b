"""REST API v1 for Kueue's queues: read-only, from the database, namespace-isolated.

Who may call: anyone who may see TrainJobs (``jobs.view``). Platform admins and viewers see every LocalQueue and
workload; data scientists the LocalQueues of their namespaces and, in a ClusterQueue's pending list, their own
workloads, with everyone else's folded into counts. A LocalQueue of a namespace the caller may not see answers 404,
exactly like a missing one.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer_portal import roles
from trainer_portal.permissions import HasCapability

from .. import selectors
from . import present
from . import serializers as s

CanSeeQueues = HasCapability.of(roles.JOBS_VIEW)


def _cluster(request):
    query = s.KueueQueryParams(data=request.query_params)
    query.is_valid(raise_exception=True)
    return selectors.cluster_for(query.validated_data.get("cluster"))


class QueuesOverviewApi(APIView):
    """``GET /api/v1/queues/``: ClusterQueues, the LocalQueues you may see, cohorts and flavors of one cluster."""

    permission_classes = [CanSeeQueues]

    @extend_schema(operation_id="queues_overview", summary="Kueue's queues of a cluster with usage and counts",
                   parameters=[s.KueueQueryParams], tags=["queues"],
                   responses={200: s.KueueOverviewSerializer,
                              400: OpenApiResponse(description="`cluster` names no cluster.")})
    def get(self, request):
        cluster = _cluster(request)
        data = selectors.overview(request.user, cluster)
        members: dict[str, list[str]] = {}
        for queue in data["cluster_queues"]:
            if queue.cohort:
                members.setdefault(queue.cohort, []).append(queue.name)
        body = {**present.freshness(cluster, data["freshness"]),
                "clusterQueues": [present.cluster_queue(q) for q in data["cluster_queues"]],
                "localQueues": [present.local_queue(q) for q in data["local_queues"]],
                "hiddenLocalQueues": data["hidden_local_queues"],
                "cohorts": [{"name": c.name, "clusterQueues": sorted(members.get(c.name, []))}
                            for c in data["cohorts"]],
                "flavors": [{"name": f.name, "nodeLabels": f.node_labels} for f in data["flavors"]]}
        return Response(s.KueueOverviewSerializer(body).data)


class ClusterQueueApi(APIView):
    """``GET /api/v1/queues/clusterqueues/{cluster_queue}/``: one ClusterQueue with its pending list in order."""

    permission_classes = [CanSeeQueues]

    @extend_schema(operation_id="queues_clusterqueue", summary="One ClusterQueue: usage, LocalQueues, pending list",
                   parameters=[s.KueueQueryParams], tags=["queues"],
                   responses={200: s.KueueClusterQueueDetailSerializer,
                              400: OpenApiResponse(description="`cluster` names no cluster."),
                              404: OpenApiResponse(description="No such ClusterQueue on that cluster.")})
    def get(self, request, cluster_queue: str):
        cluster = _cluster(request)
        detail = selectors.cluster_queue_detail(request.user, cluster, cluster_queue)
        body = {**present.freshness(cluster, detail.freshness),
                "clusterQueue": present.cluster_queue(detail.cluster_queue),
                "localQueues": [present.local_queue(q) for q in detail.local_queues],
                "hiddenLocalQueues": detail.hidden_local_queues,
                "pending": [{"kind": "workload", "count": 1, "workload": present.workload(e.workload)}
                            if e.workload is not None else {"kind": "hidden", "count": e.hidden, "workload": None}
                            for e in detail.pending],
                "pendingTotal": detail.pending_total,
                "admitted": [present.workload(w) for w in detail.admitted], "admittedHidden": detail.admitted_hidden}
        return Response(s.KueueClusterQueueDetailSerializer(body).data)


class LocalQueueApi(APIView):
    """``GET /api/v1/queues/localqueues/{namespace}/{local_queue}/``: one LocalQueue and its own pending list."""

    permission_classes = [CanSeeQueues]

    @extend_schema(operation_id="queues_localqueue", summary="One LocalQueue: its ClusterQueue and pending list",
                   parameters=[s.KueueQueryParams], tags=["queues"],
                   responses={200: s.KueueLocalQueueDetailSerializer,
                              400: OpenApiResponse(description="`cluster` names no cluster."),
                              404: OpenApiResponse(description="No such LocalQueue in a namespace you may see.")})
    def get(self, request, namespace: str, local_queue: str):
        cluster = _cluster(request)
        detail = selectors.local_queue_detail(request.user, cluster, namespace, local_queue)
        body = {**present.freshness(cluster, detail.freshness),
                "localQueue": present.local_queue(detail.local_queue),
                "clusterQueue": present.cluster_queue(detail.cluster_queue) if detail.cluster_queue else None,
                "pending": [present.workload(e.workload) for e in detail.pending],
                "admitted": [present.workload(w) for w in detail.admitted]}
        return Response(s.KueueLocalQueueDetailSerializer(body).data)
