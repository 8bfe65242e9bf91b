"""``/api/v1/clusters/``: the clusters the portal manages (any portal role reads; platform admins write).

camelCase JSON. ``kubeconfig`` is write-only: it is stored encrypted and never returned (``hasKubeconfig`` says
whether one is stored). Writes name the version they read (body ``version`` or ``If-Match``); a stale one is 409.
Errors use the API's one error body; refusals name the field (``fields[].path``) and the fix.
"""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer_portal.api.parsers import BoundedJSONParser
from trainer_portal.errors import field
from trainer_portal.permissions import HasCapability
from trainer_portal.roles import CLUSTER_MANAGE, JOBS_VIEW

from . import registry, registry_services, selectors
from .models import Cluster, ConnectionKind

ERROR_BODY = {"$ref": "#/components/schemas/Error"}
MAX_VERSION = 2_147_483_647


# Reads: any portal role (data scientists included: they pick a cluster too). Writes: cluster.manage.
ClusterPermission = HasCapability.of(JOBS_VIEW, CLUSTER_MANAGE)


class ClusterHealthSerializer(serializers.Serializer):
    state = serializers.CharField(help_text="ok, unreachable, … or unknown (not probed yet).")
    checkedAt = serializers.DateTimeField(allow_null=True, help_text="When the background probe last ran.")


class ClusterSerializer(serializers.Serializer):
    """A cluster as the API shows it (never its kubeconfig)."""

    name = serializers.CharField(help_text="DNS-1123 label; never changes.")
    displayName = serializers.CharField(allow_blank=True)
    connection = serializers.ChoiceField(choices=ConnectionKind.values)
    inCluster = serializers.BooleanField(help_text="Connects with the pod's service account.")
    hasKubeconfig = serializers.BooleanField(help_text="A kubeconfig is stored (encrypted); it is never returned.")
    context = serializers.CharField(allow_blank=True, help_text="Kubeconfig context ('' = its current context).")
    secretRef = serializers.CharField(allow_blank=True, help_text="namespace/name[/key] of the kubeconfig Secret.")
    blockLabelKey = serializers.CharField(allow_blank=True, help_text="Node label of a network block ('' = the "
                                          "portal's TRAINER_PORTAL_BLOCK_KEY).")
    isDefault = serializers.BooleanField(help_text="URLs and API paths that name no cluster mean this one.")
    enabled = serializers.BooleanField(help_text="A disabled cluster is neither watched nor synced to.")
    version = serializers.IntegerField(help_text="Send it back when writing (409 when someone changed it first).")
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()
    health = ClusterHealthSerializer()


class ClusterWriteSerializer(serializers.Serializer):
    """What a POST or PATCH may send (documentation: the service checks every field, unknown ones are refused)."""

    name = serializers.CharField(required=False, help_text="Required on POST; never changes.")
    displayName = serializers.CharField(required=False, allow_blank=True, max_length=100)
    connection = serializers.ChoiceField(choices=ConnectionKind.values, required=False,
                                         help_text="Implied by kubeconfig / inCluster / secretRef.")
    kubeconfig = serializers.CharField(required=False, write_only=True,
                                       help_text="The kubeconfig file's text (≤ 256 KiB); stored encrypted.")
    inCluster = serializers.BooleanField(required=False)
    secretRef = serializers.CharField(required=False, help_text="namespace/name[/key] of a Secret with a kubeconfig.")
    context = serializers.CharField(required=False, allow_blank=True)
    blockLabelKey = serializers.CharField(required=False, allow_blank=True)
    isDefault = serializers.BooleanField(required=False)
    enabled = serializers.BooleanField(required=False)
    version = serializers.IntegerField(required=False, help_text="PATCH: the version you read (or If-Match).")


def _health(cluster: Cluster) -> dict[str, Any]:
    # The cluster page's reads provide the stored per-cluster health; the registry's placeholder until they do.
    reader = getattr(selectors, "cluster_health", None) or registry.cluster_health
    return reader(cluster)


def cluster_body(cluster: Cluster) -> dict[str, Any]:
    """Return the API representation of ``cluster`` (never its kubeconfig)."""
    health = _health(cluster)
    checked = health.get("checkedAt")
    return {
        "name": cluster.name, "displayName": cluster.display_name, "connection": cluster.connection,
        "inCluster": cluster.connection == ConnectionKind.IN_CLUSTER,
        "hasKubeconfig": bool(cluster.kubeconfig_encrypted), "context": cluster.kubeconfig_context,
        "secretRef": cluster.secret_ref, "blockLabelKey": cluster.block_label_key, "isDefault": cluster.is_default,
        "enabled": cluster.enabled, "version": cluster.version,
        "createdAt": serializers.DateTimeField().to_representation(cluster.created_at),
        "updatedAt": serializers.DateTimeField().to_representation(cluster.updated_at),
        "health": {"state": str(health.get("state") or "unknown"),
                   "checkedAt": checked if checked is None or isinstance(checked, str)
                   else serializers.DateTimeField().to_representation(checked)},
    }


