"""THE exception handler of the REST API: every error becomes one structured JSON body.

Error body shape (all endpoints)::

    {"error": {"code": "invalid", "message": "...", "fields": [{"path": "spec.x", "message": "...", "code": "..."}],
               "status": 400, ...extra}}

Four sources are mapped, nothing else may produce an error body:

* `trainer_portal.errors.PortalError` (and every app's subclass): its ``status``, ``code``, ``message``,
  ``fields`` and ``extra``.
* `trainer_portal.kube.errors.KubeError` escaping a service: 409 for a conflict, 502 when the cluster refused the
  call for good (``permanent``), 503 when it could not answer (transient); ``error.cluster`` holds what the
  Kubernetes API said, and ``fields`` the object paths it named.
* DRF's own exceptions (validation, authentication, permission, parse, media type, throttling).
* A database ``OperationalError`` (SQLite locked past its busy timeout, PostgreSQL unreachable): 503 with
  ``Retry-After``, like every 503 here.

Anything else is a bug and is left to Django (a 500 with the traceback in the log).
"""

from __future__ import annotations

from typing import Any

from django.db import OperationalError
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from trainer_portal.errors import PortalError
from trainer_portal.kube.errors import KubeConflict, KubeError
from trainer_portal.middleware import MESSAGE as DATABASE_UNAVAILABLE
from trainer_portal.middleware import RETRY_AFTER_SECONDS

CLUSTER_ERROR_CODE = "cluster_error"
MAX_MESSAGE_LENGTH = 4000


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


def error_body(
    *, status: int, code: str, message: str, fields: list[dict[str, Any]], extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Return the ``{"error": {...}}`` body every API error has."""
    body = {"error": {"code": code, "message": message, "fields": fields, "status": status}}
    if extra:
        body["error"].update(extra)
    return body


def kube_status(exc: KubeError) -> int:
    """Return the HTTP status an API answers with when the cluster call behind it failed with ``exc``."""
    if isinstance(exc, KubeConflict):
        return 409
    return 502 if exc.permanent else 503


def _kube_response(exc: KubeError) -> Response:
    fields = [
        {"path": item["path"], "message": item["message"], "code": item["reason"] or "invalid"}
        for item in exc.field_causes()
    ]
    status = kube_status(exc)
    body = error_body(
        status=status,
        code=CLUSTER_ERROR_CODE,
        message=exc.describe()[:MAX_MESSAGE_LENGTH],
        fields=fields,
        extra={"cluster": exc.as_dict()},
    )
    # A cluster that did not answer (in time) is a 503 like any other: say when to come back.
    return Response(body, status=status, headers=_retry_after(status))


def _retry_after(status: int) -> dict[str, str] | None:
    # A 503 is temporary by definition: say when to come back.
    return {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 503 else None


def _request_fields(exc: Exception, message: str) -> list[dict[str, Any]]:
    """Return the field items of an error about the request as a whole: the body ("") or its Content-Type."""
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return [{"path": "Content-Type", "message": message, "code": "unsupported_media_type"}]
    if isinstance(exc, exceptions.ParseError):
        return [{"path": "", "message": message, "code": "parse_error"}]
    return []


def exception_handler(exc, context):
    """Return the structured JSON error response for ``exc``, or None to let Django produce a 500."""
    if isinstance(exc, PortalError):
        body = error_body(status=exc.status, code=exc.code, message=exc.message, fields=exc.fields, extra=exc.extra)
        return Response(body, status=exc.status, headers=_retry_after(exc.status))
    if isinstance(exc, OperationalError):  # the database is locked past its timeout, or unreachable
        body = error_body(status=503, code="unavailable", message=DATABASE_UNAVAILABLE, fields=[])
        return Response(body, status=503, headers=_retry_after(503))
    if isinstance(exc, KubeError):
        return _kube_response(exc)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = getattr(exc, "detail", response.data)
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(detail)
        message = fields[0]["message"] if len(fields) == 1 else f"{len(fields)} problems in the request."
        code = "invalid"
    else:
        message = str(detail.get("detail", detail)) if isinstance(detail, dict) else str(detail)
        code = getattr(exc, "default_code", "error")
        fields = _request_fields(exc, message)
    body = error_body(status=response.status_code, code=code, message=message, fields=fields)
    return Response(body, status=response.status_code, headers=dict(response.items()))
