"""REST API v1 for runtime policies: thin views that parse, call a service or selector, and serialise.

Service exceptions (`runtimes.errors`, all `PortalError`s) become structured JSON errors in the project's one
exception handler (`trainer_portal.api.exceptions`): invalid manifests 400 with field paths under `manifest.`,
unknown names 404, stale versions 409 with the changes since, missing versions 428. Request bodies are capped at
1 MiB before they are parsed (`runtimes.api.parsers`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.generics import GenericAPIView
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from runtimes import selectors
from runtimes.api.parsers import YAML_MEDIA_TYPES, YAML_PARSERS, LimitedJSONParser, MergePatchParser
from runtimes.api.serializers import policies as s
from runtimes.choices import ImportMode, RevisionSource
from runtimes.domain.labels import is_dns1123_subdomain
from runtimes.domain.manifest import ManifestError, dump_yaml, load_runtime
from runtimes.domain.numbers import parse_whole_number
from runtimes.domain.policy import scheduling_summary
from runtimes.errors import (
    PolicyNotFound,
    RevisionNotFound,
    body_problems,
)
from runtimes.services import policies as policy_services
from trainer_portal.api.renderers import SafeJSONRenderer
from trainer_portal.errors import PortalError, field
from trainer_portal.permissions import HasCapability
from trainer_portal.roles import POLICIES_EDIT, POLICIES_VIEW, PREVIEW_RUN

MAX_VERSION = 2**31 - 1



# --------------------------------------------------------------------------------------------------- base view


class Pagination(LimitOffsetPagination):
    """`?limit=&offset=`; 50 by default (settings.PAGE_SIZE), never more than 500 per page."""

    max_limit = 500



class PolicyApiView(GenericAPIView):
    """Common parts: permissions, parsers and translation of service errors to API errors."""

    permission_classes = [HasCapability.of(POLICIES_VIEW, POLICIES_EDIT)]
    parser_classes = [LimitedJSONParser, *YAML_PARSERS]
    pagination_class = Pagination
    # What DRF's OPTIONS answer and the browsable API (DEBUG) introspect; each view sets its request body's.
    serializer_class = s.PolicyOutputSerializer
    # Where manifest paths sit in this endpoint's request body (errors say `manifest.spec.…`).
    def get_renderers(self):
        # Same renderers as configured, with JSON made safe against lone surrogates echoed from the input.
        return [SafeJSONRenderer() if type(r) is JSONRenderer else r for r in super().get_renderers()]

    def query_message(self, request) -> str:
        """Return the revision message sent as `?message=` (400 naming `message` if it is too long or has NUL)."""
        return self.validated(s.MessageQuerySerializer, {"message": request.query_params.get("message", "")})["message"]

    def get_object(self):
        """Return the policy named in the URL (asked for by OPTIONS and the browsable API)."""
        return self.get_policy(self.kwargs["name"])

    def get_queryset(self):
        """Return every policy (the browsable API asks list views for their queryset)."""
        return selectors.policy_list()

    def get_policy(self, name: str):
        """Return the policy `name` (404 if absent; names that cannot exist are not looked up)."""
        if not is_dns1123_subdomain(name):
            raise PolicyNotFound(name)
        return selectors.policy_get(name=name)

    def validated(self, serializer_class, data) -> dict[str, Any]:
        """Return `data` validated by `serializer_class` (400 with field paths otherwise)."""
        if not isinstance(data, dict):
            raise PortalError(
                status=400,
                code="invalid",
                message="The request body must be a JSON object.",
                fields=[field("", "send a JSON object (Content-Type: application/json)", "type")],
            )
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def output(self, policy) -> dict[str, Any]:
        return s.PolicyOutputSerializer(policy, context={"request": self.request}).data

    def policy_response(self, policy, status_code: int = 200, headers: dict | None = None) -> Response:
        return Response(
            self.output(policy), status=status_code, headers={"ETag": f'"{policy.version}"', **(headers or {})}
        )


def expected_version(request, body_version: int | None) -> int:
    """Return the version the client based its write on, from the body or `If-Match: "<version>"`.

    Raises 400 for a malformed or contradicting If-Match and 428 when neither is given.
    """
    header = request.headers.get("If-Match")
    header_version = None
    if header is not None:
        value = header.strip().removeprefix("W/").strip()
        match = re.fullmatch(r'"?([0-9]{1,10})"?', value)
        if not match or not 1 <= int(match.group(1)) <= MAX_VERSION:
            raise PortalError(
                status=400,
                code="invalid",
                message='If-Match must hold the version you read, e.g. If-Match: "3".',
                fields=[field("If-Match", f"got {header!r}; send one version in double quotes", "invalid")],
            )
        header_version = int(match.group(1))
    if body_version is not None and header_version is not None and body_version != header_version:
        raise PortalError(
            status=400,
            code="invalid",
            message=f"The body says version {body_version} but If-Match says {header_version}; send one of them.",
            fields=[field("version", "contradicts the If-Match header", "mismatch")],
        )
    version = body_version if body_version is not None else header_version
    if version is None:
        raise PortalError(
            status=status.HTTP_428_PRECONDITION_REQUIRED,
            code="precondition_required",
            message='Send the version you read: a "version" field in the body or an If-Match: "<version>" header.',
            fields=[field("version", "required for writes (optimistic concurrency)", "required")],
        )
    return version


def is_yaml(request) -> bool:
    """Return True when the request body was sent as YAML (then `request.data` is the text)."""
    media = (request.content_type or "").split(";")[0].strip().lower()
    return media in YAML_MEDIA_TYPES


def _text(data: Any) -> str:
    # An empty body parses to an empty dict whatever its content type.
    return data if isinstance(data, str) else ""


def _manifest_from_yaml(text: str) -> dict:
    """Return the single runtime in YAML/JSON `text`; a parse error becomes 400 with line and column."""
    try:
        return load_runtime(text)
    except ManifestError as exc:
        raise PortalError(
            status=400,
            code="invalid",
            message=str(exc),
            fields=[
                {
                    **field("manifest" + (f".{exc.path}" if exc.path else ""), exc.message, "parse"),
                    "line": exc.line,
                    "column": exc.column,
                }
            ],
        )


# --------------------------------------------------------------------------------------------------- schema bits

ERRORS = {
    400: OpenApiResponse(s.ErrorSerializer, description="Bad input; `fields` name each problem's path."),
    403: OpenApiResponse(s.ErrorSerializer, description="Not logged in, or your role may not do this."),
}
NOT_FOUND = {404: OpenApiResponse(s.ErrorSerializer, description="No policy (or revision) with this name/number.")}
WRITE_ERRORS = {
    **ERRORS,
    **NOT_FOUND,
    409: OpenApiResponse(s.ErrorSerializer, description="Stale version: someone saved first; `changes` says what."),
    413: OpenApiResponse(s.ErrorSerializer, description="Body over 1 MiB."),
    428: OpenApiResponse(s.ErrorSerializer, description="No version given (body `version` or If-Match)."),
}
NAME_TAKEN = OpenApiResponse(s.ErrorSerializer, description="A policy with this metadata.name exists.")
IF_MATCH = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description='The version you read, e.g. "3" (alternative to the body\'s `version`).',
)
# A YAML document is an object (clients that parse it get the manifest; `?inline=` does not change the body).
YAML_BODY = {(200, "application/yaml"): OpenApiTypes.OBJECT}


# --------------------------------------------------------------------------------------------------- policies


class PolicyListCreateApi(PolicyApiView):
    """List policies (filterable, paginated) and create one."""

    serializer_class = s.PolicyCreateSerializer

    @extend_schema(
        operation_id="runtimes_list",
        summary="List policies",
        description="Paginated (limit/offset). Filters: `search` (name, framework, scheduling summary), "
        "`framework`, `scheduling_mode`, `sync_status` (desired vs applied), `cluster_status` (live object), "
        "`sync_state`; `ordering` e.g. `-updated_at`.",
        parameters=[s.PolicyFilterSerializer],
        responses={200: s.PolicyOutputSerializer(many=True), **ERRORS},
        tags=["runtimes"],
    )
    def get(self, request):
        filters = s.PolicyFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        policies = selectors.policy_list(**filters.validated_data)
        page = self.paginate_queryset(policies)
        data = s.PolicyOutputSerializer(page, many=True, context={"request": request}).data
        return self.get_paginated_response(data)

    @extend_schema(
        operation_id="runtimes_create",
        summary="Create a policy",
        description="Body: `{manifest, message}` as JSON, or the manifest itself as YAML (`Content-Type: "
        "application/yaml`, message in `?message=`). Errors name field paths such as "
        "`manifest.spec.scheduling.replicatedJobs[0].targetReplicatedJobs`; warnings are saved and returned.",
        request={"application/json": s.PolicyCreateSerializer, "application/yaml": OpenApiTypes.STR},
        responses={201: s.PolicyOutputSerializer, **ERRORS, 409: NAME_TAKEN, 413: WRITE_ERRORS[413]},
        tags=["runtimes"],
    )
    def post(self, request):
        if is_yaml(request):
            manifest, message = _manifest_from_yaml(_text(request.data)), self.query_message(request)
        else:
            data = self.validated(s.PolicyCreateSerializer, request.data)
            manifest, message = data["manifest"], data["message"]
        policy = policy_services.policy_create(
            manifest=manifest, author=request.user, message=message[:500], source=RevisionSource.API
        )
        location = request.build_absolute_uri(reverse("api-runtime-detail", args=[policy.name]))
        return self.policy_response(selectors.policy_get(name=policy.name), 201, {"Location": location})


class PolicyDetailApi(PolicyApiView):
    """Read, replace, merge-patch or delete one policy."""

    serializer_class = s.PolicyUpdateSerializer

    parser_classes = [LimitedJSONParser, MergePatchParser, *YAML_PARSERS]

    @extend_schema(
        operation_id="runtimes_retrieve",
        summary="Get a policy",
        description="The `ETag` header holds the version to send back in `If-Match` when writing.",
        responses={200: s.PolicyOutputSerializer, **ERRORS, **NOT_FOUND},
        tags=["runtimes"],
    )
    def get(self, request, name: str):
        return self.policy_response(self.get_policy(name))

    @extend_schema(
        operation_id="runtimes_update",
        summary="Replace a policy's manifest",
        description="Send the version you read (`version` in the body or `If-Match`). A stale version gives 409 "
        "with `currentVersion` and the `changes` made since; an unchanged manifest makes no new revision. "
        "`metadata.name` cannot change.",
        parameters=[IF_MATCH],
        request={"application/json": s.PolicyUpdateSerializer, "application/yaml": OpenApiTypes.STR},
        responses={200: s.PolicyOutputSerializer, **WRITE_ERRORS},
        tags=["runtimes"],
    )
    def put(self, request, name: str):
        self.get_policy(name)
        if is_yaml(request):
            manifest, message, body_version = _manifest_from_yaml(_text(request.data)), "", None
            message = self.query_message(request)
        else:
            data = self.validated(s.PolicyUpdateSerializer, request.data)
            manifest, message, body_version = data["manifest"], data["message"], data.get("version")
        return self.save_revision(
            request, policy_services.policy_update, name, body_version, message, manifest=manifest
        )

    @extend_schema(
        operation_id="runtimes_partial_update",
        summary="Merge-patch a policy's manifest",
        description="JSON merge patch (RFC 7396) onto the current manifest: objects merge, `null` removes a key, "
        "lists and scalars replace. Either `{manifest: <patch>, version}` as JSON, or the patch itself as "
        "`application/merge-patch+json` with `If-Match`.",
        parameters=[IF_MATCH],
        request={"application/json": s.PolicyPatchSerializer, "application/merge-patch+json": OpenApiTypes.OBJECT},
        responses={200: s.PolicyOutputSerializer, **WRITE_ERRORS},
        tags=["runtimes"],
    )
    def patch(self, request, name: str):
        self.get_policy(name)
        if is_yaml(request):
            raise exceptions.UnsupportedMediaType(request.content_type)
        if request.content_type.startswith(MergePatchParser.media_type):
            if not isinstance(request.data, dict):
                raise PortalError(
                    status=400,
                    code="invalid",
                    message="A merge patch must be a JSON object.",
                    fields=[field("", "send a JSON object", "type")],
                )
            patch, message, body_version = request.data, "", None
        else:
            data = self.validated(s.PolicyPatchSerializer, request.data)
            patch, message, body_version = data["manifest"], data["message"], data.get("version")
        return self.save_revision(request, policy_services.policy_patch, name, body_version, message, patch=patch)

    def save_revision(
        self, request, write: Callable[..., Any], name: str, body_version: int | None, message: str, **content: Any
    ) -> Response:
        """Save a new revision of policy ``name`` through the service ``write`` (``policy_update`` given
        ``manifest=``, ``policy_patch`` given ``patch=``) as an API change; return the policy response.

        Raises what ``expected_version`` and the service raise (stale or missing version, invalid manifest).
        """
        policy = write(
            name=name,
            **content,
            expected_version=expected_version(request, body_version),
            author=request.user,
            message=message[:500],
            source=RevisionSource.API,
        )
        return self.policy_response(selectors.policy_get(name=policy.name))

    @extend_schema(
        operation_id="runtimes_destroy",
        summary="Delete a policy and its history",
        description="The version goes in `If-Match`, `?version=` or the body. The cluster object is not touched.",
        parameters=[IF_MATCH, OpenApiParameter("version", int, description="The version you read.")],
        request=s.VersionSerializer,
        responses={204: None, **WRITE_ERRORS},
        tags=["runtimes"],
    )
    def delete(self, request, name: str):
        self.get_policy(name)
        body = request.data if isinstance(request.data, dict) and request.data else {}
        if not body and "version" in request.query_params:
            body = {"version": request.query_params["version"]}
        data = self.validated(s.VersionSerializer, body)
        policy_services.policy_delete(
            name=name, expected_version=expected_version(request, data.get("version")), actor=request.user
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class PolicyExportApi(PolicyApiView):
    """Download a policy as YAML, ready for `kubectl apply --server-side`."""

    @extend_schema(
        operation_id="runtimes_export",
        summary="Export a policy as YAML",
        description="A YAML attachment without server-populated fields, ready for `kubectl apply --server-side`; "
        "disruptionMode is written in the form the cluster's CRD embeds, as the last cluster check found.",
        parameters=[OpenApiParameter("revision", int, description="Export this revision instead of the current.")],
        responses={**YAML_BODY, **ERRORS, **NOT_FOUND},
        tags=["runtimes"],
    )
    def get(self, request, name: str):
        policy = self.get_policy(name)
        manifest = policy.manifest
        raw_revision = request.query_params.get("revision")
        if raw_revision:
            number = parse_whole_number(raw_revision)
            if number is None or not 1 <= number <= MAX_VERSION:
                raise PortalError(
                    status=400,
                    code="invalid",
                    message="revision must be a revision number.",
                    fields=[field("revision", "must be a positive integer")],
                )
            manifest = selectors.revision_get(policy=policy, number=number).manifest
        manifest = selectors.manifest_in_cluster_form(manifest)
        response = HttpResponse(dump_yaml(manifest), content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{policy.name}.yaml"'
        response["ETag"] = f'"{policy.version}"'
        return response


class JsonErrorsNegotiation(DefaultContentNegotiation):
    """Always JSON for what DRF renders (errors): `?format=` names the export's format here, not a renderer."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class PolicyBulkExportApi(PolicyApiView):
    """Download every policy matching the list's filters as one YAML stream or one JSON `List`."""

    renderer_classes = [SafeJSONRenderer]
    content_negotiation_class = JsonErrorsNegotiation

    @extend_schema(
        operation_id="runtimes_export_bulk",
        summary="Export many policies (YAML stream or JSON List)",
        description="Every policy the list's filters select (same `search`, `framework`, … and `ordering`), in one "
        "answer: `format=yaml` (default) is one `---`-separated YAML stream, `format=json` a v1 `List`. Each "
        "manifest is as the single export writes it (no server-populated fields; disruptionMode in the cluster "
        "CRD's form). Both import unchanged (`POST /api/v1/runtimes/import/`) and apply with `kubectl apply "
        "--server-side -f`. Open to viewers.",
        parameters=[s.PolicyExportQuerySerializer],
        responses={
            # A `---` stream: read with a multi-document loader (yaml.safe_load_all), it is a list of manifests.
            (200, "application/yaml"): OpenApiResponse(
                {"type": "array", "items": {"type": "object", "additionalProperties": True}},
                description="format=yaml: one ClusterTrainingRuntime per `---` document; format=json: a v1 List.",
            ),
            (200, "application/json"): s.PolicyExportListSerializer,
        },
        tags=["runtimes"],
    )
    def get(self, request):
        query = s.PolicyExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        filters = dict(query.validated_data)
        output = filters.pop("format")
        manifests = [selectors.manifest_in_cluster_form(p.manifest) for p in selectors.policy_list(**filters)]
        if output == "json":
            body = SafeJSONRenderer().render({"apiVersion": "v1", "kind": "List", "items": manifests})
            response = HttpResponse(body, content_type="application/json")
            filename = "runtimes.json"
        else:
            response = HttpResponse(
                "".join(f"---\n{dump_yaml(m)}" for m in manifests), content_type="application/yaml; charset=utf-8"
            )
            filename = "runtimes.yaml"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


