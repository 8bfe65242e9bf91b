"""Errors of the jobs app (the portal's one error family): bad list parameters and grants (400, naming the field)
and TrainJobs the caller may not see (404 — exactly like a missing one)."""

from __future__ import annotations

from trainer_portal.errors import PortalError
from trainer_portal.errors import field as error_field


class JobsError(PortalError):
    """Base of the jobs app's errors; ``field`` names the input the problem concerns ("" for none)."""

    code = "invalid"
    status = 400

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message, fields=[error_field(field, message)] if field else None)
        self.field = field


class InvalidQuery(JobsError):
    """A list/filter parameter that cannot be used; ``field`` names it and the message says what is valid."""


class TrainJobNotFound(JobsError):
    """No visible TrainJob with that namespace and name (invisible jobs look exactly like missing ones)."""

    code = "not_found"
    status = 404


class InvalidGrant(JobsError):
    """A namespace grant that cannot be stored (bad namespace name, unknown group, duplicate)."""
