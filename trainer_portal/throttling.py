"""Rate limits on the doors that take a password: the HTML login form and the API token endpoints."""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle


class AuthRateThrottle(SimpleRateThrottle):
    """At most ``DEFAULT_THROTTLE_RATES["auth"]`` attempts per client address, signed in or not.

    The address is REMOTE_ADDR, or the X-Forwarded-For entry the trusted proxy added (``NUM_PROXIES``); usable on
    DRF views (``throttle_classes``) and on plain Django views (``allow_request(request, None)``).
    """

    scope = "auth"

    def get_rate(self) -> str:
        # Read now, not at import (DRF's default), so a changed setting applies at once.
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def retry_after(self) -> int:
        """Return the whole seconds until the next attempt is allowed (at least 1)."""
        return max(1, int(self.wait() or 1) + 1)