# --------------------------------------------------------------------------------------------------- import, validate


class PolicyImportApi(PolicyApiView):
    """Import one or many runtimes from YAML or JSON, all or nothing."""

    serializer_class = s.ImportRequestSerializer

    @extend_schema(
        operation_id="runtimes_import",
        summary="Import runtimes (all or nothing)",
        description="YAML (one or many `---` documents, or a `List`) or JSON, up to 1 MiB; or JSON `{text, mode, "
        "message}`. If any document is invalid nothing is saved and each problem names its `document` "
        "(0-based), `line` and field `path`. `mode=upsert` updates existing policies.",
        parameters=[
            OpenApiParameter("mode", str, enum=ImportMode.values, description="create-only (default) or upsert."),
            OpenApiParameter("message", str, description="Revision message (YAML bodies)."),
        ],
        request={"application/yaml": OpenApiTypes.STR, "application/json": s.ImportRequestSerializer},
        responses={
            200: OpenApiResponse(s.ImportResultSerializer, description="Nothing new created (updates only)."),
            201: OpenApiResponse(s.ImportResultSerializer, description="At least one policy created."),
            **ERRORS,
            413: WRITE_ERRORS[413],
        },
        examples=[
            OpenApiExample(
                "YAML body",
                value="apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n…",
                request_only=True,
                media_type="application/yaml",
            )
        ],
        tags=["runtimes"],
    )
    def post(self, request):
        data = request.data
        mode = request.query_params.get("mode") or ""
        message = self.query_message(request)
        if is_yaml(request):
            text = _text(data)
        elif isinstance(data, dict) and "text" not in data and ("kind" in data or "apiVersion" in data):
            text = json.dumps(data)  # a JSON manifest (or List) posted as is
        else:
            body = self.validated(s.ImportRequestSerializer, data)
            text, message, mode = body["text"], body["message"] or message, body.get("mode") or mode
        mode = mode or ImportMode.CREATE_ONLY
        if mode not in ImportMode.values:
            raise PortalError(
                status=400,
                code="invalid",
                message=f"Unknown import mode {mode!r}.",
                fields=[field("mode", f"use one of {', '.join(ImportMode.values)}", "invalid_choice")],
            )
        result = policy_services.policies_import(text=text, author=request.user, message=message[:500], mode=mode)
        code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        return Response(s.ImportResultSerializer(result).data, status=code)


