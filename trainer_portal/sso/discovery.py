"""The provider's discovery document (``/.well-known/openid-configuration``), read once per process and cached.

Read on the first sign-in (never at start-up), with a short timeout: an unreachable provider makes the login page
say so instead of holding a web worker.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import requests

CACHE_SECONDS = 3600.0
_lock = threading.Lock()
_cache: dict[str, tuple[float, dict[str, Any]]] = {}
REQUIRED = ("authorization_endpoint", "token_endpoint", "jwks_uri")


class ProviderUnavailable(Exception):
    """The identity provider's discovery document could not be read or is incomplete."""


def provider_metadata(issuer: str, *, timeout: float = 5.0) -> dict[str, Any]:
    """Return the discovery document of ``issuer`` (cached for an hour).

    Raises ProviderUnavailable when it cannot be fetched, is not JSON, names another issuer or lacks an endpoint.
    """
    now = time.monotonic()
    with _lock:
        cached = _cache.get(issuer)
        if cached and now - cached[0] < CACHE_SECONDS:
            return cached[1]
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=timeout)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"the identity provider at {issuer} cannot be reached: {exc}") from exc
    if not isinstance(document, dict) or document.get("issuer", "").rstrip("/") != issuer:
        raise ProviderUnavailable(f"{url} does not describe the issuer {issuer}")
    missing = [key for key in REQUIRED if not isinstance(document.get(key), str)]
    if missing:
        raise ProviderUnavailable(f"{url} lacks {', '.join(missing)}")
    with _lock:
        _cache[issuer] = (now, document)
    return document


def forget() -> None:
    """Drop every cached document (tests; a provider that rotated its endpoints)."""
    with _lock:
        _cache.clear()
