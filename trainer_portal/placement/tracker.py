"""Fold node and pod list+watch events into a ClusterSnapshot: `TopologyTracker`, and `LiveSnapshot`, what is saved.

Pure: the caller feeds relists and events (from the cluster app's informer hub, a one-shot list or a benchmark) and
decides when to save `to_live()`. The topology label keys are passed in, never read from settings.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

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


class _SameAsNodeName:
    """The value of a node label that equals the node's own name (``kubernetes.io/hostname``, usually)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<the node's name>"


NODE_NAME = _SameAsNodeName()
NO_LABEL_SET = -1  # a row whose node is not (or no longer) known to the tracker
MAX_ARRIVAL = 2**31 - 1  # arrival numbers are int32: renumbered (order kept) when the next would not fit


class TopologyTracker:
    """Applies relists and watch events of nodes and pods to one snapshot. Not thread-safe (one consumer).

    Besides the snapshot it keeps what the label picker counts: each node's labels as a code into a table of
    distinct label sets (a rack's nodes share one: the value equal to the node's name is stored as `NODE_NAME`),
    one code and one arrival number per snapshot row, and the keys of the pods the snapshot does not hold (unbound
    or finished), which a relist must still be able to delete.
    """

    def __init__(self, keys: TopologyKeys) -> None:
        self.keys = keys
        self.snapshot = ClusterSnapshot(self.keys)
        self._label_set_of_row = np.full(0, NO_LABEL_SET, np.int32)
        # Arrival number of each row's node: the label counts list values in the order nodes arrived, as a dict of
        # nodes by name would (a deleted node that comes back arrives again).
        self._arrival_of_row = np.zeros(0, np.int32)
        self._arrivals = 0
        self._label_sets: list[tuple | None] = []  # code → (key, value, key, value, …); None once unused
        self._label_set_codes: dict[tuple, int] = {}
        self._label_set_nodes: list[int] = []  # code → number of nodes carrying it
        self._free_label_sets: list[int] = []
        # One string object per distinct label key or value across the label sets (each node brings its own copies);
        # rebuilt from the sets in use once as many sets have been dropped as are in use, so it never grows unbounded.
        self._label_strings: dict[str, str] = {}
        self._label_sets_dropped = 0
        self._unheld_pods: set[str] = set()
        self.nodes_listed = False
        self.pods_listed = False
        self.changed = False

    @property
    def ready(self) -> bool:
        """Return True once both nodes and pods have been listed."""
        return self.nodes_listed and self.pods_listed

    @property
    def node_labels(self) -> dict[str, tuple]:
        """Return ``{name: (key, value, key, value, …)}`` of the known nodes, in arrival order (built on each call)."""
        names = self.snapshot.names
        return {names[row]: self._labels_of(row) for row in self._known_rows().tolist()}

    @property
    def pod_keys(self) -> set[str]:
        """Return the "<namespace>/<name>" of every known pod (built on each call)."""
        return {*self.snapshot.held_pod_keys(), *self._unheld_pods}

    def relist_nodes(self, items: list[dict], resource_version: str) -> None:
        """Replace the known nodes by ``items``: nodes not listed are deleted, the others added or updated."""
        listed = {obj["metadata"]["name"] for obj in items}
        names = list(self.snapshot.names)  # decoded once for the whole relist
        known = set()
        for row in self._known_rows().tolist():
            if names[row] in listed:
                known.add(names[row])
            else:
                self.apply_node(DELETED, {"metadata": {"name": names[row]}})
        rows = len(names) + len(listed.difference(names))
        self.snapshot.reserve(rows)
        self._reserve_rows(rows)
        for obj in items:
            self.apply_node(MODIFIED if obj["metadata"]["name"] in known else ADDED, obj)
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
        row = self.snapshot.apply_node_event(event_type, node)
        if event_type == DELETED:
            if 0 <= row < len(self._label_set_of_row) and self._label_set_of_row[row] != NO_LABEL_SET:
                self._release_label_set(int(self._label_set_of_row[row]))
                self._label_set_of_row[row] = NO_LABEL_SET
        else:
            if row >= len(self._label_set_of_row):
                self._reserve_rows(max(row + 1, len(self._label_set_of_row) * 5 // 4))
            code = self._acquire_label_set(name, (node.get("metadata") or {}).get("labels") or {})
            previous = int(self._label_set_of_row[row])
            if previous == NO_LABEL_SET:
                if self._arrivals > MAX_ARRIVAL:
                    self._renumber_arrivals()
                self._arrival_of_row[row] = self._arrivals
                self._arrivals += 1
            else:
                self._release_label_set(previous)
            self._label_set_of_row[row] = code
        self.changed = True

    def apply_pod(self, event_type: str, pod: dict) -> None:
        """Apply one pod event (ADDED, MODIFIED, DELETED); raises KeyError/ValueError for a malformed pod."""
        self.snapshot.apply_pod_event(event_type, pod)
        key = pod_key(pod)
        # The snapshot already keeps the key of every pod it counts (or that waits for its node): only the others
        # need one here.
        if event_type == DELETED or self.snapshot.holds_pod(key):
            self._unheld_pods.discard(key)
        else:
            self._unheld_pods.add(key)
        self.changed = True

    def _known_rows(self) -> np.ndarray:
        """Return the rows of the known nodes in arrival order."""
        rows = np.flatnonzero(self._label_set_of_row != NO_LABEL_SET)
        return rows[np.argsort(self._arrival_of_row[rows], kind="stable")]

    def _renumber_arrivals(self) -> None:
        """Number the known nodes' arrivals 0, 1, … again (same order), so the next one fits in int32."""
        rows = self._known_rows()
        self._arrival_of_row[rows] = np.arange(len(rows), dtype=np.int32)
        self._arrivals = len(rows)

    def _reserve_rows(self, rows: int) -> None:
        if rows > len(self._label_set_of_row):
            codes = np.full(rows, NO_LABEL_SET, np.int32)
            codes[: len(self._label_set_of_row)] = self._label_set_of_row
            arrivals = np.zeros(rows, np.int32)
            arrivals[: len(self._arrival_of_row)] = self._arrival_of_row
            self._label_set_of_row, self._arrival_of_row = codes, arrivals

    def _labels_of(self, row: int) -> tuple:
        """Return the row's labels as ``(key, value, key, value, …)``."""
        labels = self._label_sets[int(self._label_set_of_row[row])]
        if NODE_NAME not in labels:
            return labels
        name = self.snapshot.names[row]
        return tuple(name if part is NODE_NAME else part for part in labels)

    def _acquire_label_set(self, name: str, labels: dict) -> int:
        """Return the code of the label set ``labels`` of node ``name``, counting one more node carrying it."""
        flat = []
        for key, value in labels.items():
            if value == name:
                value = NODE_NAME
            elif getattr(value, "__hash__", None) is None:
                value = repr(value)  # never from the API server (label values are strings); keeps the set a key
            flat.append(key)
            flat.append(value)
        label_set = tuple(flat)
        code = self._label_set_codes.get(label_set)
        if code is None:
            strings = self._label_strings
            label_set = tuple(part if part is NODE_NAME else strings.setdefault(part, part) for part in label_set)
            if self._free_label_sets:
                code = self._free_label_sets.pop()
                self._label_sets[code] = label_set
            else:
                code = len(self._label_sets)
                self._label_sets.append(label_set)
                self._label_set_nodes.append(0)
            self._label_set_codes[label_set] = code
        self._label_set_nodes[code] += 1
        return code

    def _release_label_set(self, code: int) -> None:
        self._label_set_nodes[code] -= 1
        if not self._label_set_nodes[code]:
            del self._label_set_codes[self._label_sets[code]]
            self._label_sets[code] = None
            self._free_label_sets.append(code)
            self._label_sets_dropped += 1
            if self._label_sets_dropped > len(self._label_set_codes):
                self._label_sets_dropped = 0
                self._label_strings = {part: part for label_set in self._label_set_codes for part in label_set
                                       if part is not NODE_NAME}

    def _label_counters(self) -> dict[str, Counter]:
        """Return ``{key: Counter(value → nodes)}``, keys and values in the order of the first node carrying them."""
        rows = self._known_rows()
        codes = self._label_set_of_row[rows]
        distinct, first = np.unique(codes, return_index=True)
        per_key: dict[str, Counter] = {}
        per_node_keys: dict[str, dict[int, object]] = {}  # keys some node carries its own name as: code → value
        # The first node carrying a (key, value) carries a label set no earlier-arrived set contains, so walking the
        # sets in the order of their first node inserts keys and values as walking the nodes would.
        for code in distinct[np.argsort(first, kind="stable")].tolist():
            pairs = iter(self._label_sets[code])
            for key, value in zip(pairs, pairs, strict=True):
                counter = per_key.setdefault(key, Counter())
                if value is NODE_NAME:
                    per_node_keys.setdefault(key, {})
                else:
                    counter[value] += self._label_set_nodes[code]
        if per_node_keys:
            # Values equal to the node names interleave with the shared ones: these keys are counted node by node.
            for code in distinct.tolist():
                pairs = iter(self._label_sets[code])
                for key, value in zip(pairs, pairs, strict=True):
                    if key in per_node_keys:
                        per_node_keys[key][code] = value
            names = list(self.snapshot.names)
            for key, value_of in per_node_keys.items():
                counter = per_key[key] = Counter()
                for row, code in zip(rows.tolist(), codes.tolist(), strict=True):
                    value = value_of.get(code, value_of)
                    if value is not value_of:
                        counter[names[row] if value is NODE_NAME else value] += 1
        return per_key

    def label_counts(self) -> dict[str, dict[str, int]]:
        """Return ``{label key: {value: count}}`` over the present nodes (top values per key)."""
        return _top_values(self._label_counters())

    def label_totals(self) -> dict[str, tuple[int, int]]:
        """Return ``{label key: (nodes carrying it, distinct values)}`` over the present nodes, uncapped."""
        return _totals(self._label_counters())

    def to_live(self, *, source: str, server: str = "", stats: dict | None = None) -> LiveSnapshot:
        """Return a :class:`LiveSnapshot` holding a copy of the current snapshot."""
        counters = self._label_counters()
        return LiveSnapshot(
            snapshot=self.snapshot.copy(),
            taken_at=time.time(),
            label_counts=_top_values(counters),
            source=source,
            server=server,
            stats=stats or {},
            label_totals=_totals(counters),
        )


def _top_values(counters: dict[str, Counter]) -> dict[str, dict[str, int]]:
    return {key: dict(counter.most_common(MAX_LABEL_VALUES)) for key, counter in counters.items()}


def _totals(counters: dict[str, Counter]) -> dict[str, tuple[int, int]]:
    return {key: (counter.total(), len(counter)) for key, counter in counters.items()}


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