class PolicyValidateApi(PolicyApiView):
    """Validate a manifest and report errors and warnings; nothing is saved (open to viewers too)."""

    serializer_class = s.ValidateRequestSerializer

    permission_classes = [HasCapability.of(PREVIEW_RUN)]

    @extend_schema(
        operation_id="runtimes_validate",
        summary="Validate a manifest (nothing saved)",
        description="Body: `{manifest}`, `{text}` (YAML/JSON) or a YAML body. Always 200 with `ok`, `errors` and "
        "`warnings` when the request itself is well formed; YAML errors carry line and column.",
        request={"application/json": s.ValidateRequestSerializer, "application/yaml": OpenApiTypes.STR},
        responses={200: s.ValidateResponseSerializer, **ERRORS, 413: WRITE_ERRORS[413]},
        tags=["runtimes"],
    )
    def post(self, request):
        data = request.data
        # Problem paths name the place in the request body (as on create): under "manifest." when it carried the
        # manifest there; manifestPath is the path inside the manifest either way.
        wrapped = isinstance(data, dict) and isinstance(data.get("manifest"), dict) and not is_yaml(request)
        if isinstance(data, dict) and "manifest" not in data and "text" not in data and ("kind" in data):
            data = {"manifest": data}
        if is_yaml(request):
            data = {"text": _text(data)}
        body = self.validated(s.ValidateRequestSerializer, data)
        manifest = body.get("manifest")
        if manifest is None:
            try:
                manifest = load_runtime(body["text"])
            except ManifestError as exc:
                problem = policy_services.parse_problem(exc)
                return Response({"ok": False, "errors": body_problems([problem], wrapped=False), "warnings": [],
                                 "scheduling": None})
        report = policy_services.policy_validate(manifest=manifest)
        summary = scheduling_summary(manifest)
        return Response(
            {
                "ok": report.ok,
                "errors": body_problems([p.as_dict() for p in report.errors], wrapped=wrapped),
                "warnings": body_problems([p.as_dict() for p in report.warnings], wrapped=wrapped),
                "scheduling": {"mode": summary.mode, "summary": summary.text, "levels": list(summary.levels)},
            }
        )


