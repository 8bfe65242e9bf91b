"""Issuing, authenticating and revoking API tokens."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from .errors import TokenNotFound, TokenOutlivesItsMinter
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


def token_issue(*, user, name: str, lifetime: timedelta | None = None, now: datetime | None = None,
                minted_by: ApiToken | None = None) -> IssuedToken:
    """Create a token for ``user`` valid for ``lifetime`` (default: the setting); return it with its key.

    ``minted_by`` is the token that authenticated the request, if any: the new token expires no later than it (the
    default lifetime is shortened to fit) and is revoked with it. Raises TokenOutlivesItsMinter when an explicit
    ``lifetime`` would outlive ``minted_by``.
    """
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    now = now or timezone.now()
    expires_at = now + (lifetime or token_lifetime())
    if minted_by is not None and expires_at > minted_by.expires_at:
        if lifetime is not None:
            raise TokenOutlivesItsMinter(minted_by.expires_at)
        expires_at = minted_by.expires_at
    token = ApiToken.objects.create(
        user=user, name=name.strip()[:100] or "API token", key_hash=key_hash(key), prefix=key[:10],
        expires_at=expires_at, minted_by=minted_by,
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


def tokens_revoke_all(*, user) -> int:
    """Delete every token of ``user`` (password changed, account disabled, no role left); return how many."""
    _, by_model = ApiToken.objects.filter(user=user).delete()
    return by_model.get(ApiToken._meta.label, 0)


def token_revoke(*, user, token_id: int) -> None:
    """Delete token ``token_id`` of ``user`` and every token it minted (recursively).

    Raises TokenNotFound when ``user`` has no such token.
    """
    deleted, _ = ApiToken.objects.filter(user=user, pk=token_id).delete()
    if not deleted:
        raise TokenNotFound(token_id)
