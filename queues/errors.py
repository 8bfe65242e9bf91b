"""Errors of the queues app: a bad query parameter (400, naming the field) and a queue the caller may not see or
that does not exist (404, alike)."""

from __future__ import annotations

from trainer_portal.errors import PortalError
from trainer_portal.errors import field as error_field


class QueuesError(PortalError):
    """Base of the queues app's errors; ``field`` names the input the problem concerns ("" for none)."""

    code = "invalid"
    status = 400

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message, fields=[error_field(field, message)] if field else None)
        self.field = field


class InvalidQuery(QueuesError):
    """A query parameter that cannot be used; the message says what is valid."""


class QueueNotFound(QueuesError):
    """No such queue on that cluster, or one the caller may not see (alike)."""

    code = "not_found"
    status = 404
