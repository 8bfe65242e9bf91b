"""What every transport shares: the error it raises and the message it renders."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class TransportError(Exception):
    """Sending failed. ``permanent``: retrying cannot help (a refused address, a 4xx, a bad URL), so the delivery
    is given up at once; otherwise it is retried with backoff."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent


@dataclass(frozen=True)
class Message:
    """What one delivery sends: a title, a plain-text body and the JSON document (webhooks send it as is).

    ``delivery_id`` and ``idempotency_key`` let a receiver drop a retried copy it has already processed."""

    title: str
    body: str
    document: dict[str, Any]
    delivery_id: int
    idempotency_key: str
