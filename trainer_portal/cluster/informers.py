"""ONE list+watch hub per process: each resource kind is listed and watched once, events go to every handler of it.

Apps register handler factories from their ``AppConfig.ready()`` with :func:`register`; ``manage.py cluster_watch``
runs an :class:`InformerHub` over all of them. The hub resolves each kind by discovery, runs one
``trainer_portal.kube.watch.Watcher`` per kind (relist on 410, resume from resourceVersion), and feeds one queue
drained by one dispatch thread, so every handler sees the events of a kind in the order the server sent them.
Kinds the cluster does not serve (JobSet, Kueue Workload, …) are skipped, reported in :meth:`InformerHub.stats`,
and looked up again every ``recheck_seconds``.

One hub serves one cluster (a ``Cluster`` row; ``manage.py cluster_watch`` runs one hub per cluster it serves, each
with its own gateway and Lease). Handler factories that take a ``cluster`` keyword get the hub's row, so their
writes carry it; a factory without one is a single-cluster handler and runs for the default cluster only.

A silent stream is checked after ``idle_timeout`` seconds (``kube.watch.Watcher``): a hung API server shows as
watch errors within seconds, which handlers read from ``watch_state`` to report the cluster stale.

With an elector (``leader.LeaseElector``) only the process holding the Lease flushes ``needs_leader`` handlers
(leadership is asked of the elector right before each handler's flush, and handlers with a ``leader_check``
attribute get a callable to ask again right before each write);
handlers without it (the topology snapshot, per host) are flushed everywhere. Every handler receives every relist
and event of its kinds whether or not this process leads, so a process that gains leadership already knows the
cluster and reconciles it at its next flush (``leadership_gained``).
"""

from __future__ import annotations

import inspect
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from trainer_portal.kube.client import Gateway, WatchEvent, build_gateway, get_gateway
from trainer_portal.kube.config import KubeSettings, load_settings
from trainer_portal.kube.errors import KubeError, KubeNotConfigured, KubeNotFound
from trainer_portal.kube.resources import Resource, ResourceKind
from trainer_portal.kube.watch import Relist, Watcher

from . import connections

logger = logging.getLogger(__name__)

RECHECK_SECONDS = 60.0
QUEUE_SIZE = 50_000
# A stream silent this long is checked with a bounded one-item list (kube.watch.Watcher): a hung API server is
# noticed within IDLE + PROBE seconds, and reported by the next flush.
IDLE_TIMEOUT_SECONDS = 4.0
PROBE_TIMEOUT_SECONDS = 2.0


def gateway_factory(cluster: Any = None, *, kubeconfigs: dict[str, str] | None = None) -> Gateway:
    """Return the gateway of ``cluster`` (a ``Cluster`` row; None: the default one from the settings).

    ``kubeconfigs`` maps a cluster name to a kubeconfig path (the operator's ``--kubeconfig NAME=PATH`` override;
    the row's ``kubeconfig_context`` picks the context). Otherwise the default cluster, and any row whose connection
    is "settings", uses the portal's settings; other rows connect as the cluster registry says
    (``connections.gateway_for_cluster``). Raises KubeNotConfigured when the cluster cannot be reached from here.
    """
    name = getattr(cluster, "name", "")
    path = (kubeconfigs or {}).get(name) if name else None
    if path:
        base = load_settings()
        return build_gateway(KubeSettings(config_path=path, context=getattr(cluster, "kubeconfig_context", ""),
                                          timeout=base.timeout, field_manager=base.field_manager))
    if cluster is None or getattr(cluster, "connection", "settings") == "settings":
        if cluster is not None and not cluster.is_default:
            raise KubeNotConfigured(f"cluster {name!r} has connection \"settings\" but is not the default cluster: "
                                    f"pass --kubeconfig {name}=PATH, or store its kubeconfig on the cluster")
        return get_gateway()
    return connections.gateway_for_cluster(cluster)


def _takes_cluster(factory: Callable) -> bool:
    try:
        return "cluster" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


class Handler(Protocol):
    """What the hub feeds. Calls come from the hub's one dispatch thread, never concurrently.

    Optional extras the hub calls when present: ``attached(*, server: str)`` once before the first event,
    ``watch_state(watched, unserved)`` before every flush, and ``close()`` once on the way out (after the last flush).
    """

    name: str
    kinds: tuple[ResourceKind, ...]
    needs_leader: bool

    def relisted(self, kind: ResourceKind, items: list[dict], resource_version: str) -> None:
        """A full list of ``kind``: replace all known objects of this kind."""

    def changed(self, kind: ResourceKind, event_type: str, obj: dict) -> None:
        """One watch event: ADDED, MODIFIED or DELETED."""

    def flush(self, *, leader: bool) -> None:
        """After each drained batch and at least every ``flush_interval``: write what accumulated."""

    def leadership_gained(self) -> None:
        """This process just became the leader: the next flush must reconcile everything known."""

    def status(self) -> dict:
        """Counters for the cluster page and tests."""


HandlerFactory = Callable[..., Handler]
_FACTORIES: dict[str, HandlerFactory] = {}


