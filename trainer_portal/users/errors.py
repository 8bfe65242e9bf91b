"""Errors of the user services: each names the field at fault and the HTTP status it maps to."""

from __future__ import annotations


class UserError(Exception):
    """A change to a user that is refused: ``field`` names the input at fault, ``status`` is 400 (bad input),
    404 (no such user) or 409 (conflicts with what exists: a taken username, the last platform admin)."""

    def __init__(self, field: str, message: str, status: int = 400):
        super().__init__(message)
        self.field = field
        self.message = message
        self.status = status
