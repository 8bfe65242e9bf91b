"""Errors of the jobs app: bad list parameters (→ 400 naming the field) and jobs the user may not see (→ 404)."""

from __future__ import annotations


class JobsError(Exception):
    """Base of the jobs app's errors; ``status`` is the HTTP status an interface should answer."""

    status = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidQuery(JobsError):
    """A list/filter parameter that cannot be used; ``field`` names it and the message says what is valid."""


class TrainJobNotFound(JobsError):
    """No visible TrainJob with that namespace and name (invisible jobs look exactly like missing ones)."""

    status = 404
    code = "not_found"


class InvalidGrant(JobsError):
    """A namespace grant that cannot be stored (bad namespace name, unknown group, duplicate)."""
