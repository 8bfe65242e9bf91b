"""Watch-event handlers of the cluster app: the live topology snapshot (nodes + pods → the cluster's stored
snapshot, see ``cluster.snapshots``).

`TopologySnapshotHandler` is registered with the informer hub by the app's ``ready()``; one handler serves one
cluster (``cluster=``; the default cluster when None). It needs no leadership: every watcher of a cluster writes
the same facts, and the version counter makes concurrent saves safe.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from trainer_portal.kube.resources import NODE, POD, ResourceKind
from trainer_portal.placement.tracker import LiveSnapshot, TopologyTracker

from . import connections, informers, snapshots
from .models import Cluster, resolve_cluster

logger = logging.getLogger(__name__)


class TopologySnapshotHandler:
    """Folds node and pod events into the live snapshot and saves it at most every ``save_interval`` seconds
    (and every ``HEARTBEAT_SECONDS`` when nothing changed), once both kinds have been listed."""

    name = "topology"
    kinds: tuple[ResourceKind, ...] = (NODE, POD)
    needs_leader = False

    def __init__(self, *, cluster: Cluster | str | None = None,
                 save_interval: float = snapshots.SAVE_INTERVAL_SECONDS, source: str = "watch") -> None:
        """Raises Cluster.DoesNotExist for an unknown cluster (name)."""
        self.cluster = resolve_cluster(cluster)
        self.save_interval = save_interval
        self.source = source
        self.server = ""
        self.tracker = TopologyTracker(snapshots.topology_keys(self.cluster))
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
        if not self.tracker.ready:
            return
        if due or (self.tracker.changed and not self.saves):
            self.save()
            self._last_save = now
        elif now - self._last_save >= snapshots.HEARTBEAT_SECONDS:
            # Nothing changed: say the stored snapshot is still current, without a new version to decode.
            if self.saves and snapshots.touch_live_snapshot(self.cluster):
                self._last_save = now
            else:
                self.save()
                self._last_save = now

    def leadership_gained(self) -> None:
        """Nothing to reconcile: the snapshot needs no leader."""

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
        """Store the current snapshot now and return it. Raises the database's errors."""
        with self.lock:
            live = self.tracker.to_live(source=self.source, server=self.server, stats=self.status())
            self.tracker.changed = False
        snapshots.save_live_snapshot(live, self.cluster)
        self.saves += 1
        return live


def topology_refresh(*, gateway: informers.Gateway | None = None, cluster: Cluster | str | None = None) -> LiveSnapshot:
    """List all nodes and pods of the cluster (default when None), store a fresh snapshot and return it.

    Raises KubeError, Cluster.DoesNotExist.
    """
    handler = TopologySnapshotHandler(cluster=cluster, source="list")
    informers.list_once(handler, gateway=gateway or connections.gateway_for_cluster(handler.cluster))
    return handler.save()
