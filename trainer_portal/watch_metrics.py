"""The watcher process's own figures, served on its own port (``manage.py cluster_watch --metrics-port N``).

What only the watcher knows — events and relists per kind, watch errors, how long each watch has been silent, the
dispatch backlog, whether this process leads its cluster — is read from the running informer hubs at scrape time
(``InformerHub.stats()`` and the watchers' counters), so nothing is counted twice and a hub needs no
instrumentation. Counters restart at 0 with the process, as Prometheus counters may (``rate()`` handles resets).
The web side's figures are computed from the database instead (``trainer_portal.metrics``).

Labels: ``cluster`` (an admin-managed name) and ``kind`` (a fixed set of watched resource kinds): bounded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import PLATFORM_COLLECTOR, PROCESS_COLLECTOR, CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

PREFIX = "trainer_portal_watcher_"
# (metric suffix, WatchStats attribute, help) of the per-kind counters.
COUNTERS = (
    ("events", "events", "Watch events received (ADDED, MODIFIED, DELETED)."),
    ("relists", "relists", "Full lists of a kind (start, 410 Gone, a new store)."),
    ("watch_errors", "errors", "Watch requests that failed (the watcher retries with backoff)."),
    ("reconnects", "reconnects", "Watch streams re-opened."),
    ("bookmarks", "bookmarks", "Bookmark events received."),
)


class WatcherCollector:
    """Yields the figures of the informer hubs ``hubs()`` returns (read at each scrape)."""

    def __init__(self, hubs: Callable[[], Iterable[Any]], *, clock: Callable[[], float] = time.monotonic) -> None:
        self.hubs = hubs
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        """Yield per-kind counters, the silence of each watch, the dispatch backlog and leadership per cluster."""
        counters = {suffix: CounterMetricFamily(PREFIX + suffix, text, labels=["cluster", "kind"])
                    for suffix, _, text in COUNTERS}
        lag = GaugeMetricFamily(PREFIX + "lag_seconds", "Seconds since the watch last heard from the API server "
                                "(a list, an event or a bookmark): how far behind the cluster it may be.",
                                labels=["cluster", "kind"])
        backlog = GaugeMetricFamily(PREFIX + "dispatch_backlog", "Updates received but not yet given to the "
                                    "handlers.", labels=["cluster"])
        leader = GaugeMetricFamily(PREFIX + "is_leader", "1 while this process may write for the cluster (holds its "
                                   "Lease, or runs without leader election).",
                                   labels=["cluster"])
        unserved = GaugeMetricFamily(PREFIX + "unserved_kinds", "Watched kinds the cluster does not serve now (a "
                                     "CRD not installed, discovery failing).", labels=["cluster"])
        handler_errors = CounterMetricFamily(PREFIX + "handler_errors", "Handler calls that raised (logged, the "
                                             "others go on).", labels=["cluster"])
        now = self.clock()
        for hub in self.hubs():
            cluster = getattr(hub.cluster, "name", "") or "default"
            for kind, watcher in list(hub.watchers.items()):
                stats = watcher.stats
                labels = [cluster, kind.label]
                for suffix, attribute, _ in COUNTERS:
                    counters[suffix].add_metric(labels, getattr(stats, attribute))
                lag.add_metric(labels, max(now - stats.last_progress, 0.0))
            backlog.add_metric([cluster], hub._queue.qsize())
            leader.add_metric([cluster], 1 if hub.holds_lease() else 0)  # True without an elector: it writes
            unserved.add_metric([cluster], len(hub.unserved))
            handler_errors.add_metric([cluster], sum(hub.handler_errors.values()))
        yield from counters.values()
        yield from (lag, backlog, leader, unserved, handler_errors)


def serve(hubs: Callable[[], Iterable[Any]], *, port: int, address: str = "0.0.0.0") -> tuple[Any, int]:
    """Start prometheus_client's HTTP server (a daemon thread) on ``address:port`` (0: a free port) with the hubs'
    figures and the process's own (CPU, memory); return ``(server, port)``. Raises OSError when the port is taken."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(WatcherCollector(hubs))
    registry.register(PROCESS_COLLECTOR)
    registry.register(PLATFORM_COLLECTOR)
    server, _thread = start_http_server(port, addr=address, registry=registry)
    return server, server.server_address[1]
