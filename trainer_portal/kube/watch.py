"""List-then-watch that survives cut streams and expired resource versions.

:class:`Watcher` yields a :class:`Relist` first (every object plus the list's resourceVersion), then the watch
events that follow it. When a stream ends or is cut it resumes from the last resourceVersion it saw (bookmarks
included); when the server says the version is too old (410) it lists again and yields a new :class:`Relist`, which
the consumer must treat as "replace everything you have". Reconnects back off exponentially with jitter, capped.

Used for nodes and pods (live topology) and meant for TrainJob / Workload / PodGroup tracking later. Not handled
here: what to do with the objects; that is the consumer's business.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .client import Gateway, WatchEvent
from .errors import KubeError, KubeExpired
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
    resource_version: str = ""
    last_error: str = ""
    started_at: float = field(default_factory=time.time)


def backoff_delay(failures: int, *, initial: float, maximum: float, rng: Callable[[], float] = random.random) -> float:
    """Return the delay before reconnect number ``failures`` (1-based): exponential, full jitter, capped."""
    ceiling = min(maximum, initial * (2 ** max(0, failures - 1)))
    return ceiling / 2 + rng() * ceiling / 2


class Watcher:
    """Iterate ``Relist`` / ``WatchEvent`` items for one resource until ``stop`` is set.

    ``timeout_seconds`` is the server-side length of each watch request; ``backoff_initial``/``backoff_max``
    bound the reconnect delay after failures. ``stop`` (a ``threading.Event``) ends the iteration at the next
    event or reconnect.
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
    ) -> None:
        self.gateway = gateway
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.timeout_seconds = timeout_seconds
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.stop = stop or threading.Event()
        self.stats = WatchStats()

    def __iter__(self) -> Iterator[Relist | WatchEvent]:
        return self.updates()

    def updates(self) -> Iterator[Relist | WatchEvent]:
        """Yield a Relist, then events; a new Relist after every 410. Runs until ``stop`` is set."""
        resource_version = ""
        failures = 0
        while not self.stop.is_set():
            try:
                if not resource_version:
                    listed = self.gateway.list(
                        self.resource, namespace=self.namespace, label_selector=self.label_selector
                    )
                    resource_version = listed.resource_version
                    self.stats.relists += 1
                    self.stats.resource_version = resource_version
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
                ):
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
                # The server closed the stream normally (its timeout): resume from where we are.
                self.stats.reconnects += 1
            except KubeExpired as exc:
                # Our resourceVersion was compacted away: only a fresh list can tell us the current state.
                logger.info("watch %s expired (%s); relisting", self.resource.plural, exc.message)
                self.stats.expired += 1
                resource_version = ""
            except KubeError as exc:
                failures += 1
                self.stats.errors += 1
                self.stats.reconnects += 1
                self.stats.last_error = exc.message
                delay = backoff_delay(failures, initial=self.backoff_initial, maximum=self.backoff_max)
                logger.warning("watch %s failed (%s); retrying in %.1fs", self.resource.plural, exc.message, delay)
                if self.stop.wait(delay):
                    return
