"""Generic webhooks: the event as JSON, signed with HMAC-SHA256 over ``<timestamp>.<body>`` with the channel's
secret (docs/operations.md "Notifications" has the payload and how to verify it)."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as LookupTimeout
from urllib.parse import urlsplit

import requests
from django.conf import settings

from .base import Message, TransportError

# Cloud metadata services that are not link-local (AWS's IPv6 endpoint; Alibaba's).
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("100.100.100.200")})
# A web request checks a new channel's host: a hung resolver must not hold the web worker longer than this.
RESOLVE_TIMEOUT_SECONDS = 3.0
_resolver = ThreadPoolExecutor(max_workers=4, thread_name_prefix="webhook-resolve")


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """Return ``sha256=<hex>``: HMAC-SHA256 with ``secret`` over ``timestamp`` + "." + ``body``."""
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def refused_address(url: str) -> str:
    """Return why ``url`` may not be called ("" when it may): not http(s), no host, a host that does not resolve
    within RESOLVE_TIMEOUT_SECONDS, or one that resolves to a link-local, metadata, multicast or unspecified address
    (unless ``NOTIFICATIONS_ALLOW_LINK_LOCAL``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "the URL must be http:// or https:// with a host"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        lookup = _resolver.submit(socket.getaddrinfo, parts.hostname, port, proto=socket.IPPROTO_TCP)
        infos = lookup.result(timeout=RESOLVE_TIMEOUT_SECONDS)
    except LookupTimeout:
        return f"the host did not resolve within {RESOLVE_TIMEOUT_SECONDS:g} s"
    except (OSError, ValueError) as exc:
        return f"the host does not resolve ({exc})"
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if address.is_multicast or address.is_unspecified:
            return f"the host resolves to {address}, which cannot receive webhooks"
        if (address.is_link_local or address in METADATA_ADDRESSES) and not settings.NOTIFICATIONS_ALLOW_LINK_LOCAL:
            return (f"the host resolves to the link-local or metadata address {address}; set "
                    "TRAINER_PORTAL_NOTIFY_ALLOW_LINK_LOCAL=1 to allow it")
    return ""


def send(*, target: str, secret: str, message: Message) -> None:
    """POST ``message.document`` as JSON to ``target``, signed with ``secret``. Raises TransportError (permanent for
    a refused address and for 4xx answers other than 408 and 429)."""
    problem = refused_address(target)
    if problem:
        raise TransportError(problem, permanent=True)
    body = json.dumps(message.document, separators=(",", ":"), sort_keys=True).encode("utf-8")
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "trainer-portal-notifications",
        "X-Portal-Event": str(message.document.get("kind", "")),
        "X-Portal-Delivery": str(message.delivery_id),
        "X-Portal-Idempotency-Key": message.idempotency_key,
        "X-Portal-Timestamp": timestamp,
        "X-Portal-Signature": signature(secret, timestamp, body),
    }
    try:
        # No redirects: a redirect could lead past the address check.
        response = requests.post(target, data=body, headers=headers, allow_redirects=False,
                                 timeout=settings.NOTIFICATIONS_HTTP_TIMEOUT_SECONDS)
    except requests.RequestException as exc:
        raise TransportError(f"the receiver could not be reached: {exc.__class__.__name__}") from exc
    if 200 <= response.status_code < 300:
        return
    permanent = 400 <= response.status_code < 500 and response.status_code not in (408, 429)
    raise TransportError(f"the receiver answered {response.status_code}", permanent=permanent)
