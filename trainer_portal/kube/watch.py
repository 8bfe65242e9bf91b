"""List-then-watch that survives cut streams and expired resource versions.

:class:`Watcher` yields a :class:`Relist` first (every object plus the list's resourceVersion), then the watch
events that follow it. When a stream ends or is cut it resumes from the last resourceVersion it saw (bookmarks
included); when the server says the version is too old (410) it lists again and yields a new :class:`Relist`, which
the consumer must treat as "replace everything you have". Reconnects back off exponentially with jitter, capped.

Never trusting a silent or reborn server (docs/decisions.md, "Tracking never freezes and never lies"):
- with ``idle_timeout`` set, a stream that brings no byte (no event, no bookmark) for that long is checked with a
  one-item list bounded by ``probe_timeout``: an answer means the stream was merely quiet (resume, counted in
  ``idles``); no answer means the API server hangs (``stalls`` and ``errors`` grow, ``last_error`` says so, and the
  watch is opened again);
- after any failure to reach the server, and on every quiet stream, that one-item list also compares the server's
  resourceVersion with ours: a server whose version went backwards, or whose version is no longer comparable to
  ours, has a new store (an API server restarted on fresh etcd), so the watcher lists again (``store_changes``);
- an event or bookmark whose resourceVersion goes backwards means the same, and relists too.

Not handled here: what to do with the objects; that is the consumer's business.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .client import Gateway, WatchEvent
from .errors import KubeError, KubeExpired, KubeUnavailable
from .resources import Resource

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Relist:
    """A full list: replace all known objects with ``items``; watching continues from ``resource_version``."""

    items: list[dict]
    resource_version: str


@dataclass
class WatchStats:
    """Counters for observability and tests."""

    relists: int = 0
    events: int = 0
    bookmarks: int = 0
    reconnects: int = 0
    expired: int = 0
    errors: int = 0
    idles: int = 0
    stalls: int = 0
    store_changes: int = 0
    resource_version: str = ""
    last_error: str = ""
    started_at: float = field(default_factory=time.time)
    # monotonic time of the last byte-level sign of life (list, event, bookmark, clean stream end)
    last_progress: float = field(default_factory=time.monotonic)


def went_backwards(new: str, old: str) -> bool:
    """Return True when resourceVersion ``new`` cannot follow ``old``: numerically smaller, or one decimal and the
    other not (an API server with another store). Empty versions never count."""
    if not new or not old:
        return False
    if new.isdigit() and old.isdigit():
        return int(new) < int(old)
    return new.isdigit() != old.isdigit()


def _server_gone(exc: KubeError) -> bool:
    """Return True when ``exc`` says the API server could not be reached at all (nothing listens there)."""
    return isinstance(exc, KubeUnavailable) and exc.status is None and (
        "Connection refused" in exc.message or "Failed to establish a new connection" in exc.message)


def backoff_delay(failures: int, *, initial: float, maximum: float, rng: Callable[[], float] = random.random) -> float:
    """Return the delay before reconnect number ``failures`` (1-based): exponential, full jitter, capped."""
    ceiling = min(maximum, initial * (2 ** max(0, failures - 1)))
    return ceiling / 2 + rng() * ceiling / 2


class Watcher:
    """Iterate ``Relist`` / ``WatchEvent`` items for one resource until ``stop`` is set.

    ``timeout_seconds`` is the server-side length of each watch request; ``backoff_initial``/``backoff_max``
    bound the reconnect delay after failures. ``stop`` (a ``threading.Event``) ends the iteration at the next
    event or reconnect. ``idle_timeout`` (seconds without a byte on the stream; None: only the server-side length
    plus a grace period) and ``probe_timeout`` bound how long a hanging API server goes unnoticed.
    """

    def __init__(
        self,
        gateway: Gateway,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        stop: threading.Event | None = None,
        idle_timeout: float | None = None,
        probe_timeout: float = 2.0,
    ) -> None:
        self.gateway = gateway
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.timeout_seconds = timeout_seconds
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.stop = stop or threading.Event()
        self.idle_timeout = idle_timeout
        self.probe_timeout = probe_timeout
        self.stats = WatchStats()
        self._stall_message = ""

    def __iter__(self) -> Iterator[Relist | WatchEvent]:
        return self.updates()

    def updates(self) -> Iterator[Relist | WatchEvent]:
        """Yield a Relist, then events; a new Relist after every 410 or store change. Runs until ``stop`` is set."""
        resource_version = ""
        failures = 0
        check_store = False  # after losing the server: is it still the same store?
        relist_after_outage = False  # the server refused connections: list again once it answers
        while not self.stop.is_set():
            try:
                if resource_version and relist_after_outage:
                    self._store_changed(resource_version)  # counts and logs a store that went backwards
                    resource_version = ""
                    relist_after_outage = check_store = False
                if resource_version and check_store:
                    # After an outage the server may be slow to answer: the normal request timeout, not the probe's.
                    if self._store_changed(resource_version, probe=False):
                        resource_version = ""
                    check_store = False
                if not resource_version:
                    listed = self.gateway.list(
                        self.resource, namespace=self.namespace, label_selector=self.label_selector
                    )
                    resource_version = listed.resource_version
                    self.stats.relists += 1
                    self.stats.resource_version = resource_version
                    self.stats.last_progress = time.monotonic()
                    yield Relist(listed.items, resource_version)
                    failures = 0
                    if self.stop.is_set():
                        return
                for event in self.gateway.watch(
                    self.resource,
                    resource_version=resource_version,
                    namespace=self.namespace,
                    label_selector=self.label_selector,
                    timeout_seconds=self.timeout_seconds,
                    read_timeout=self.idle_timeout,
                ):
                    self.stats.last_progress = time.monotonic()
                    if went_backwards(event.resource_version, resource_version):
                        logger.warning("watch %s: resourceVersion went from %s to %s: the API server has a new "
                                       "store; relisting", self.resource.plural, resource_version,
                                       event.resource_version)
                        self.stats.store_changes += 1
                        resource_version = ""
                        break
                    resource_version = event.resource_version or resource_version
                    self.stats.resource_version = resource_version
                    failures = 0
                    if event.type == "BOOKMARK":
                        self.stats.bookmarks += 1
                    else:
                        self.stats.events += 1
                        yield event
                    if self.stop.is_set():
                        return
                else:
                    # The server closed the stream normally (its timeout): resume from where we are.
                    self.stats.reconnects += 1
                    self.stats.last_progress = time.monotonic()
            except KubeExpired as exc:
                # Our resourceVersion was compacted away: only a fresh list can tell us the current state.
                logger.info("watch %s expired (%s); relisting", self.resource.plural, exc.message)
                self.stats.expired += 1
                resource_version = ""
            except KubeError as exc:
                message = exc.message
                if (self.idle_timeout and resource_version and isinstance(exc, KubeUnavailable)
                        and exc.status is None and "timed out" in exc.message):
                    # A silent stream: quiet cluster or hung server? One bounded request tells.
                    answered = self._quiet_or_hung(resource_version)
                    if answered is not None:
                        if answered:
                            resource_version = ""
                        continue
                    message = self._stall_message
                failures += 1
                self.stats.errors += 1
                self.stats.reconnects += 1
                self.stats.last_error = message
                check_store = True
                if _server_gone(exc):
                    # The API server was gone (it refused connections): it may come back with another store whose
                    # resourceVersions happen to be ahead of ours, which no comparison can tell. Only a fresh list
                    # says what exists now (client-go's reflector lists again after such an outage too).
                    relist_after_outage = True
                delay = backoff_delay(failures, initial=self.backoff_initial, maximum=self.backoff_max)
                logger.warning("watch %s failed (%s); retrying in %.1fs", self.resource.plural, message, delay)
                if self.stop.wait(delay):
                    return

    def _server_version(self, *, probe: bool = True) -> str:
        """Return the server's current resourceVersion for this resource (a one-item list, bounded by
        ``probe_timeout`` when ``probe``, else by the gateway's request timeout).

        Raises KubeError when the server does not answer in time.
        """
        timeout = (min(self.probe_timeout, 5.0), self.probe_timeout) if probe else None
        page = self.gateway.request(
            "GET", self.resource.path(namespace=self.namespace), query=[("limit", 1)], timeout=timeout,
        ) or {}
        return str((page.get("metadata") or {}).get("resourceVersion") or "")

    def _store_changed(self, resource_version: str, *, probe: bool = True) -> bool:
        """Return True (counted) when the server's version cannot follow ours. Raises KubeError."""
        current = self._server_version(probe=probe)
        if went_backwards(current, resource_version):
            logger.warning("watch %s: the API server is at resourceVersion %s, before our %s: it has a new store; "
                           "relisting", self.resource.plural, current, resource_version)
            self.stats.store_changes += 1
            return True
        return False

    def _quiet_or_hung(self, resource_version: str) -> bool | None:
        """After ``idle_timeout`` without a byte: return None when the server does not answer (a stall, recorded
        as an error), else whether its store changed (True: relist)."""
        try:
            changed = self._store_changed(resource_version)
        except KubeError as probe:
            self.stats.stalls += 1
            self._stall_message = (f"the API server is not answering: no event or bookmark for "
                                   f"{self.idle_timeout:g}s and a one-item list failed ({probe.message})")
            return None
        self.stats.idles += 1
        self.stats.last_progress = time.monotonic()
        return changed
