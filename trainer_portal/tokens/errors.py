"""Errors of the token services."""

from __future__ import annotations


class TokenNotFound(LookupError):
    """No token with that id belongs to the user (it never existed, was revoked, or is someone else's)."""
