"""Watch streams: initial state, resume from a resourceVersion, selector entry/exit, bookmarks, timeouts, 410.

`WatchRequest.open()` registers with the store (raising ApiError before any byte is sent); `stream()` then
writes newline-delimited JSON events through a `write(bytes)` callable until the timeout, a client disconnect,
a server stop or a `cut-watch` fault.
"""

from __future__ import annotations

import collections
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sandbox.apiserver.errors import bad_request, expired, invalid
from sandbox.apiserver.registry import Registry
from sandbox.apiserver.resources import ResourceType
from sandbox.apiserver.store import Event, Subscription, dumps

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass
class WatchRequest:
    """A parsed watch request (query parameters already decoded)."""

    registry: Registry
    rt: ResourceType
    namespace: str | None
    resource_version: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    allow_bookmarks: bool = False
    send_initial_events: bool | None = None
    resource_version_match: str | None = None
    timeout: float = 1800.0
    bookmark_interval: float = 5.0
    cut_after: int | None = None
    render: Callable[[dict[str, Any]], bytes] | None = None
    _sub: Subscription | None = None
    _initial: list[Any] = field(default_factory=list)
    _backlog: list[Event] = field(default_factory=list)
    _expired: bool = False
    _start_rv: int = 0

    def open(self) -> None:
        """Validates options and subscribes. Raises ApiError (400/422) for bad parameters."""
        self.match = self.registry.matcher(self.rt, self.label_selector, self.field_selector)
        if self.send_initial_events is not None and self.resource_version_match != "NotOlderThan":
            raise invalid("ListOptions", "meta.k8s.io", "", [{
                "reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                "message": "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"}])
        if self.send_initial_events is None and self.resource_version_match:
            raise invalid("ListOptions", "meta.k8s.io", "", [{
                "reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                "message": "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                           "provided"}])
        rv = self.resource_version
        since: int | None = None
        if rv not in (None, "", "0"):
            try:
                since = int(rv)
            except ValueError:
                raise bad_request(f"invalid resource version: {rv!r}")
        store = self.registry.store
        with store.lock:
            initial = self.send_initial_events or (self.send_initial_events is None and since is None)
            if initial:
                self._sub, _ = store.subscribe(self.rt.key, None)
                ns = self.namespace if self.rt.namespaced else None
                self._initial = [e for e in store.list(self.rt.key, ns) if self.match is None or self.match(e.obj)]
            else:
                self._sub, backlog = store.subscribe(self.rt.key, since)
                if backlog is None:
                    self._expired = True
                else:
                    self._backlog = backlog
            self._start_rv = store.rv

    def close(self) -> None:
        if self._sub is not None:
            self.registry.store.unsubscribe(self._sub)

    # -- rendering -------------------------------------------------------------------------------------------
    def _frame(self, event_type: str, obj: dict[str, Any] | None = None, raw: bytes | None = None) -> bytes:
        if self.render is not None and obj is not None and event_type not in ("BOOKMARK", "ERROR"):
            raw = self.render(obj)
        elif raw is None:
            raw = dumps(obj)
        elif obj is not None and obj.get("apiVersion") != self.rt.api_version:
            raw = dumps({**obj, "apiVersion": self.rt.api_version})
        return b'{"type":"' + event_type.encode() + b'","object":' + raw + b"}\n"

    def _bookmark(self, rv: int, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        return self._frame("BOOKMARK", {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta})

    def _translate(self, event: Event) -> str | None:
        """Returns the event type this watcher sees (selector entry/exit), or None to skip it."""
        if self.rt.namespaced and self.namespace is not None and event.namespace != self.namespace:
            return None
        if self.match is None:
            return event.type
        now_matches = self.match(event.obj)
        if event.type == "ADDED":
            return "ADDED" if now_matches else None
        before = event.prev is not None and self.match(event.prev)
        if event.type == "DELETED":
            return "DELETED" if (before or now_matches) else None
        if before and now_matches:
            return "MODIFIED"
        if now_matches:
            return "ADDED"
        if before:
            return "DELETED"
        return None

    # -- streaming -------------------------------------------------------------------------------------------
    def stream(self, write: Callable[[bytes], None], stopping: Callable[[], bool]) -> None:
        """Writes events until timeout/disconnect/stop. OSError from `write` ends the stream quietly."""
        sent = 0
        deadline = time.monotonic() + self.timeout
        try:
            if self._expired:
                floor = self.registry.store.floor(self.rt.key)
                write(self._frame("ERROR", expired(f"too old resource version: {self.resource_version} "
                                                   f"({floor})").status()))
                return
            for entry in self._initial:
                if self.cut_after is not None and sent >= self.cut_after:
                    return
                write(self._frame("ADDED", entry.obj, entry.raw))
                sent += 1
            if self.send_initial_events and self.allow_bookmarks:
                write(self._bookmark(self._start_rv, initial_end=True))
            last_bookmark = time.monotonic()
            pending = collections.deque(self._backlog)
            while True:
                if self.cut_after is not None and sent >= self.cut_after:
                    return
                if pending:
                    event = pending.popleft()
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or stopping():
                        return
                    wait = min(remaining, 0.5)
                    if self.allow_bookmarks:
                        wait = min(wait, max(0.01, self.bookmark_interval - (time.monotonic() - last_bookmark)))
                    try:
                        event = self._sub.queue.get(timeout=wait)
                    except queue.Empty:
                        if self.allow_bookmarks and time.monotonic() - last_bookmark >= self.bookmark_interval:
                            store = self.registry.store
                            with store.lock:
                                rv = store.rv if self._sub.queue.empty() else None
                            if rv is not None:
                                write(self._bookmark(rv))
                            last_bookmark = time.monotonic()
                        continue
                    if event is None:
                        return
                seen = self._translate(event)
                if seen is None:
                    continue
                write(self._frame(seen, event.obj, event.raw))
                sent += 1
        except (OSError, ValueError):
            return
        finally:
            self.close()


def parse_bool(value: str | None) -> bool | None:
    """Returns the boolean of a query parameter ("true"/"1"/"false"/"0"), None when absent."""
    if value is None:
        return None
    return value.lower() in ("true", "1", "yes")
