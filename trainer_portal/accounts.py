"""Account operations the interfaces need: the API token of a user."""

from __future__ import annotations

from rest_framework.authtoken.models import Token


def api_token_for(*, user) -> str:
    """Return ``user``'s API token, creating it on first use (the same token every time after that)."""
    token, _ = Token.objects.get_or_create(user=user)
    return token.key
