"""`ApiError`: an error that the server renders as a `metav1.Status` body with the matching HTTP code."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A failed API call. `reason` is the metav1 StatusReason (NotFound, AlreadyExists, Conflict, Invalid, ...)."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        """Returns the metav1.Status body for this error."""
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        return body


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    """Returns the 404 NotFound error `<resource>.<group> "<name>" not found`."""
    qualified = f"{resource}.{group}" if group else resource
    details = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return ApiError(404, "NotFound", f'{qualified} "{name}" not found', details)


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    """Returns the 409 AlreadyExists error."""
    qualified = f"{resource}.{group}" if group else resource
    details = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return ApiError(409, "AlreadyExists", f'{qualified} "{name}" already exists', details)


def conflict(resource: str, name: str, group: str, why: str) -> ApiError:
    """Returns the 409 Conflict error used for stale resourceVersions and UID preconditions."""
    qualified = f"{resource}.{group}" if group else resource
    details = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {qualified} "{name}": {why}', details)


def bad_request(message: str) -> ApiError:
    """Returns a 400 BadRequest error."""
    return ApiError(400, "BadRequest", message)


def invalid(kind: str, group: str, name: str, causes: list[dict[str, str]]) -> ApiError:
    """Returns the 422 Invalid error; `causes` items have `reason`, `message` and `field`."""
    qualified = f"{kind}.{group}" if group else kind
    summary = "; ".join(f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes)
    if len(causes) > 1:
        summary = f"[{summary.replace('; ', ', ')}]"
    details: dict[str, Any] = {"name": name, "kind": kind, "causes": causes}
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {summary}', details)


def expired(message: str) -> ApiError:
    """Returns the 410 Expired error for compacted resource versions."""
    return ApiError(410, "Expired", message)
