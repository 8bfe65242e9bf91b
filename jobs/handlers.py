"""Watch-event interface of the jobs app (filled in below)."""

from __future__ import annotations


def register_with_hub() -> None:
    """Register the admission handler with the cluster informer hub, when this build has one."""
