"""Marking the views a live stream may follow (nothing else can be requested through a stream)."""

from __future__ import annotations

from collections.abc import Callable

from django.urls import Resolver404, resolve


def live_fragment(view: Callable) -> Callable:
    """Mark ``view`` as a live fragment: a GET answering 304 to a current ``If-None-Match`` and otherwise the HTML
    that brings the page up to date, starting with its next poller (``class="jobs-poller"``, ``hx-get``).
    Returns ``view`` itself."""
    view.live_fragment = True
    return view


def is_live_fragment(path: str) -> bool:
    """Return whether ``path`` (no query) resolves to a view marked with :func:`live_fragment`."""
    try:
        match = resolve(path)
    except Resolver404:
        return False
    return bool(getattr(match.func, "live_fragment", False))


def fragment_capability(path: str) -> str | None:
    """Return the capability the fragment at ``path`` declares (``capability_required``), or None."""
    try:
        return getattr(resolve(path).func, "capability", None)
    except Resolver404:
        return None
