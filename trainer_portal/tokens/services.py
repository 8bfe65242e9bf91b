"""Issuing, authenticating and revoking API tokens."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from .errors import TokenNotFound
from .models import ApiToken

KEY_PREFIX = "tp_"


@dataclass(frozen=True)
class IssuedToken:
    """A new token and its key: the only moment the key is known."""

    token: ApiToken
    key: str


def key_hash(key: str) -> str:
    """Return the stored form of ``key`` (SHA-256, hex)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def token_lifetime() -> timedelta:
    """Return how long a new token is valid (``settings.API_TOKEN_LIFETIME_DAYS``)."""
    return timedelta(days=settings.API_TOKEN_LIFETIME_DAYS)


def token_issue(*, user, name: str, lifetime: timedelta | None = None, now: datetime | None = None) -> IssuedToken:
    """Create a token for ``user`` valid for ``lifetime`` (default: the setting); return it with its key."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    now = now or timezone.now()
    token = ApiToken.objects.create(
        user=user, name=name.strip()[:100] or "API token", key_hash=key_hash(key), prefix=key[:10],
        expires_at=now + (lifetime or token_lifetime()),
    )
    return IssuedToken(token=token, key=key)


def token_authenticate(*, key: str, now: datetime | None = None) -> tuple[ApiToken | None, str]:
    """Return ``(token, "")`` for a valid key, or ``(None, reason)`` naming why it is not accepted."""
    token = ApiToken.objects.select_related("user").filter(key_hash=key_hash(key)).first()
    if token is None:
        return None, "Invalid token."
    if token.expires_at <= (now or timezone.now()):
        return None, "This token has expired; create a new one on the API tokens page."
    if not token.user.is_active:
        return None, "The token's account is disabled."
    return token, ""


def token_revoke(*, user, token_id: int) -> None:
    """Delete token ``token_id`` of ``user``. Raises TokenNotFound when ``user`` has no such token."""
    deleted, _ = ApiToken.objects.filter(user=user, pk=token_id).delete()
    if not deleted:
        raise TokenNotFound(token_id)
