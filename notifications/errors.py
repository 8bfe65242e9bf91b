"""Errors of the notifications services: `PortalError`s, so the API maps them (status, code, fields) and pages
show their message next to the field."""

from __future__ import annotations

from trainer_portal.errors import PortalError, field


class ChannelNotFound(PortalError):
    """No such channel of the caller's (404: another user's channel is not found either)."""

    code = "not_found"
    status = 404


class SubscriptionNotFound(PortalError):
    """No such subscription of the caller's."""

    code = "not_found"
    status = 404


class Invalid(PortalError):
    """A field is wrong (400); ``field_name`` names it and the message says the fix."""

    code = "invalid"
    status = 400

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message, fields=[field(field_name, message)])
        self.field_name = field_name
