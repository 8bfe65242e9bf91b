"""Watch-event handlers of the cluster app: the live topology snapshot (nodes + pods → placement snapshot file).

`TopologySnapshotHandler` is registered with the informer hub by the app's ``ready()``; it needs no leadership:
every host running ``cluster_watch`` keeps its own snapshot file current.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from trainer_portal.kube.resources import NODE, POD, ResourceKind
from trainer_portal.placement.tracker import LiveSnapshot, TopologyTracker

from . import informers, snapshots

logger = logging.getLogger(__name__)


class TopologySnapshotHandler:
    """Folds node and pod events into the live snapshot and saves it at most every ``save_interval`` seconds
    (and every ``HEARTBEAT_SECONDS`` when nothing changed), once both kinds have been listed."""

    name = "topology"
    kinds: tuple[ResourceKind, ...] = (NODE, POD)
    needs_leader = False

    def __init__(self, *, path: Path | None = None, save_interval: float = snapshots.SAVE_INTERVAL_SECONDS,
                 source: str = "watch") -> None:
        self.path = path
        self.save_interval = save_interval
        self.source = source
        self.server = ""
        self.tracker = TopologyTracker(snapshots.topology_keys())
        self.lock = threading.Lock()  # held while applying; tests read the tracker under it
        self.saves = 0
        self.malformed = 0
        self._last_save = 0.0

    def attached(self, *, server: str) -> None:
        """Remember which API server the snapshot describes (shown with the live source)."""
        self.server = server

    def relisted(self, kind: ResourceKind, items: list[dict], resource_version: str) -> None:
        """Replace every known node (or pod) by the listed ones."""
        with self.lock:
            if kind == NODE:
                self.tracker.relist_nodes(items, resource_version)
            else:
                self.tracker.relist_pods(items, resource_version)

    def changed(self, kind: ResourceKind, event_type: str, obj: dict) -> None:
        """Apply one node or pod event; a malformed object is logged, counted and skipped."""
        with self.lock:
            try:
                if kind == NODE:
                    self.tracker.apply_node(event_type, obj)
                else:
                    self.tracker.apply_pod(event_type, obj)
            except (ValueError, KeyError) as exc:
                self.malformed += 1
                logger.warning("ignoring malformed %s event: %s", kind.kind, exc)

    def flush(self, *, leader: bool) -> None:
        """Save when changed and the save interval passed, or when the heartbeat is due; never before both lists."""
        now = time.monotonic()
        due = self.tracker.changed and now - self._last_save >= self.save_interval
        if self.tracker.ready and (due or now - self._last_save >= snapshots.HEARTBEAT_SECONDS):
            self.save()
            self._last_save = now

    def leadership_gained(self) -> None:
        """Nothing to reconcile: every host keeps its own snapshot."""

    def close(self) -> None:
        """Save a final snapshot when something changed since the last save."""
        if self.tracker.ready and self.tracker.changed:
            self.save()

    def status(self) -> dict[str, Any]:
        """Return ``{ready, nodes, pods, saves, malformed}``."""
        snapshot = self.tracker.snapshot
        return {"ready": self.tracker.ready, "nodes": snapshot.node_count, "pods": snapshot.pod_count,
                "saves": self.saves, "malformed": self.malformed}

    def save(self) -> LiveSnapshot:
        """Save the current snapshot now and return it. Raises OSError when the file cannot be written."""
        with self.lock:
            live = self.tracker.to_live(source=self.source, server=self.server, stats=self.status())
            self.tracker.changed = False
        snapshots.save_live_snapshot(live, self.path)
        self.saves += 1
        return live


def topology_refresh(*, gateway: informers.Gateway | None = None, path: Path | None = None) -> LiveSnapshot:
    """List all nodes and pods, build a fresh snapshot, save it and return it. Raises KubeError."""
    handler = TopologySnapshotHandler(path=path, source="list")
    informers.list_once(handler, gateway=gateway)
    return handler.save()