def _expected_version(request, body: Any) -> int | None:
    """Return the version of body ``version`` or ``If-Match`` (None when neither). Raises ClusterError (400) for a
    malformed or contradicting one."""
    body_version = body.get("version") if isinstance(body, dict) else None
    if body_version is not None and (not isinstance(body_version, int) or isinstance(body_version, bool)
                                     or not 1 <= body_version <= MAX_VERSION):
        raise registry_services.ClusterError("version must be the whole number you read",
                                             fields=[field("version", "a whole number from 1")])
    header = request.headers.get("If-Match")
    header_version = None
    if header is not None:
        match = re.fullmatch(r'"?([0-9]{1,10})"?', header.strip().removeprefix("W/").strip())
        if not match or not 1 <= int(match.group(1)) <= MAX_VERSION:
            raise registry_services.ClusterError('If-Match must hold the version you read, e.g. If-Match: "3"',
                                                 fields=[field("If-Match", "one version in double quotes")])
        header_version = int(match.group(1))
    if body_version is not None and header_version is not None and body_version != header_version:
        raise registry_services.ClusterError(f"the body says version {body_version} but If-Match says "
                                             f"{header_version}; send one of them",
                                             fields=[field("version", "contradicts If-Match", "mismatch")])
    return body_version if body_version is not None else header_version


def _get(name: str) -> Cluster:
    try:
        return registry.cluster_get(name)
    except registry.ClusterNotFound:
        raise registry_services.ClusterNotFoundError(name) from None


def _body(request) -> dict:
    data = request.data
    if not isinstance(data, dict):
        raise registry_services.ClusterError("the body must be a JSON object",
                                             fields=[field("", "send a JSON object (Content-Type: application/json)",
                                                           "type")])
    return data


ERRORS = {
    400: OpenApiResponse(ERROR_BODY, description="Bad input; `fields` name each problem's field and the fix."),
    401: OpenApiResponse(ERROR_BODY, description="Not authenticated (no session, no valid token)."),
    403: OpenApiResponse(ERROR_BODY, description="Your role may not do this (writes: platform admins only)."),
}
NOT_FOUND = {404: OpenApiResponse(ERROR_BODY, description="No cluster with this name.")}
CONFLICT = OpenApiResponse(ERROR_BODY, description="Stale version (someone changed the cluster first; "
                           "`currentVersion`), a taken name, or removing the default (and so the last) cluster.")
IF_MATCH = OpenApiParameter("If-Match", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False,
                            description='The version you read, e.g. "3" (alternative to the body\'s `version`).')


class ClusterBaseApi(APIView):
    permission_classes = [ClusterPermission]
    parser_classes = [BoundedJSONParser]
    serializer_class = ClusterSerializer


class ClusterListApi(ClusterBaseApi):
    """``GET /api/v1/clusters/`` (every cluster, the default first) and ``POST`` (add one)."""

    @extend_schema(operation_id="clusters_list", summary="List the clusters the portal manages",
                   responses={200: ClusterSerializer(many=True), **ERRORS}, tags=["clusters"])
    def get(self, request):
        return Response([cluster_body(cluster) for cluster in registry.cluster_list()])

    @extend_schema(
        operation_id="clusters_create", summary="Add a cluster",
        description="Send `name` and one way to connect: `kubeconfig` (the file's text, stored encrypted and never "
        "returned), `inCluster: true`, or `secretRef` (`namespace/name[/key]` of a Secret holding a kubeconfig, read "
        "through the default cluster's connection). Nothing reaches the cluster now: `health` shows what the "
        "background probe finds.",
        request=ClusterWriteSerializer, responses={201: ClusterSerializer, **ERRORS, 409: CONFLICT}, tags=["clusters"])
    def post(self, request):
        cluster = registry_services.cluster_create(_body(request))
        location = request.build_absolute_uri(f"{request.path}{cluster.name}/")
        return Response(cluster_body(cluster), status=201,
                        headers={"Location": location, "ETag": f'"{cluster.version}"'})


class ClusterDetailApi(ClusterBaseApi):
    """``GET/PATCH/DELETE /api/v1/clusters/{name}/``."""

    @extend_schema(operation_id="clusters_retrieve", summary="One cluster",
                   responses={200: ClusterSerializer, **ERRORS, **NOT_FOUND}, tags=["clusters"])
    def get(self, request, name: str):
        cluster = _get(name)
        return Response(cluster_body(cluster), headers={"ETag": f'"{cluster.version}"'})

    @extend_schema(
        operation_id="clusters_partial_update", summary="Change a cluster",
        description="Only the fields sent change. Send the `version` you read (or If-Match); a stale one is 409 with "
        "`currentVersion`. `name` never changes. Setting `isDefault: true` moves the default here.",
        parameters=[IF_MATCH], request=ClusterWriteSerializer,
        responses={200: ClusterSerializer, **ERRORS, **NOT_FOUND, 409: CONFLICT}, tags=["clusters"])
    def patch(self, request, name: str):
        body = _body(request)
        expected = _expected_version(request, body)
        cluster = registry_services.cluster_update(name, body, expected_version=expected)
        return Response(cluster_body(cluster), headers={"ETag": f'"{cluster.version}"'})

    @extend_schema(
        operation_id="clusters_destroy", summary="Remove a cluster",
        description="Forgets everything tracked on it (TrainJobs, transitions, grants on it). The default cluster "
        "(and so the last one) cannot be removed: 409. Optional If-Match guards against removing a changed one.",
        parameters=[IF_MATCH], request=None,
        responses={204: OpenApiResponse(description="Removed."), **ERRORS, **NOT_FOUND, 409: CONFLICT},
        tags=["clusters"])
    def delete(self, request, name: str):
        _get(name)
        registry_services.cluster_delete(name, expected_version=_expected_version(request, None))
        return Response(status=204)
