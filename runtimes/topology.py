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
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from trainer_portal import kube
from trainer_portal.kube.client import get_gateway

from .domain.placement.snapshot import ADDED, DELETED, MODIFIED, PRESENT, ClusterSnapshot, TopologyKeys

logger = logging.getLogger(__name__)

SNAPSHOT_FILENAME = "live-snapshot.pickle"
SAVE_INTERVAL_SECONDS = 2.0
# Save at least this often even when nothing changed, so a quiet cluster's snapshot does not look stale.
HEARTBEAT_SECONDS = 30.0
MAX_LABEL_VALUES = 50  # per key, in the picker's value counts


def topology_keys() -> TopologyKeys:
    """Return the topology label keys, with the site's network-block key from settings."""
    return TopologyKeys(block=getattr(settings, "TOPOLOGY_BLOCK_KEY", TopologyKeys.block))


def snapshot_path() -> Path:
    """Return the file the live snapshot is stored in."""
    return Path(settings.VAR_DIR) / "topology" / SNAPSHOT_FILENAME


@dataclass
class LiveSnapshot:
    """A saved live snapshot: the placement snapshot plus when it was taken and what the nodes' labels are.

    ``label_counts`` maps each node label key to ``{value: number of nodes}`` (at most ``MAX_LABEL_VALUES`` values
    per key, most common first); ``source`` is "watch" or "list"; ``stats`` holds watch counters.
    """

    snapshot: ClusterSnapshot
    taken_at: float
    label_counts: dict[str, dict[str, int]]
    source: str
    server: str = ""
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def age_seconds(self) -> float:
        """Return seconds since the snapshot was last known current."""
        return max(0.0, time.time() - self.taken_at)

    def label_keys(self) -> list[dict[str, Any]]:
        """Return ``[{key, nodes, values: [{value, count}]}]`` sorted by key, for the topology-key picker."""
        return [
            {
                "key": key,
                "nodes": sum(values.values()),
                "values": [{"value": value, "count": count} for value, count in values.items()],
            }
            for key, values in sorted(self.label_counts.items())
        ]


class TopologyTracker:
    """Applies relists and watch events of nodes and pods to one snapshot. Not thread-safe (one consumer)."""

    def __init__(self, keys: TopologyKeys | None = None) -> None:
        self.keys = keys or topology_keys()
        self.snapshot = ClusterSnapshot(self.keys)
        self.node_labels: dict[str, dict[str, str]] = {}
        self.pod_keys: set[str] = set()
        self.nodes_listed = False
        self.pods_listed = False
        self.changed = False

    @property
    def ready(self) -> bool:
        """Return True once both nodes and pods have been listed."""
        return self.nodes_listed and self.pods_listed

    def relist_nodes(self, items: list[dict], resource_version: str) -> None:
        """Replace the known nodes by ``items``: nodes not listed are deleted, the others added or updated."""
        listed = {obj["metadata"]["name"] for obj in items}
        for name in list(self.node_labels):
            if name not in listed:
                self.apply_node(DELETED, {"metadata": {"name": name}})
        for obj in items:
            self.apply_node(MODIFIED if obj["metadata"]["name"] in self.node_labels else ADDED, obj)
        self.snapshot.nodes_resource_version = resource_version
        self.nodes_listed = True

    def relist_pods(self, items: list[dict], resource_version: str) -> None:
        """Replace the known pods by ``items`` (pods not listed are deleted)."""
        listed = {_pod_key(obj) for obj in items}
        for key in list(self.pod_keys):
            if key not in listed:
                namespace, name = key.split("/", 1)
                self.apply_pod(DELETED, {"metadata": {"namespace": namespace, "name": name}})
        for obj in items:
            self.apply_pod(MODIFIED, obj)
        self.snapshot.pods_resource_version = resource_version
        self.pods_listed = True

    def apply_node(self, event_type: str, node: dict) -> None:
        """Apply one node event (ADDED, MODIFIED, DELETED)."""
        name = node["metadata"]["name"]
        self.snapshot.apply_node_event(event_type, node)
        if event_type == DELETED:
            self.node_labels.pop(name, None)
        else:
            self.node_labels[name] = dict((node.get("metadata") or {}).get("labels") or {})
        self.changed = True

    def apply_pod(self, event_type: str, pod: dict) -> None:
        """Apply one pod event (ADDED, MODIFIED, DELETED)."""
        self.snapshot.apply_pod_event(event_type, pod)
        key = _pod_key(pod)
        if event_type == DELETED:
            self.pod_keys.discard(key)
        else:
            self.pod_keys.add(key)
        self.changed = True

    def label_counts(self) -> dict[str, dict[str, int]]:
        """Return ``{label key: {value: count}}`` over the present nodes (top values per key)."""
        per_key: dict[str, Counter] = {}
        for labels in self.node_labels.values():
            for key, value in labels.items():
                per_key.setdefault(key, Counter())[value] += 1
        return {key: dict(counter.most_common(MAX_LABEL_VALUES)) for key, counter in per_key.items()}

    def to_live(self, *, source: str, server: str = "", stats: dict | None = None) -> LiveSnapshot:
        """Return a :class:`LiveSnapshot` holding a copy of the current snapshot."""
        return LiveSnapshot(
            snapshot=self.snapshot.copy(),
            taken_at=time.time(),
            label_counts=self.label_counts(),
            source=source,
            server=server,
            stats=stats or {},
        )


def _pod_key(pod: dict) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name')}"


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
    gateway = gateway or get_gateway()
    tracker = TopologyTracker()
    nodes = gateway.list(kube.CORE_NODE)
    pods = gateway.list(kube.CORE_POD)
    tracker.relist_nodes(nodes.items, nodes.resource_version)
    tracker.relist_pods(pods.items, pods.resource_version)
    live = tracker.to_live(source="list", server=gateway.host)
    save_live_snapshot(live, path)
    return live


def snapshot_fingerprint(snapshot: ClusterSnapshot) -> dict[str, tuple]:
    """Return ``{node name: (allocatable…, used…, flags, zone/block/rack path, taints)}`` of present nodes.

    Two snapshots of the same cluster state have equal fingerprints however they were built (full list or events).
    """
    result = {}
    for name, row in snapshot.row_of.items():
        if not snapshot.flags[row] & PRESENT:
            continue
        result[name] = (
            int(snapshot.alloc_gpu[row]),
            int(snapshot.alloc_cpu[row]),
            int(snapshot.alloc_mem[row]),
            int(snapshot.alloc_pods[row]),
            int(snapshot.used_gpu[row]),
            int(snapshot.used_cpu[row]),
            int(snapshot.used_mem[row]),
            int(snapshot.used_pods[row]),
            int(snapshot.flags[row]),
            snapshot.domain_path(2, int(snapshot.domain[2, row])),
            int(snapshot.missing[row]),
            tuple(sorted(snapshot.taint_sets[int(snapshot.taint_code[row])])),
        )
    return result


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
        self.gateway = gateway or get_gateway()
        self.path = path
        self.save_interval = save_interval
        self.stop = stop or threading.Event()
        self.tracker = TopologyTracker()
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
