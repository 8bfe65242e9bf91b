"""REST API v1 for tracked TrainJobs: read-only, namespace-isolated, conditional (ETag / If-None-Match → 304).

Who may call: platform admins, viewers and superusers (every namespace) and data scientists (the namespaces
granted to their groups); anyone else gets 403. A TrainJob in a namespace the caller may not see answers 404,
exactly like a missing one. Errors are `jobs.errors` (PortalErrors), mapped by the API's one exception handler.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs import selectors
from trainer_portal import roles
from trainer_portal.permissions import HasCapability

from . import serializers as s

ETAG_HEADER = OpenApiParameter("If-None-Match", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False,
                               description="The ETag of a previous response: 304 when nothing changed since.")


# Any role that may see TrainJobs; the selectors filter data scientists to their granted namespaces.
CanSeeTrainJobs = HasCapability.of(roles.JOBS_VIEW)


def _parse(serializer_class, request) -> dict:
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class ConditionalMixin:
    """Answer 304 when the caller's If-None-Match equals the current change token."""

    def _etag(self, request, tracking, namespace: str | None = None, cluster: str | None = None) -> str:
        token = selectors.trainjob_change_token(user=request.user, namespace=namespace, tracking=tracking,
                                                extra=f"{request.path}?{request.META.get('QUERY_STRING', '')}",
                                                cluster=cluster)
        return f'W/"{token}"'

    @staticmethod
    def _not_modified(request, etag: str) -> bool:
        header = request.headers.get("If-None-Match", "")
        return any(candidate.strip() in (etag, "*") for candidate in header.split(",")) if header else False


class TrainJobListApi(ConditionalMixin, APIView):
    """``GET /api/v1/trainjobs/``: the TrainJobs you may see, filtered, in a stable order, cursor-paginated."""

    permission_classes = [CanSeeTrainJobs]

    @extend_schema(
        operation_id="trainjobs_list",
        summary="List TrainJobs with their admission state",
        parameters=[s.ListQuerySerializer, ETAG_HEADER],
        responses={200: s.TrainJobPageSerializer, 304: OpenApiResponse(description="Nothing changed."),
                   400: OpenApiResponse(description="A query parameter is invalid (named in the error).")},
        tags=["trainjobs"],
    )
    def get(self, request):
        query = _parse(s.ListQuerySerializer, request)
        selected = selectors.cluster_named(query.get("cluster"))
        tracking = selectors.tracking_status(cluster=selected)
        etag = self._etag(request, tracking, query.get("namespace"), query.get("cluster"))
        if self._not_modified(request, etag):
            return Response(status=304, headers={"ETag": etag})
        page = selectors.trainjob_list(
            user=request.user, namespace=query.get("namespace"), state=query.get("state"),
            runtime=query.get("runtime"), level=query.get("level"), queue=query.get("queue"),
            search=query.get("search"), sort=query.get("sort"), cursor=query.get("cursor"),
            limit=query.get("limit"), include_gone=query.get("gone", False), cluster=query.get("cluster"))
        next_url = None
        if page.next_cursor:
            params = request.query_params.copy()
            params["cursor"] = page.next_cursor
            next_url = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
        data = s.TrainJobPageSerializer({"items": page.items, "next": next_url, "cursor": page.next_cursor,
                                         "tracking": tracking}).data
        return Response(data, headers={"ETag": etag})


class TrainJobSummaryApi(ConditionalMixin, APIView):
    """``GET /api/v1/trainjobs/summary/``: counts of the TrainJobs you may see, per state."""

    permission_classes = [CanSeeTrainJobs]

    @extend_schema(
        operation_id="trainjobs_summary",
        summary="Count TrainJobs per admission state",
        parameters=[s.SummaryQuerySerializer, ETAG_HEADER],
        responses={200: s.SummarySerializer, 304: OpenApiResponse(description="Nothing changed."),
                   400: OpenApiResponse(description="A query parameter is invalid (named in the error).")},
        tags=["trainjobs"],
    )
    def get(self, request):
        query = _parse(s.SummaryQuerySerializer, request)
        selected = selectors.cluster_named(query.get("cluster"))
        tracking = selectors.tracking_status(cluster=selected)
        etag = self._etag(request, tracking, query.get("namespace"), query.get("cluster"))
        if self._not_modified(request, etag):
            return Response(status=304, headers={"ETag": etag})
        counts = selectors.trainjob_summary(user=request.user, namespace=query.get("namespace"),
                                            cluster=query.get("cluster"))
        data = s.SummarySerializer({"counts": counts, "total": sum(counts.values()),
                                    "tracking": tracking}).data
        return Response(data, headers={"ETag": etag})


class TrainJobDetailApi(APIView):
    """``GET /api/v1/trainjobs/{namespace}/{name}/``: one TrainJob with its tree, timeline, events and why it
    waits."""

    permission_classes = [CanSeeTrainJobs]

    @extend_schema(
        operation_id="trainjobs_retrieve",
        summary="One TrainJob: ownership tree, timeline, reason and explanation",
        parameters=[s.DetailQuerySerializer],
        responses={200: s.TrainJobDetailSerializer,
                   400: OpenApiResponse(description="`cluster` names no cluster."),
                   404: OpenApiResponse(description="No such TrainJob in a namespace you may see.")},
        tags=["trainjobs"],
    )
    def get(self, request, namespace: str, name: str):
        query = _parse(s.DetailQuerySerializer, request)
        detail = selectors.trainjob_detail(user=request.user, namespace=namespace, name=name,
                                           cluster=query.get("cluster"))
        return Response(s.TrainJobDetailSerializer(detail).data)
