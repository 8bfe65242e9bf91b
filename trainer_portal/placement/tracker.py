"""Fold node and pod list+watch events into a ClusterSnapshot: `TopologyTracker`, and `LiveSnapshot`, what is saved.

Pure: the caller feeds relists and events (from the cluster app's informer hub, a one-shot list or a benchmark) and
decides when to save `to_live()`. The topology label keys are passed in, never read from settings.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from trainer_portal.placement.snapshot import ADDED, DELETED, MODIFIED, PRESENT, ClusterSnapshot, TopologyKeys

MAX_LABEL_VALUES = 50  # per key, in the picker's value counts


@dataclass
class LiveSnapshot:
    """A saved live snapshot: the placement snapshot plus when it was taken and what the nodes' labels are.

    ``label_counts`` maps each node label key to ``{value: number of nodes}`` (at most ``MAX_LABEL_VALUES`` values
    per key, most common first); ``label_totals`` maps each key to ``(nodes carrying it, distinct values)`` over
    all nodes, uncapped; ``source`` is "watch" or "list"; ``stats`` holds watch counters.
    """

    snapshot: ClusterSnapshot
    taken_at: float
    label_counts: dict[str, dict[str, int]]
    source: str
    server: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    label_totals: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def age_seconds(self) -> float:
        """Return seconds since the snapshot was last known current."""
        return max(0.0, time.time() - self.taken_at)

    def label_keys(self) -> list[dict[str, Any]]:
        """Return ``[{key, nodes, distinct, values: [{value, count}]}]`` sorted by key, for the topology-key picker.

        ``nodes`` and ``distinct`` count every node and value; ``values`` lists the most common ones only.
        """
        # Snapshots saved before the totals existed carry none: their capped counts are all there is.
        totals = getattr(self, "label_totals", None) or {}
        return [
            {
                "key": key,
                "nodes": totals[key][0] if key in totals else sum(values.values()),
                "distinct": totals[key][1] if key in totals else len(values),
                "values": [{"value": value, "count": count} for value, count in values.items()],
            }
            for key, values in sorted(self.label_counts.items())
        ]


class TopologyTracker:
    """Applies relists and watch events of nodes and pods to one snapshot. Not thread-safe (one consumer)."""

    def __init__(self, keys: TopologyKeys) -> None:
        self.keys = keys
        self.snapshot = ClusterSnapshot(self.keys)
        self.node_labels: dict[str, tuple[str, ...]] = {}  # name → (key, value, key, value, …): see _flat_labels
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
        listed = {pod_key(obj) for obj in items}
        for key in list(self.pod_keys):
            if key not in listed:
                namespace, name = key.split("/", 1)
                self.apply_pod(DELETED, {"metadata": {"namespace": namespace, "name": name}})
        for obj in items:
            self.apply_pod(MODIFIED, obj)
        self.snapshot.pods_resource_version = resource_version
        self.pods_listed = True

    def apply_node(self, event_type: str, node: dict) -> None:
        """Apply one node event (ADDED, MODIFIED, DELETED); raises KeyError/ValueError for a malformed node."""
        name = node["metadata"]["name"]
        self.snapshot.apply_node_event(event_type, node)
        if event_type == DELETED:
            self.node_labels.pop(name, None)
        else:
            self.node_labels[name] = _flat_labels((node.get("metadata") or {}).get("labels") or {})
        self.changed = True

    def apply_pod(self, event_type: str, pod: dict) -> None:
        """Apply one pod event (ADDED, MODIFIED, DELETED); raises KeyError/ValueError for a malformed pod."""
        self.snapshot.apply_pod_event(event_type, pod)
        key = pod_key(pod)
        if event_type == DELETED:
            self.pod_keys.discard(key)
        else:
            self.pod_keys.add(key)
        self.changed = True

    def _label_counters(self) -> dict[str, Counter]:
        per_key: dict[str, Counter] = {}
        for labels in self.node_labels.values():
            pairs = iter(labels)
            for key, value in zip(pairs, pairs, strict=True):
                per_key.setdefault(key, Counter())[value] += 1
        return per_key

    def label_counts(self) -> dict[str, dict[str, int]]:
        """Return ``{label key: {value: count}}`` over the present nodes (top values per key)."""
        return {key: dict(counter.most_common(MAX_LABEL_VALUES)) for key, counter in self._label_counters().items()}

    def label_totals(self) -> dict[str, tuple[int, int]]:
        """Return ``{label key: (nodes carrying it, distinct values)}`` over the present nodes, uncapped."""
        return {key: (counter.total(), len(counter)) for key, counter in self._label_counters().items()}

    def to_live(self, *, source: str, server: str = "", stats: dict | None = None) -> LiveSnapshot:
        """Return a :class:`LiveSnapshot` holding a copy of the current snapshot."""
        return LiveSnapshot(
            snapshot=self.snapshot.copy(),
            taken_at=time.time(),
            label_counts=self.label_counts(),
            source=source,
            server=server,
            stats=stats or {},
            label_totals=self.label_totals(),
        )


def _flat_labels(labels: dict) -> tuple:
    """Return a node's labels as one flat tuple ``(key, value, key, value, …)`` of interned strings.

    The tracker keeps every node's labels (for the label picker's counts): a dict per node costs ~200 bytes and
    every node repeats the same keys and mostly the same values (zone, block, rack, instance type); a flat tuple of
    shared strings costs 8 bytes a string.
    """
    return tuple(sys.intern(part) if isinstance(part, str) else part for pair in labels.items() for part in pair)


def pod_key(pod: dict) -> str:
    """Return "<namespace>/<name>" of a pod object (namespace "default" when absent)."""
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name')}"


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
