"""Errors of the token services."""

from __future__ import annotations


class TokenNotFound(LookupError):
    """No token with that id belongs to the user (it never existed, was revoked, or is someone else's)."""


class TokenOutlivesItsMinter(ValueError):
    """A token asked for a token that would outlive it (``latest`` is the last moment the new one may live)."""

    def __init__(self, latest):
        super().__init__("a token may not create a token that outlives it "
                         f"(this one expires {latest:%Y-%m-%d %H:%M} UTC)")
        self.latest = latest
