"""The live topology snapshot: the placement preview's "live cluster" source, kept current by the worker.

Writer (worker side): :class:`TopologyWatch` lists nodes and pods once, then applies node and pod watch events
to a :class:`~runtimes.domain.placement.snapshot.ClusterSnapshot` incrementally (resuming from resourceVersion,
relisting after 410 through ``trainer_portal.kube.Watcher``), and saves it every few seconds when it changed.
:func:`topology_refresh` does a one-shot full list instead (beat fallback when no watcher runs).

Reader (web side): :func:`live_snapshot` returns the last saved :class:`LiveSnapshot` (with its age), re-reading
the file only when it changed. The file lives under ``settings.VAR_DIR/topology/`` and is written atomically
(temp file + rename), so readers never see half a snapshot. It is a pickle written only by our own worker; it is
never read from anywhere a user can write to.
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings

from trainer_portal import kube
from trainer_portal.placement.snapshot import TopologyKeys
from trainer_portal.placement.tracker import LiveSnapshot, TopologyTracker, snapshot_fingerprint  # noqa: F401 - re-exported

logger = logging.getLogger(__name__)

SNAPSHOT_FILENAME = "live-snapshot.pickle"
SAVE_INTERVAL_SECONDS = 2.0
# Save at least this often even when nothing changed, so a quiet cluster's snapshot does not look stale.
HEARTBEAT_SECONDS = 30.0


def topology_keys() -> TopologyKeys:
    """Return the topology label keys, with the site's network-block key from settings."""
    return TopologyKeys(block=getattr(settings, "TOPOLOGY_BLOCK_KEY", TopologyKeys.block))


def snapshot_path() -> Path:
    """Return the file the live snapshot is stored in."""
    return Path(settings.VAR_DIR) / "topology" / SNAPSHOT_FILENAME


# --------------------------------------------------------------------------------------------------- storage


def save_live_snapshot(live: LiveSnapshot, path: Path | None = None) -> Path:
    """Write ``live`` atomically to ``path`` (default :func:`snapshot_path`) and return the path."""
    path = path or snapshot_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".snapshot-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(live, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


_read_cache: dict[str, Any] = {}
_read_lock = threading.Lock()


def live_snapshot(path: Path | None = None) -> LiveSnapshot | None:
    """Return the last saved live snapshot, or None when none was saved yet (or it cannot be read).

    The returned object is shared between callers of this process: copy ``.snapshot`` before changing it.
    """
    path = path or snapshot_path()
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    stamp = (str(path), stat.st_mtime_ns, stat.st_size)
    with _read_lock:
        if _read_cache.get("stamp") == stamp:
            return _read_cache["live"]
    try:
        with path.open("rb") as fh:
            live = pickle.load(fh)  # noqa: S301 - written only by our own worker under VAR_DIR (see module doc)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError) as exc:
        logger.warning("cannot read the live topology snapshot %s: %s", path, exc)
        return None
    with _read_lock:
        _read_cache.update(stamp=stamp, live=live)
    return live


def snapshot_age_seconds(path: Path | None = None) -> float | None:
    """Return the age of the saved snapshot in seconds (None when there is none), without loading it."""
    path = path or snapshot_path()
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except FileNotFoundError:
        return None


def live_source_available() -> bool:
    """Return True when a live snapshot has been saved (the preview may offer "live cluster")."""
    return snapshot_path().exists()


def topology_refresh(*, gateway: kube.Gateway | None = None, path: Path | None = None) -> LiveSnapshot:
    """List all nodes and pods, build a fresh snapshot, save it and return it. Raises KubeError."""
    gateway = gateway or kube.get_gateway()
    tracker = TopologyTracker(topology_keys())
    nodes = gateway.list(kube.CORE_NODE)
    pods = gateway.list(kube.CORE_POD)
    tracker.relist_nodes(nodes.items, nodes.resource_version)
    tracker.relist_pods(pods.items, pods.resource_version)
    live = tracker.to_live(source="list", server=gateway.host)
    save_live_snapshot(live, path)
    return live