def register(factory: HandlerFactory) -> None:
    """Register a handler factory (a class or a callable returning a handler); idempotent per handler name.

    Call it from an ``AppConfig.ready()``. The name is the factory's ``name`` attribute, or its product's.
    """
    name = getattr(factory, "name", None) or factory().name
    _FACTORIES[name] = factory


def unregister(name: str) -> None:
    """Forget the handler factory registered under ``name`` (nothing happens when there is none)."""
    _FACTORIES.pop(name, None)


def registered() -> list[HandlerFactory]:
    """Return the registered handler factories in registration order."""
    return list(_FACTORIES.values())


def list_once(handler: Handler, *, gateway: Gateway | None = None) -> None:
    """List every kind of ``handler`` once and hand it over as ``relisted`` (one-shot refresh, no watch).

    Raises KubeError (KubeNotFound when a kind is not served).
    """
    gateway = gateway or get_gateway()
    attached = getattr(handler, "attached", None)
    if attached is not None:
        attached(server=gateway.host)
    for kind in handler.kinds:
        listed = gateway.list(gateway.resolve(kind))
        handler.relisted(kind, listed.items, listed.resource_version)


class InformerHub:
    """Runs one watcher per resource kind for all handlers and dispatches their events until ``stop`` is set."""

    def __init__(
        self,
        *,
        gateway: Gateway | None = None,
        factories: list[HandlerFactory] | None = None,
        stop: threading.Event | None = None,
        elector: Any = None,
        timeout_seconds: int = 300,
        backoff_max: float = 30.0,
        flush_interval: float = 0.2,
        recheck_seconds: float = RECHECK_SECONDS,
        cluster: Any = None,
        idle_timeout: float | None = IDLE_TIMEOUT_SECONDS,
        probe_timeout: float = PROBE_TIMEOUT_SECONDS,
    ) -> None:
        self.cluster = cluster
        self.gateway = gateway or gateway_factory(cluster)
        self.idle_timeout = idle_timeout
        self._liveness_marks: dict[ResourceKind, tuple[tuple[int, ...], float]] = {}
        self.probe_timeout = probe_timeout
        self.stop = stop or threading.Event()
        self.elector = elector
        self.timeout_seconds = timeout_seconds
        self.backoff_max = backoff_max
        self.flush_interval = flush_interval
        self.recheck_seconds = recheck_seconds
        self.handlers: list[Handler] = []
        for factory in registered() if factories is None else factories:
            if _takes_cluster(factory):
                self.handlers.append(factory(cluster=cluster))
            elif cluster is None or getattr(cluster, "is_default", True):
                self.handlers.append(factory())
            else:
                logger.info("cluster %s: handler %s serves the default cluster only; not run here",
                            cluster.name, getattr(factory, "name", factory))
        for handler in self.handlers:
            if hasattr(handler, "leader_check"):
                handler.leader_check = self.holds_lease
        self.kinds: list[ResourceKind] = []
        for handler in self.handlers:
            for kind in handler.kinds:
                if kind not in self.kinds:
                    self.kinds.append(kind)
        self.watchers: dict[ResourceKind, Watcher] = {}
        self.resources: dict[ResourceKind, Resource] = {}
        self.unserved: dict[ResourceKind, str] = {}
        self.handler_errors: dict[str, int] = {handler.name: 0 for handler in self.handlers}
        self.dispatched = 0
        self.leader = False
        self._queue: queue.Queue = queue.Queue(maxsize=QUEUE_SIZE)
        self._threads: list[threading.Thread] = []
        self._next_check = 0.0

    # -- what tests and the cluster page read -----------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Return ``{watches, kinds: {label: {resource, relists, events, …}}, unserved: {label: reason}, leader,
        dispatched, handlers: {name: status + errors}}``."""
        return {
            "watches": len(self.watchers),
            "kinds": {
                kind.label: {"resource": f"{resource.api_version}/{resource.plural}", **vars(watcher.stats)}
                for kind, watcher in self.watchers.items()
                for resource in [self.resources[kind]]
            },
            "cluster": getattr(self.cluster, "name", ""),
            "unserved": {kind.label: reason for kind, reason in self.unserved.items()},
            "leader": self.leader if self.elector is not None else None,
            "dispatched": self.dispatched,
            "handlers": {
                handler.name: {**self._safe_status(handler), "errors": self.handler_errors[handler.name]}
                for handler in self.handlers
            },
        }

    def wedged_watches(self, *, now: float | None = None, after: float = 120.0) -> list[str]:
        """Return the kinds whose watch made no progress (no list, event, bookmark or clean end) and no attempt
        (error, reconnect, stall, idle check) for ``after`` seconds — a stuck thread, not a quiet or failing cluster
        (those keep counting attempts). [] when every watch lives; the liveness probe restarts a wedged process."""
        now = time.monotonic() if now is None else now
        wedged = []
        for kind, watcher in list(self.watchers.items()):
            stats = watcher.stats
            marks = (stats.relists, stats.events, stats.bookmarks, stats.reconnects, stats.errors, stats.idles,
                     stats.stalls, stats.expired)
            previous = self._liveness_marks.get(kind)
            if previous is None or previous[0] != marks:
                self._liveness_marks[kind] = (marks, now)
                continue
            if now - max(previous[1], stats.last_progress) > after:
                wedged.append(kind.label)
        return wedged

    # -- the loop ---------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Watch, dispatch and flush until ``stop`` is set; then flush once more, close handlers, release the Lease.

        Never raises for cluster failures (watchers retry with backoff; unserved kinds are re-checked).
        """
        for handler in self.handlers:
            self._call(handler, "attached", server=self.gateway.host)
        if self.elector is not None:
            elector_thread = threading.Thread(target=self.elector.run, args=(self.stop,), name="cluster-leader",
                                              daemon=True)
            elector_thread.start()
            self._threads.append(elector_thread)
        try:
            while not self.stop.is_set():
                if time.monotonic() >= self._next_check:
                    self._start_watchers()
                self._update_leadership()
                self._drain()
                self._flush()
        finally:
            self.stop.set()
            self._update_leadership()
            self._flush()
            for handler in self.handlers:
                self._call(handler, "close")
            if self.elector is not None:
                self.elector.release()
                self.leader = False

    def _start_watchers(self) -> None:
        """Start a watcher for every kind not watched yet that the cluster serves now."""
        self._next_check = time.monotonic() + self.recheck_seconds
        if self.unserved:
            self.gateway.forget_discovery()  # a CRD may have been installed since the last look
        for kind in self.kinds:
            if kind in self.watchers:
                continue
            try:
                resource = self.gateway.resolve(kind)
            except KubeNotFound as exc:
                self.unserved[kind] = exc.message
                continue
            except KubeError as exc:
                self.unserved[kind] = f"discovery failed, retrying: {exc.message}"
                continue
            self.unserved.pop(kind, None)
            watcher = Watcher(self.gateway, resource, timeout_seconds=self.timeout_seconds,
                              backoff_max=self.backoff_max, stop=self.stop, idle_timeout=self.idle_timeout,
                              probe_timeout=self.probe_timeout)
            self.resources[kind] = resource
            self.watchers[kind] = watcher
            prefix = f"{self.cluster.name}-" if self.cluster is not None else ""
            thread = threading.Thread(target=self._feed, args=(kind, watcher), name=f"watch-{prefix}{kind.plural}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def _feed(self, kind: ResourceKind, watcher: Watcher) -> None:
        try:
            for update in watcher:
                while not self.stop.is_set():
                    try:
                        self._queue.put((kind, update), timeout=0.5)
                        break
                    except queue.Full:
                        continue
        except Exception:
            logger.exception("the %s watcher crashed; stopping the hub", kind.label)
            self.stop.set()

    def _drain(self) -> None:
        """Dispatch what arrives within one flush interval, then whatever is already queued."""
        try:
            item = self._queue.get(timeout=self.flush_interval)
        except queue.Empty:
            return
        while item is not None:
            self._dispatch(*item)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                item = None

    def _dispatch(self, kind: ResourceKind, update: Relist | WatchEvent) -> None:
        self.dispatched += 1
        for handler in self.handlers:
            if kind not in handler.kinds:
                continue
            if isinstance(update, Relist):
                self._call(handler, "relisted", kind, update.items, update.resource_version)
            else:
                self._call(handler, "changed", kind, update.type, update.object)

    def _update_leadership(self) -> None:
        if self.elector is None:
            return
        leader = bool(self.elector.is_leader)
        if leader and not self.leader:
            logger.info("this process now leads the cluster watch (%s)", self.elector.identity)
            for handler in self.handlers:
                if handler.needs_leader:
                    self._call(handler, "leadership_gained")
        elif self.leader and not leader:
            logger.info("this process no longer leads the cluster watch")
        self.leader = leader

    def holds_lease(self) -> bool:
        """Return whether this process may write for its cluster right now (asked of the elector at each call:
        its renew deadline, never a cached flag); True without an elector."""
        return self.elector is None or bool(self.elector.is_leader)

    def _flush(self) -> None:
        for handler in self.handlers:
            leader = self.holds_lease()
            if handler.needs_leader and not leader:
                continue
            # Optional hook: which kinds are watched (with their WatchStats) and which are not served.
            self._call(handler, "watch_state", {k: w.stats for k, w in self.watchers.items()}, dict(self.unserved))
            self._call(handler, "flush", leader=leader)

    def _call(self, handler: Handler, method: str, *args: Any, **kwargs: Any) -> None:
        """Call a handler hook; a failing handler is logged and counted, never allowed to stop the others."""
        function = getattr(handler, method, None)
        if function is None:
            return
        try:
            function(*args, **kwargs)
        except Exception:
            self.handler_errors[handler.name] += 1
            logger.exception("cluster watch handler %s failed in %s", handler.name, method)

    @staticmethod
    def _safe_status(handler: Handler) -> dict:
        try:
            return dict(handler.status())
        except Exception as exc:  # a status page must not break on one handler
            return {"status_error": str(exc)}
