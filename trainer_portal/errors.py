"""The portal's one error family: every refusal a user can act on is a `PortalError`.

A `PortalError` carries plain data and no HTTP or form types, so every interface reports it its own way: the REST
API maps it through `trainer_portal.api.exceptions` (``status`` and ``code`` become the response's status and
``error.code``; ``fields`` become ``error.fields``), HTML views show ``message`` next to the form or as a flash
message, commands print it. Apps subclass it with their own defaults (`runtimes.errors`).
"""

from __future__ import annotations

from typing import Any


class PortalError(Exception):
    """A refused operation.

    Attributes: ``message`` (a sentence fit to show to the user, naming the fix), ``code`` (a stable machine
    code such as ``invalid`` or ``not_found``), ``status`` (the HTTP status an API answers with), ``fields``
    (``[{path, message, code}]``, the input paths the problem concerns) and ``extra`` (more keys of the API's
    error body, e.g. the current version on a conflict). Subclasses set ``code`` and ``status`` as class defaults.
    """

    code = "error"
    status = 400

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        fields: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self._fields = list(fields or [])
        self.extra = dict(extra or {})

    @property
    def fields(self) -> list[dict[str, Any]]:
        """Return the ``[{path, message, code}]`` items the problem concerns (empty when it concerns no field)."""
        return self._fields


def field(path: str, message: str, code: str = "invalid") -> dict[str, Any]:
    """Return one ``{path, message, code}`` item of `PortalError.fields`."""
    return {"path": path, "message": message, "code": code}
