"""Reading a user's API tokens."""

from __future__ import annotations

from django.db.models import QuerySet

from .models import ApiToken


def token_list(*, user) -> QuerySet[ApiToken]:
    """Return ``user``'s tokens, newest first (expired ones included, so the owner sees and can remove them)."""
    return ApiToken.objects.filter(user=user)
