"""API-wide pieces: the DRF exception handler that turns every error into structured JSON.

Error body shape (all endpoints)::

    {"error": {"code": "invalid", "message": "...", "fields": [{"path": "spec.x", "message": "...", "code": "..."}]}}
"""

from __future__ import annotations

import copy

from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def _flatten(detail, prefix: str = "") -> list[dict]:
    """Return DRF error ``detail`` (nested dict/list of ErrorDetail) as a flat list of {path, message, code}."""
    items: list[dict] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            path = key if not prefix else f"{prefix}.{key}"
            if key in ("non_field_errors", "detail"):
                path = prefix
            items.extend(_flatten(value, path))
    elif isinstance(detail, list):
        for index, value in enumerate(detail):
            if isinstance(value, (dict, list)):
                items.extend(_flatten(value, f"{prefix}[{index}]"))
            else:
                items.extend(_flatten(value, prefix))
    else:
        items.append({"path": prefix, "message": str(detail), "code": getattr(detail, "code", "invalid")})
    return items


def exception_handler(exc, context):
    """Return a structured JSON error response for ``exc``, or None to let Django produce a 500.

    Views may raise ``rest_framework.exceptions.APIException`` subclasses whose ``detail`` is already a
    list of ``{path, message, code}`` dicts (domain validation problems); those pass through untouched.
    """
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = getattr(exc, "detail", response.data)
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(detail)
        message = fields[0]["message"] if len(fields) == 1 else f"{len(fields)} problems in the request."
        code = "invalid"
    else:
        fields = []
        message = str(detail.get("detail", detail)) if isinstance(detail, dict) else str(detail)
        code = getattr(exc, "default_code", "error")
        if isinstance(detail, dict) and "fields" in detail:
            fields = detail["fields"]
            message = detail.get("message", message)
            code = detail.get("code", code)
    body = {"error": {"code": code, "message": message, "fields": fields, "status": response.status_code}}
    extra = getattr(exc, "extra", None)
    if extra:
        body["error"].update(extra)
    return Response(body, status=response.status_code, headers=dict(response.items()))


class Conflict(exceptions.APIException):
    """409: the object changed since the client read it; ``extra`` carries what changed."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The object changed since you loaded it."
    default_code = "conflict"

    def __init__(self, detail=None, *, extra: dict | None = None):
        super().__init__(detail)
        self.extra = extra or {}


class SafeJSONRenderer(JSONRenderer):
    """JSONRenderer that cannot fail on unpaired surrogates.

    A `"\\ud800"` escape in a request decodes to a lone surrogate, which error messages and field paths may echo;
    UTF-8 cannot encode it, so such responses fall back to ASCII escapes (still valid JSON) instead of a 500.
    """

    def render(self, data, accepted_media_type=None, renderer_context=None):
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            ascii_only = copy.copy(self)
            ascii_only.ensure_ascii = True
            return JSONRenderer.render(ascii_only, data, accepted_media_type, renderer_context)

