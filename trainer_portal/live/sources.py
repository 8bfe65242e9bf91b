"""The watermarks live streams watch: apps register a function returning a value that changes whenever anything
their live fragments show may have changed (plain data, compared with ``==``).

Registered from an app's ``AppConfig.ready()``; the stream process calls every source once per tick, so a source
must be cheap (an indexed MAX, a handful of rows). No framework import: the registry is plain Python.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

_SOURCES: dict[str, Callable[[], Hashable]] = {}


def register(name: str, source: Callable[[], Hashable]) -> None:
    """Register (or replace) the watermark ``source`` under ``name``."""
    _SOURCES[name] = source


def watermark() -> tuple:
    """Return the current watermark of every registered source, in name order. Raises what a source raises."""
    return tuple((name, _SOURCES[name]()) for name in sorted(_SOURCES))
