"""Transports in the Healthchecks style: one module per channel kind, each with ``send(target, secret, message)``
raising :class:`TransportError` (``permanent`` when retrying cannot help)."""

from __future__ import annotations

from . import chat, email, webhook
from .base import Message, TransportError

SENDERS = {"email": email.send, "webhook": webhook.send, "chat": chat.send}

__all__ = ["SENDERS", "Message", "TransportError"]
