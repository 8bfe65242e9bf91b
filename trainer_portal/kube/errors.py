"""Our own exception hierarchy for Kubernetes API failures.

The client library can change (it already changed its generator once); nothing outside ``trainer_portal.kube``
may depend on its exceptions. Every failure of a call to the cluster is raised as a :class:`KubeError` whose
``permanent`` flag says whether repeating the same call could ever succeed:

* permanent: bad input (400/422), forbidden (401/403), not found (404), server-side-apply conflicts (409 with
  field-manager causes). Retrying changes nothing; show the server's message.
* transient: 5xx, 429, timeouts and connection errors (``KubeUnavailable``), optimistic-concurrency 409s,
  and expired watches/lists (``KubeExpired``, 410: relist and go on).

Deliberately left out: any reference to ``kubernetes`` or ``urllib3`` types, so callers and tests can catch
these without importing the client.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "KubeCause",
    "KubeConflict",
    "KubeError",
    "KubeExpired",
    "KubeForbidden",
    "KubeInvalid",
    "KubeNotConfigured",
    "KubeNotFound",
    "KubeUnavailable",
    "error_from_status",
]

_MANAGER_RE = re.compile(r'conflict with "([^"]+)"')


@dataclass(frozen=True)
class KubeCause:
    """One cause from a Status object's ``details.causes``: the field path (may be empty), message and reason."""

    field: str
    message: str
    reason: str = ""

    def as_dict(self) -> dict:
        """Return the cause as a plain JSON-able dict ``{field, message, reason}``."""
        return {"field": self.field, "message": self.message, "reason": self.reason}


class KubeError(Exception):
    """A call to the Kubernetes API failed.

    Attributes: ``message`` (the server's message when there was one), ``permanent`` (True when retrying the same
    call cannot help), ``status`` (HTTP status or None for transport failures), ``reason`` (the Status reason such
    as ``Invalid``), ``causes`` (tuple of :class:`KubeCause`).
    """

    default_permanent = True

    def __init__(
        self,
        message: str,
        *,
        permanent: bool | None = None,
        status: int | None = None,
        reason: str = "",
        causes: tuple[KubeCause, ...] | list[KubeCause] = (),
    ) -> None:
        self.message = message
        self.permanent = self.default_permanent if permanent is None else permanent
        self.status = status
        self.reason = reason
        self.causes = tuple(causes)
        super().__init__(message)

    def __str__(self) -> str:
        return self.message

    def as_dict(self) -> dict:
        """Return a JSON-able description: ``{type, message, permanent, status, reason, causes}``."""
        return {
            "type": type(self).__name__,
            "message": self.message,
            "permanent": self.permanent,
            "status": self.status,
            "reason": self.reason,
            "causes": [cause.as_dict() for cause in self.causes],
        }

    def describe(self) -> str:
        """Return the sentence to show a user for this failure (the server's message)."""
        return self.message

    def field_causes(self) -> list[dict]:
        """Return ``[{path, message, reason}]`` for each object field the server named (paths without the dot)."""
        return [
            {"path": cause.field.lstrip("."), "message": cause.message, "reason": cause.reason}
            for cause in self.causes
            if cause.field or cause.message
        ]


class KubeNotConfigured(KubeError):
    """No usable cluster configuration (missing kubeconfig, unknown context, not running in a cluster)."""


class KubeNotFound(KubeError):
    """404: the object (or the whole API) does not exist."""


class KubeForbidden(KubeError):
    """401/403: the credentials are missing, rejected, or lack the RBAC permission for this verb."""


class KubeInvalid(KubeError):
    """400/422: the server rejected the object; ``causes`` carry one entry per offending field path."""

    @property
    def field_errors(self) -> list[dict]:
        """Return ``[{path, message, reason}]`` with paths stripped of the leading dot the server adds."""
        return [
            {"path": cause.field.lstrip("."), "message": cause.message, "reason": cause.reason}
            for cause in self.causes
        ]


class KubeConflict(KubeError):
    """409: a server-side-apply field conflict (permanent) or an optimistic-concurrency conflict (transient).

    ``managers`` names the other field managers that own the conflicting fields (empty for a plain conflict).
    """

    def __init__(self, message: str, **kwargs) -> None:
        super().__init__(message, **kwargs)
        found: list[str] = []
        for text in [message, *(cause.message for cause in self.causes)]:
            for manager in _MANAGER_RE.findall(text):
                if manager not in found:
                    found.append(manager)
        self.managers = tuple(found)

    def describe(self) -> str:
        """Return the server's message plus, on a field conflict, the managers owning the fields and the fixes."""
        if not self.managers:
            return self.message
        owners = ", ".join(f'"{manager}"' for manager in self.managers)
        return (
            f"{self.message} — the conflicting fields are owned by field manager {owners}. Re-apply with force to "
            "take them over, or adopt the live object."
        )

    def as_dict(self) -> dict:
        """Return :meth:`KubeError.as_dict` plus ``managers``."""
        return {**super().as_dict(), "managers": list(self.managers)}


class KubeUnavailable(KubeError):
    """The cluster could not answer: 5xx, 429, timeout or connection failure. Always transient.

    ``retry_after`` is the server's Retry-After in seconds when it sent one.
    """

    default_permanent = False

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class KubeExpired(KubeError):
    """410 Gone: the resourceVersion is too old (compacted). Relist, then watch from the new version."""

    default_permanent = False


def error_from_status(
    status: int, body: dict | None, *, fallback: str = "", retry_after: float | None = None
) -> KubeError:
    """Return the :class:`KubeError` subclass for HTTP ``status`` and a decoded Status ``body`` (or None).

    ``fallback`` is used as the message when the body carries none (e.g. a proxy's HTML error page).
    """
    body = body if isinstance(body, dict) else {}
    message = str(body.get("message") or fallback or f"HTTP {status}")
    reason = str(body.get("reason") or "")
    details = body.get("details") if isinstance(body.get("details"), dict) else {}
    causes = tuple(
        KubeCause(
            field=str(c.get("field") or ""), message=str(c.get("message") or ""), reason=str(c.get("reason") or "")
        )
        for c in (details.get("causes") or [])
        if isinstance(c, dict)
    )
    common = {"status": status, "reason": reason, "causes": causes}
    if status == 404:
        return KubeNotFound(message, **common)
    if status in (401, 403):
        return KubeForbidden(message, **common)
    if status in (400, 422):
        return KubeInvalid(message, **common)
    if status == 409:
        is_apply_conflict = any(c.reason == "FieldManagerConflict" for c in causes) or "Apply failed" in message
        return KubeConflict(message, permanent=is_apply_conflict, **common)
    if status == 410:
        return KubeExpired(message, **common)
    if status == 429 or status >= 500:
        return KubeUnavailable(message, retry_after=retry_after, **common)
    return KubeError(message, permanent=True, **common)
