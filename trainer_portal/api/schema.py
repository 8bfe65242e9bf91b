"""The OpenAPI contract's shared parts: the error body, the error statuses every operation declares, the `?dialect`
parameter, and the post-processing that keeps the document valid OpenAPI 3.0 for strict tools and generators.

Endpoints get all of this without doing anything: `PortalAutoSchema` is the project's schema class
(``REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]``) and `postprocess_schema` runs last among drf-spectacular's
``POSTPROCESSING_HOOKS``. A view only declares what is its own (its 200, a 409 it raises, a 404 of its own words);
the statuses any operation can answer are added here, from what the view is:

* 401 and 403 on every authenticated operation (no valid credentials; a role that may not do this);
* 400 on every operation with a body or query parameters; 413 and 415 on every operation with a body;
* 404 on every operation with a path parameter;
* 429 where a throttle applies; 503 everywhere (the database is locked or unreachable: ``Retry-After``).

Every one has the project's one error body (`ErrorSerializer`, component ``Error``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework import serializers

from trainer_portal.api.dialect import CAMEL_ONLY, DIALECT_PARAM

ERROR_REF = {"$ref": "#/components/schemas/Error"}


# --------------------------------------------------------------------------------------------------- error body


class ErrorFieldSerializer(serializers.Serializer):
    """One problem of an error: where (``path``), what (``message``) and a machine-readable ``code``."""

    path = serializers.CharField(
        allow_blank=True,
        help_text="e.g. manifest.spec.scheduling.replicatedJobs[0].targetReplicatedJobs ('' = the whole body)",
    )
    manifestPath = serializers.CharField(required=False, help_text="Manifest problems: the path inside the manifest.")
    message = serializers.CharField(allow_blank=True)
    code = serializers.CharField()
    severity = serializers.CharField(required=False)
    document = serializers.IntegerField(required=False, help_text="Import only: 0-based document index.")
    line = serializers.IntegerField(required=False, allow_null=True)
    column = serializers.IntegerField(required=False, allow_null=True)


class ErrorChangeSerializer(serializers.Serializer):
    """409 on a stale version: one change made since the caller's version."""

    path = serializers.CharField()
    op = serializers.CharField(help_text="added, removed or changed")
    old = serializers.JSONField(required=False, allow_null=True)
    new = serializers.JSONField(required=False, allow_null=True)


class ClusterCauseSerializer(serializers.Serializer):
    field = serializers.CharField(allow_blank=True)
    message = serializers.CharField(allow_blank=True)
    reason = serializers.CharField(allow_blank=True)


class ClusterFailureSerializer(serializers.Serializer):
    """What the Kubernetes API answered when a cluster call behind the request failed."""

    type = serializers.CharField(help_text="e.g. KubeInvalid, KubeUnavailable")
    message = serializers.CharField(allow_blank=True)
    permanent = serializers.BooleanField()
    status = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField(allow_blank=True)
    causes = ClusterCauseSerializer(many=True)


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="invalid, not_found, conflict, not_authenticated, throttled, …")
    message = serializers.CharField()
    status = serializers.IntegerField(help_text="The HTTP status, repeated.")
    fields = ErrorFieldSerializer(many=True)
    currentVersion = serializers.IntegerField(required=False, help_text="409 only: the version to reload.")
    expectedVersion = serializers.IntegerField(required=False, help_text="409 only: the version you sent.")
    changes = ErrorChangeSerializer(many=True, required=False, help_text="409 only: what changed since your version.")
    cluster = ClusterFailureSerializer(required=False, help_text="Cluster failures (409/502/503): what the "
                                       "Kubernetes API answered.")


class ErrorSerializer(serializers.Serializer):
    """The body of every error response."""

    error = ErrorBodySerializer()


# --------------------------------------------------------------------------------------------------- statuses

DESCRIPTIONS = {
    "400": "Bad input; `error.fields[].path` names each problem.",
    "401": "No valid credentials: no session and no `Authorization: Token <key>`, or an expired or revoked token "
    "(`WWW-Authenticate: Token`).",
    "403": "Your role may not do this (or a session write without its CSRF token).",
    "404": "Nothing with this name or id (or nothing you may see).",
    "413": "The body is over the size limit (1 MiB).",
    "415": "The Content-Type is not one this operation takes.",
    "429": "Too many attempts from this address; see Retry-After.",
    "503": "The database is busy or unreachable (or the cluster, where one is called); retry after Retry-After.",
}
BODY_METHODS = {"POST", "PUT", "PATCH"}


def _has_schema(response: Any) -> bool:
    """Return whether a declared response has a body schema (not bare `{type: object}` or nothing)."""
    if not isinstance(response, dict):
        return False
    content = response.get("content") or {}
    schemas = [media.get("schema") for media in content.values()]
    return bool(schemas) and all(schema and schema != {"type": "object"} for schema in schemas)


class PortalAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema plus the error statuses each operation can answer (see the module docstring)."""

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        statuses = self.shared_error_statuses()
        for code in sorted(statuses | {c for c in responses if c.isdigit() and int(c) >= 400}):
            response = responses.get(code)
            if response is None:
                responses[code] = self._error_response(DESCRIPTIONS.get(code, ""))
            elif not _has_schema(response):
                # An error declared without a body (or as a bare object) still has the one error body.
                responses[code] = self._error_response(response.get("description") or DESCRIPTIONS.get(code, ""))
        return dict(sorted(responses.items(), key=lambda item: item[0]))

    def _error_response(self, description: str) -> dict:
        component = self.resolve_serializer(ErrorSerializer, "response")
        assert isinstance(component, ResolvedComponent)
        return {"content": {"application/json": {"schema": component.ref}}, "description": description}

    def shared_error_statuses(self) -> set[str]:
        """Return the error statuses (as strings) this operation can answer whatever its view does."""
        method = self.method.upper()
        statuses = {"503"}
        if self.get_auth():
            statuses |= {"401", "403"}
        if method in BODY_METHODS and self.get_request_serializer() is not None:
            statuses |= {"400", "413", "415"}
        if any(p.get("in") == "query" for p in self._operation_parameters()):
            statuses.add("400")
        if "{" in self.path:
            statuses.add("404")
        if self._throttled():
            statuses.add("429")
        return statuses

    def _operation_parameters(self) -> list[dict]:
        try:
            return list(self._process_override_parameters(direction="request").values())
        except Exception:  # pragma: no cover - drf-spectacular reports the problem itself when building parameters
            return []

    def _throttled(self) -> bool:
        view = self.view
        try:
            return bool(view.get_throttles())
        except Exception:  # a view whose get_throttles needs more than the schema's mock request
            return bool(getattr(view, "throttle_classes", ()))

    def get_override_parameters(self):
        parameters = list(super().get_override_parameters())
        if getattr(self.view, "camel_dialect", False):
            from drf_spectacular.utils import OpenApiParameter

            parameters.append(
                OpenApiParameter(
                    DIALECT_PARAM,
                    str,
                    enum=[CAMEL_ONLY],
                    description="`camel`: camelCase keys only (the next release's body). Without it, every "
                    "camelCase key that had a snake_case name in the first release also appears under that name "
                    "(`created_at` next to `createdAt`), deprecated.",
                )
            )
        return parameters


# --------------------------------------------------------------------------------------------------- post-processing


# The null alternative of a nullable reference, spelled as OpenAPI 3.0.3 allows it (nullable next to a type).
NULL_ONLY = {"type": "object", "nullable": True, "enum": [None]}


def _fix_nullable(node: Any) -> None:
    """Rewrite OpenAPI 3.0 `nullable` without `type` (meaningless in 3.0.3) in place, recursively.

    drf-spectacular's ``{allOf: [{$ref}], nullable: true}`` becomes ``{oneOf: [{$ref}, <null only>]}``, which
    validators accept and generators read as "the model or None"; a free value (``{nullable: true}``: any JSON,
    null included) loses ``nullable``, which adds nothing to "any value".
    """
    if isinstance(node, list):
        for item in node:
            _fix_nullable(item)
        return
    if not isinstance(node, dict):
        return
    for value in node.values():
        _fix_nullable(value)
    if not node.get("nullable") or "type" in node:
        return
    del node["nullable"]
    if "allOf" in node and len(node["allOf"]) == 1:
        node["oneOf"] = [node.pop("allOf")[0], dict(NULL_ONLY)]


def _fix_blank_enum_parameters(schema: dict) -> None:
    """Query filters whose blank value means "any": declare the real values only, without a blank default.

    drf-spectacular writes ``enum: ['', …]``, ``default: ''`` and ``minLength: 1`` together for them, which no
    value satisfies (openapi-spec-validator refuses the document). Absent and blank mean the same to the API.
    """
    for item in schema.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                param_schema = parameter.get("schema", {})
                enum = param_schema.get("enum")
                if parameter.get("in") != "query" or not enum or "" not in enum:
                    continue
                param_schema["enum"] = [value for value in enum if value != ""]
                if param_schema.get("default") == "":
                    del param_schema["default"]
                param_schema.pop("minLength", None)
                note = "Omit (or send empty) for any."
                parameter["description"] = f"{parameter.get('description', '')} {note}".strip()


def postprocess_schema(result: dict, generator, request, public) -> dict:
    """Return the finished schema made valid for OpenAPI 3.0 validators and generators (drf-spectacular hook)."""
    _fix_blank_enum_parameters(result)
    _fix_nullable(result.get("components", {}))
    _fix_nullable(result.get("paths", {}))
    return result
