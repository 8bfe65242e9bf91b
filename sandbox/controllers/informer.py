"""List+watch caches (informers) and a tiny controller loop, shared by the simulated controllers.

An `Informer` keeps an in-memory copy of one collection, fed by `Client.watch` (which resumes from the last
resourceVersion and relists on 410), and calls its handlers on every change. A `Loop` is a worker thread that
wakes when poked (by handlers) or when its resync period elapses, and calls its `sync` function; exceptions are
logged and retried with backoff so that a controller never dies and never takes the server down.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sandbox.controllers.client import Client

log = logging.getLogger("sandbox.controllers")

Handler = Callable[[str, dict | None, dict | None], None]  # (event type, old object, new object)


def object_key(obj: dict) -> str:
    """Return "namespace/name" for namespaced objects and "name" for cluster-scoped ones."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


class Informer:
    """A watched cache of the collection at `path` (e.g. "/api/v1/pods"); start() runs it in a daemon thread."""

    def __init__(self, api_url: str, path: str, stop: threading.Event, *, watch_timeout: int = 60):
        self.path = path
        self.stop = stop
        self.client = Client(api_url, user_agent=f"sandbox-informer{path}")
        self.watch_timeout = watch_timeout
        self.synced = threading.Event()
        self._lock = threading.Lock()
        self._cache: dict[str, dict] = {}
        self._handlers: list[Handler] = []
        self._thread: threading.Thread | None = None

    def add_handler(self, handler: Handler) -> None:
        """Register `handler(type, old, new)`; it runs on the informer thread and must be quick (enqueue only)."""
        self._handlers.append(handler)

    def start(self) -> None:
        """Start watching in a daemon thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"informer{self.path}", daemon=True)
            self._thread.start()

    def items(self) -> list[dict]:
        """Return a snapshot list of the cached objects (do not mutate them)."""
        with self._lock:
            return list(self._cache.values())

    def get(self, key: str) -> dict | None:
        """Return the cached object with `object_key` == key, or None."""
        with self._lock:
            return self._cache.get(key)

    def _notify(self, event_type: str, old: dict | None, new: dict | None) -> None:
        for handler in self._handlers:
            try:
                handler(event_type, old, new)
            except Exception:  # a broken handler must not stop the cache from updating
                log.exception("informer %s: handler failed", self.path)

    def _apply(self, event_type: str, obj: dict) -> None:
        key = object_key(obj)
        with self._lock:
            old = self._cache.get(key)
            if event_type == "DELETED":
                self._cache.pop(key, None)
            else:
                self._cache[key] = obj
        self._notify(event_type, old, None if event_type == "DELETED" else obj)

    def _replace(self, listed: dict) -> None:
        fresh = {object_key(item): item for item in listed.get("items") or []}
        with self._lock:
            old_cache, self._cache = self._cache, dict(fresh)
        for key, obj in fresh.items():
            previous = old_cache.get(key)
            if previous is None:
                self._notify("ADDED", None, obj)
            elif (previous.get("metadata") or {}).get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                self._notify("MODIFIED", previous, obj)
        for key, obj in old_cache.items():
            if key not in fresh:
                self._notify("DELETED", obj, None)
        self.synced.set()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                for event_type, obj in self.client.watch(self.path, timeout_seconds=self.watch_timeout,
                                                         stop=self.stop):
                    if event_type == "RELISTED":
                        self._replace(obj)
                    elif event_type in ("ADDED", "MODIFIED", "DELETED"):
                        self._apply(event_type, obj)
            except Exception:  # never let the thread die; watch() already retries transport errors
                log.exception("informer %s crashed; restarting", self.path)
                self.stop.wait(1.0)


class Loop:
    """A worker thread calling `sync()` when poked or every `resync` seconds; errors back off up to 10 s.

    `sync` returns True when part of its work failed and should be retried soon (with the same backoff) rather
    than at the next resync. `min_interval` coalesces bursts of events into one sync.
    """

    def __init__(self, name: str, sync: Callable[[], bool | None], stop: threading.Event, *, resync: float = 5.0,
                 min_interval: float = 0.05, wait_for: tuple[Informer, ...] = ()):
        self.name = name
        self.sync = sync
        self.stop = stop
        self.resync = resync
        self.min_interval = min_interval
        self.wait_for = wait_for
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def poke(self, *_args: object) -> None:
        """Ask for a sync soon; usable directly as an informer handler."""
        self._wake.set()

    def start(self) -> None:
        """Start the worker in a daemon thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"controller-{self.name}", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        for informer in self.wait_for:
            while not informer.synced.wait(0.5):
                if self.stop.is_set():
                    return
        backoff = 0.2
        while not self.stop.is_set():
            self._wake.clear()
            try:
                retry = self.sync()
            except Exception:
                log.exception("controller %s: sync failed; retrying in %.1fs", self.name, backoff)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            if retry:
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            backoff = 0.2
            self.stop.wait(self.min_interval)
            self._wake.wait(self.resync)
