"""Errors of the user services: each names the field at fault and the HTTP status it maps to."""

from __future__ import annotations

from trainer_portal.errors import PortalError, field

_CODES = {400: "invalid", 404: "not_found", 409: "conflict"}


class UserError(PortalError):
    """A change to a user that is refused: ``field`` names the input at fault (as the API spells it), ``status``
    is 400 (bad input), 404 (no such user) or 409 (conflicts with what exists: a taken username, the last
    platform admin). The API reports it as ``error.fields[0].path``; the page next to the form field."""

    def __init__(self, field_name: str, message: str, status: int = 400):
        code = _CODES.get(status, "invalid")
        super().__init__(message, code=code, status=status, fields=[field(field_name, message, code)])
        self.field = field_name