# --------------------------------------------------------------------------------------------------- history


class RevisionListApi(PolicyApiView):
    """A policy's revisions, newest first."""

    @extend_schema(
        operation_id="runtimes_revisions_list",
        summary="List a policy's revisions (newest first)",
        responses={200: s.RevisionOutputSerializer(many=True), **ERRORS, **NOT_FOUND},
        tags=["runtimes"],
    )
    def get(self, request, name: str):
        policy = self.get_policy(name)
        page = self.paginate_queryset(selectors.revision_list(policy=policy))
        data = s.RevisionOutputSerializer(page, many=True, context={"policy": policy}).data
        return self.get_paginated_response(data)


class RevisionDetailApi(PolicyApiView):
    """One revision with its manifest."""

    @extend_schema(
        operation_id="runtimes_revisions_retrieve",
        summary="Get one revision with its manifest",
        responses={200: s.RevisionDetailSerializer, **ERRORS, **NOT_FOUND},
        tags=["runtimes"],
    )
    def get(self, request, name: str, number: int):
        policy = self.get_policy(name)
        revision = selectors.revision_get(policy=policy, number=min(number, MAX_VERSION + 1))
        return Response(s.RevisionDetailSerializer(revision, context={"policy": policy}).data)


class RevisionDiffApi(PolicyApiView):
    """Differences between two revisions: unified YAML text and structural changes."""

    @extend_schema(
        operation_id="runtimes_diff",
        summary="Diff two revisions",
        description="`from` defaults to the revision before `to`; `to` defaults to the current revision.",
        parameters=[s.DiffQuerySerializer],
        responses={200: s.DiffOutputSerializer, **ERRORS, **NOT_FOUND},
        tags=["runtimes"],
    )
    def get(self, request, name: str):
        policy = self.get_policy(name)
        query = s.DiffQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        to_number = query.validated_data.get("to") or policy.version
        from_number = query.validated_data.get("from") or max(to_number - 1, 1)
        text, changes = selectors.revision_diff(policy=policy, from_number=from_number, to_number=to_number)
        return Response(
            {
                "name": policy.name,
                "fromRevision": from_number,
                "toRevision": to_number,
                "unified": text,
                "changes": [change.as_dict() for change in changes],
            }
        )


class PolicyRollbackApi(PolicyApiView):
    """Make an old revision's manifest current again (as a new revision)."""

    serializer_class = s.RollbackSerializer

    @extend_schema(
        operation_id="runtimes_rollback",
        summary="Roll back to an earlier revision",
        description="Makes a new revision whose manifest is the chosen revision's (history is never rewritten).",
        parameters=[IF_MATCH],
        request=s.RollbackSerializer,
        responses={200: s.PolicyOutputSerializer, **WRITE_ERRORS},
        tags=["runtimes"],
    )
    def post(self, request, name: str):
        self.get_policy(name)
        data = self.validated(s.RollbackSerializer, request.data)
        try:
            policy = policy_services.policy_rollback(
                name=name,
                to_revision=data["revision"],
                expected_version=expected_version(request, data.get("version")),
                author=request.user,
            )
        except RevisionNotFound as exc:
            raise PortalError(
                status=400,
                code="invalid",
                message=exc.message,
                fields=[field("revision", exc.message, "not_found")],
            )
        return self.policy_response(selectors.policy_get(name=policy.name))