# --------------------------------------------------------------------------------------------------- watching


class TopologyWatch:
    """Keeps a live snapshot current from node and pod watches until ``stop`` is set.

    Two watcher threads (nodes, pods) feed one queue; the calling thread applies updates in order and saves the
    snapshot at most every ``save_interval`` seconds, and only after both initial lists arrived.
    """

    def __init__(
        self,
        *,
        gateway: kube.Gateway | None = None,
        path: Path | None = None,
        save_interval: float = SAVE_INTERVAL_SECONDS,
        timeout_seconds: int = 300,
        backoff_max: float = 30.0,
        stop: threading.Event | None = None,
    ) -> None:
        self.gateway = gateway or kube.get_gateway()
        self.path = path
        self.save_interval = save_interval
        self.stop = stop or threading.Event()
        self.tracker = TopologyTracker(topology_keys())
        self.lock = threading.Lock()  # held while applying; tests read the tracker under it
        self.saves = 0
        self._queue: queue.Queue = queue.Queue(maxsize=50_000)
        self.watchers = {
            "node": kube.Watcher(
                self.gateway, kube.CORE_NODE, timeout_seconds=timeout_seconds, backoff_max=backoff_max, stop=self.stop
            ),
            "pod": kube.Watcher(
                self.gateway, kube.CORE_POD, timeout_seconds=timeout_seconds, backoff_max=backoff_max, stop=self.stop
            ),
        }

    def stats(self) -> dict[str, Any]:
        """Return the watchers' counters (relists, events, reconnects, expired, errors, last error)."""
        return {kind: vars(watcher.stats).copy() for kind, watcher in self.watchers.items()}

    def run(self) -> None:
        """Watch and apply until ``stop`` is set. Saves a final snapshot on the way out when ready."""
        threads = [
            threading.Thread(target=self._feed, args=(kind, watcher), name=f"topology-{kind}", daemon=True)
            for kind, watcher in self.watchers.items()
        ]
        for thread in threads:
            thread.start()
        last_save = 0.0
        try:
            while not self.stop.is_set():
                try:
                    kind, update = self._queue.get(timeout=0.2)
                except queue.Empty:
                    kind = None
                if kind is not None:
                    with self.lock:
                        self._apply(kind, update)
                        # Drain what is already queued before considering a save (bursts of events).
                        while True:
                            try:
                                kind, update = self._queue.get_nowait()
                            except queue.Empty:
                                break
                            self._apply(kind, update)
                now = time.monotonic()
                due = self.tracker.changed and now - last_save >= self.save_interval
                if self.tracker.ready and (due or now - last_save >= HEARTBEAT_SECONDS):
                    self.save()
                    last_save = now
        finally:
            self.stop.set()
            if self.tracker.ready and self.tracker.changed:
                self.save()

    def save(self) -> LiveSnapshot:
        """Save the current snapshot now and return it."""
        with self.lock:
            live = self.tracker.to_live(source="watch", server=self.gateway.host, stats=self.stats())
            self.tracker.changed = False
        save_live_snapshot(live, self.path)
        self.saves += 1
        return live

    def _feed(self, kind: str, watcher: kube.Watcher) -> None:
        try:
            for update in watcher:
                while not self.stop.is_set():
                    try:
                        self._queue.put((kind, update), timeout=0.5)
                        break
                    except queue.Full:
                        continue
        except Exception:
            logger.exception("topology %s watcher crashed", kind)
            self.stop.set()

    def _apply(self, kind: str, update) -> None:
        tracker = self.tracker
        if isinstance(update, kube.Relist):
            if kind == "node":
                tracker.relist_nodes(update.items, update.resource_version)
            else:
                tracker.relist_pods(update.items, update.resource_version)
            return
        try:
            if kind == "node":
                tracker.apply_node(update.type, update.object)
            else:
                tracker.apply_pod(update.type, update.object)
        except (ValueError, KeyError) as exc:
            logger.warning("ignoring malformed %s event: %s", kind, exc)
