"""Errors of the policy API (to be folded into the project's exception handler)."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions

from runtimes.api.serializers import policies as s
from runtimes.domain.diff import Change
from runtimes.errors import (
    ImportInvalid,
    PolicyError,
    PolicyInvalid,
    PolicyNameTaken,
    PolicyNotFound,
    RevisionNotFound,
    StaleVersion,
)
from trainer_portal.api import Conflict

MAX_VERSION = 2**31 - 1
YAML_MEDIA_TYPES = ("application/yaml", "text/yaml", "application/x-yaml", "text/x-yaml")



# --------------------------------------------------------------------------------------------------- errors


class ApiError(exceptions.APIException):
    """An error whose body is already the structured `{code, message, fields}` (kept as is, ints included)."""

    def __init__(
        self,
        *,
        status_code: int,
        code: str,
        message: str,
        fields: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, code)
        self.status_code = status_code
        self.default_code = code
        # Assigned after __init__, which would otherwise turn every value (line numbers too) into strings.
        self.detail = {"code": code, "message": message, "fields": fields or []}
        self.extra = extra or {}


def error_field(path: str, message: str, code: str = "invalid") -> dict[str, Any]:
    return {"path": path, "message": message, "code": code}


def _prefixed(problems: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    result = []
    for problem in problems:
        path = problem.get("path") or ""
        result.append({**problem, "path": f"{prefix}.{path}" if path and prefix else (path or prefix)})
    return result


def change_dicts(changes: list[Change]) -> list[dict[str, Any]]:
    """Return domain changes as JSON-ready dicts."""
    return [s.change_dict(change) for change in changes]


def api_error_for(exc: PolicyError, *, prefix: str = "manifest") -> exceptions.APIException:
    """Return the API exception for service error `exc`; manifest field paths get `prefix` in front."""
    if isinstance(exc, ImportInvalid):
        return ApiError(status_code=400, code="invalid", message=exc.message, fields=exc.problems)
    if isinstance(exc, PolicyInvalid):
        return ApiError(status_code=400, code="invalid", message=exc.message, fields=_prefixed(exc.problems, prefix))
    if isinstance(exc, StaleVersion):
        return Conflict(
            exc.message,
            extra={
                "code": "conflict",
                "currentVersion": exc.current_version,
                "expectedVersion": exc.expected_version,
                "changes": change_dicts(exc.changes),
            },
        )
    if isinstance(exc, PolicyNameTaken):
        return ApiError(
            status_code=409,
            code="name_taken",
            message=exc.message,
            fields=[error_field(f"{prefix}.metadata.name", exc.message, "name_taken")],
        )
    if isinstance(exc, PolicyNotFound | RevisionNotFound):
        return ApiError(status_code=404, code="not_found", message=exc.message)
    return ApiError(status_code=400, code=exc.code, message=exc.message)




