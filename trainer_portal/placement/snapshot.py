"""A columnar, incrementally updated inventory of cluster nodes for topology-aware placement.

One row per node in numpy arrays: allocatable and in-use GPU / milli-CPU / memory bytes / pods, the node's
zone / block / rack domain ids (label values interned into a tree: a rack id stands for the triple zone, block,
rack, so rack names need only be unique within their block), flag bits (ready, cordoned, present), missing-label
bits and an interned code for the node's set of NoSchedule/NoExecute taints (checked against a pod's tolerations
once per distinct taint set, not once per node).

Built from Node and Pod objects (`from_objects`) and kept current by single watch events (`apply_node_event`,
`apply_pod_event`), each O(1) amortised: arrays grow by a quarter (or exactly to a relist's size, `reserve`),
quantities are parsed through a cache.
A pod counts against its node while it is bound (`spec.nodeName`) and not terminal (Succeeded/Failed); every pod's
last contribution is remembered so repeated or out-of-order events are idempotent.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from trainer_portal.placement.names import NodeNames, NodeRows
from trainer_portal.placement.quantities import CPU, GPU, MEMORY, PODS, QuantityError, parse_resource, to_base_units

LEVEL_NAMES = ("zone", "block", "rack", "host")
ZONE, BLOCK, RACK, HOST = range(4)
DOMAIN_LEVELS = 3  # zone, block, rack have domain tables; the host level is the node row itself

READY = 1
CORDONED = 2
PRESENT = 4

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
EVENT_TYPES = (ADDED, MODIFIED, DELETED)
TERMINAL_PHASES = ("Succeeded", "Failed")
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
MISSING = ""  # the interned label value of a node that lacks the label
# Version stamps are unique across all snapshots (and their copies), so a cache keyed by a stamp can never confuse
# two snapshots that happened to receive the same number of events.
_STAMPS = itertools.count(1)


def next_stamp() -> int:
    """Return a fresh, globally unique version stamp."""
    return next(_STAMPS)


class UnknownTopologyKey(ValueError):
    """A topology key that is not one of the snapshot's configured level keys."""


@dataclass(frozen=True)
class TopologyKeys:
    """The node label keys of the four topology levels, coarse to fine."""

    zone: str = "topology.kubernetes.io/zone"
    block: str = "cloud.provider.com/topology-block"
    rack: str = "topology.kubernetes.io/rack"
    host: str = "kubernetes.io/hostname"

    def levels(self) -> tuple[str, str, str, str]:
        """Return the keys ordered zone, block, rack, host."""
        return (self.zone, self.block, self.rack, self.host)

    def level_of(self, key: str) -> int:
        """Return the level index (0 zone … 3 host) of `key`; raises UnknownTopologyKey naming the valid keys."""
        for index, candidate in enumerate(self.levels()):
            if key == candidate:
                return index
        raise UnknownTopologyKey(f"unknown topology key {key!r}; the cluster's topology levels are "
                                 f"{', '.join(f'{n}={k}' for n, k in zip(LEVEL_NAMES, self.levels(), strict=True))}")

    def to_dict(self) -> dict[str, str]:
        """Return {level name: label key}."""
        return dict(zip(LEVEL_NAMES, self.levels(), strict=True))


_QUANTITY_CACHE: dict[tuple[str, object], int] = {}


def _units(resource: str, value: object) -> int:
    """Return `value` of `resource` in snapshot units, through a cache (watch streams repeat the same strings)."""
    key = (resource, value if isinstance(value, str | int) and not isinstance(value, bool) else repr(value))
    cached = _QUANTITY_CACHE.get(key)
    if cached is None:
        cached = to_base_units(resource, parse_resource(resource, value))
        if len(_QUANTITY_CACHE) < 100_000:
            _QUANTITY_CACHE[key] = cached
    return cached


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def pod_requests(pod: dict) -> tuple[int, int, int]:
    """Return the (GPU, milli-CPU, memory bytes) a pod requests: max(Σ containers, any init container) + overhead.

    Malformed quantities count as 0 (a watch stream must not stop on one bad object).
    """
    spec = _dict(pod.get("spec"))

    def container_requests(container: object) -> list[int]:
        resources = _dict(_dict(container).get("resources"))
        merged = {**_dict(resources.get("limits")), **_dict(resources.get("requests"))}
        amounts = [0, 0, 0]
        for index, name in enumerate((GPU, CPU, MEMORY)):
            if name in merged:
                try:
                    amounts[index] = _units(name, merged[name])
                except QuantityError:
                    amounts[index] = 0
        return amounts

    total = [0, 0, 0]
    for container in _list(spec.get("containers")):
        total = [a + b for a, b in zip(total, container_requests(container), strict=True)]
    for container in _list(spec.get("initContainers")):
        total = [max(a, b) for a, b in zip(total, container_requests(container), strict=True)]
    overhead = container_requests({"resources": {"requests": _dict(spec.get("overhead"))}})
    return total[0] + overhead[0], total[1] + overhead[1], total[2] + overhead[2]


def taint_set_of(node: dict) -> frozenset[tuple[str, str, str]]:
    """Return the node's NoSchedule/NoExecute taints as (key, value, effect) triples."""
    taints = set()
    for taint in _list(_dict(node.get("spec")).get("taints")):
        taint = _dict(taint)
        if taint.get("effect") in BLOCKING_EFFECTS:
            taints.add((str(taint.get("key", "")), str(taint.get("value", "") or ""), str(taint["effect"])))
    return frozenset(taints)


def tolerates(tolerations: Iterable[dict], taint: tuple[str, str, str]) -> bool:
    """Return True when one of `tolerations` tolerates `taint` (core/v1 Toleration semantics)."""
    key, value, effect = taint
    for toleration in tolerations:
        toleration = _dict(toleration)
        if toleration.get("effect") not in (None, "", effect):
            continue
        operator = toleration.get("operator") or "Equal"
        t_key = toleration.get("key") or ""
        if operator == "Exists":
            if t_key in ("", key):
                return True
        elif t_key == key and (toleration.get("value") or "") == value:
            return True
    return False


_NODE_COLUMNS = ("alloc_gpu", "alloc_cpu", "alloc_mem", "alloc_pods", "used_gpu", "used_cpu", "used_mem", "used_pods",
                 "flags", "missing", "taint_code")


class ClusterSnapshot:
    """Columnar node inventory; see the module docstring. Not thread-safe: copy() before sharing."""

    def __init__(self, keys: TopologyKeys | None = None, capacity: int = 64) -> None:
        """Create an empty snapshot with room for `capacity` nodes before the first growth."""
        self.keys = keys or TopologyKeys()
        self.size = 0
        self._capacity = max(int(capacity), 1)
        cap = self._capacity
        self.alloc_gpu = np.zeros(cap, np.int32)
        self.alloc_cpu = np.zeros(cap, np.int64)
        self.alloc_mem = np.zeros(cap, np.int64)
        self.alloc_pods = np.zeros(cap, np.int32)
        self.used_gpu = np.zeros(cap, np.int32)
        self.used_cpu = np.zeros(cap, np.int64)
        self.used_mem = np.zeros(cap, np.int64)
        self.used_pods = np.zeros(cap, np.int32)
        self.domain = np.zeros((DOMAIN_LEVELS, cap), np.int32)
        self.flags = np.zeros(cap, np.uint8)
        self.missing = np.zeros(cap, np.uint8)  # bit l set: the label of level l is absent
        self.taint_code = np.zeros(cap, np.int32)
        # Row → name and name → row, packed (see names.py). A snapshot decoded from the store and its copies hold a
        # plain list and dict instead: everything here only appends to `names` and looks names up in `row_of`.
        self.names: NodeNames | list[str] = NodeNames()
        self.row_of: NodeRows | dict[str, int] = self.names.rows
        # Domain tree: level l domain id -> (parent id at level l-1 or -1, label value).
        self._domain_ids: list[dict[tuple[int, str], int]] = [{} for _ in range(DOMAIN_LEVELS)]
        self.domain_parent: list[list[int]] = [[] for _ in range(DOMAIN_LEVELS)]
        self.domain_value: list[list[str]] = [[] for _ in range(DOMAIN_LEVELS)]
        self.taint_sets: list[frozenset] = [frozenset()]
        self._taint_codes: dict[frozenset, int] = {frozenset(): 0}
        # Pods: key -> the contribution currently applied, one int: request code << 32 | row (see _pod_entry). An int
        # costs 32 bytes where a (row, gpu, cpu, mem) tuple cost 104; pods of a job share their request code.
        self._pods: dict[str, int] = {}
        self._requests: list[tuple[int, int, int] | None] = []  # request code -> (gpu, cpu, mem); None once unused
        self._request_codes: dict[tuple[int, int, int], int] = {}
        self._request_pods: list[int] = []  # request code -> number of pods in _pods holding it
        self._free_requests: list[int] = []
        self._pending: dict[str, dict[str, tuple[int, int, int]]] = {}
        self._pod_node: dict[str, str] = {}
        self.version = next_stamp()  # renewed on every change that can alter a placement
        self.topology_version = next_stamp()  # renewed when nodes appear, vanish or change labels
        self.nodes_resource_version = ""
        self.pods_resource_version = ""
        self._derived: dict = {}  # layout-derived arrays, cleared when rows are added or labels change
        self.shape_cache: dict = {}  # per request shape, keyed by version stamp (see engine)
        self.shape_cache_bytes = 0

    # -- construction --------------------------------------------------------------------------------------

    @classmethod
    def from_objects(cls, nodes: Iterable[dict], pods: Iterable[dict] = (), keys: TopologyKeys | None = None, *,
                     nodes_resource_version: str = "", pods_resource_version: str = "") -> ClusterSnapshot:
        """Return a snapshot of `nodes` (core/v1 Node dicts) with `pods` counted against their nodes."""
        nodes = list(nodes)
        snapshot = cls(keys, capacity=max(len(nodes), 1))
        for node in nodes:
            snapshot.apply_node_event(ADDED, node)
        for pod in pods:
            snapshot.apply_pod_event(ADDED, pod)
        snapshot.nodes_resource_version = nodes_resource_version or snapshot.nodes_resource_version
        snapshot.pods_resource_version = pods_resource_version or snapshot.pods_resource_version
        return snapshot

    def reserve(self, rows: int) -> None:
        """Make room for exactly `rows` rows when there is less (a relist knows its size: growing by steps would leave
        up to a quarter of every column unused). Never shrinks; raises nothing."""
        if rows > self._capacity:
            self._resize(rows)

    def _grow(self) -> None:
        # A quarter more, not double: a watcher keeps its snapshot for days, and the spare rows are memory it holds;
        # growth stays amortised O(1) per added node.
        self._resize(self._capacity + max(self._capacity // 4, 16))

    def _resize(self, capacity: int) -> None:
        for name in _NODE_COLUMNS:
            old = getattr(self, name)
            grown = np.zeros(capacity, old.dtype)
            grown[: self.size] = old[: self.size]
            setattr(self, name, grown)
        domain = np.zeros((DOMAIN_LEVELS, capacity), np.int32)
        domain[:, : self.size] = self.domain[:, : self.size]
        self.domain = domain
        self._capacity = capacity

    def _intern_domain(self, level: int, parent: int, value: str) -> int:
        ids = self._domain_ids[level]
        key = (parent, value)
        found = ids.get(key)
        if found is None:
            found = len(self.domain_value[level])
            ids[key] = found
            self.domain_parent[level].append(parent)
            self.domain_value[level].append(value)
        return found

    def _intern_taints(self, taints: frozenset) -> int:
        code = self._taint_codes.get(taints)
        if code is None:
            code = len(self.taint_sets)
            self._taint_codes[taints] = code
            self.taint_sets.append(taints)
        return code

    # -- events ----------------------------------------------------------------------------------------------

    def apply_node_event(self, event_type: str, node: dict) -> int:
        """Apply one Node watch event; return the node's row (-1 for a DELETED node never seen).

        Raises ValueError for an unknown event type or a node without metadata.name.
        """
        if event_type not in EVENT_TYPES:
            raise ValueError(f"event type must be one of {EVENT_TYPES}, got {event_type!r}")
        metadata = _dict(node.get("metadata")) if isinstance(node, dict) else {}
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("a Node event needs metadata.name")
        self.nodes_resource_version = str(metadata.get("resourceVersion") or self.nodes_resource_version)
        row = self.row_of.get(name)
        if event_type == DELETED:
            if row is not None and self.flags[row] & PRESENT:
                self.flags[row] = 0
                self.version = next_stamp()
                self.topology_version = next_stamp()
            return -1 if row is None else row
        new_node = row is None
        if new_node:
            if self.size == self._capacity:
                self._grow()
            row = self.size
            self.size += 1
            self.names.append(name)
            if not isinstance(self.row_of, NodeRows):  # NodeNames.append indexed it already
                self.row_of[name] = row
        old_domains = (int(self.domain[0, row]), int(self.domain[1, row]), int(self.domain[2, row]))
        old_missing, old_flags = int(self.missing[row]), int(self.flags[row])
        self._fill_node(row, node, metadata)
        layout_changed = new_node or old_domains != (
            int(self.domain[0, row]), int(self.domain[1, row]), int(self.domain[2, row]))
        if layout_changed or old_flags != int(self.flags[row]) or old_missing != int(self.missing[row]):
            self.topology_version = next_stamp()
        if layout_changed:
            # Domain tables, rack membership and name order only change when rows or labels do; flag flips
            # (NotReady, cordon) must not force the O(N log N) rebuilds.
            self._derived.clear()
        self.version = next_stamp()
        if new_node and name in self._pending:
            for key, (gpu, cpu, mem) in self._pending.pop(name).items():
                self._pod_node.pop(key, None)  # no longer waiting: its contribution now sits in _pods
                self._pods[key] = self._pod_entry(row, (gpu, cpu, mem))
                self._add_usage(row, gpu, cpu, mem, 1)
        return row

    def _fill_node(self, row: int, node: dict, metadata: dict) -> None:
        labels = _dict(metadata.get("labels"))
        status = _dict(node.get("status"))
        allocatable = _dict(status.get("allocatable")) or _dict(status.get("capacity"))
        for array, resource in ((self.alloc_gpu, GPU), (self.alloc_cpu, CPU), (self.alloc_mem, MEMORY),
                                (self.alloc_pods, PODS)):
            try:
                array[row] = _units(resource, allocatable[resource]) if resource in allocatable else 0
            except QuantityError:
                array[row] = 0
        ready = any(_dict(c).get("type") == "Ready" and _dict(c).get("status") == "True"
                    for c in _list(status.get("conditions")))
        cordoned = bool(_dict(node.get("spec")).get("unschedulable"))
        self.flags[row] = PRESENT | (READY if ready else 0) | (CORDONED if cordoned else 0)
        missing = 0
        parent = -1
        for level, key in enumerate(self.keys.levels()):
            value = labels.get(key)
            if not isinstance(value, str) or not value:
                missing |= 1 << level
                value = MISSING
            if level < DOMAIN_LEVELS:
                parent = self._intern_domain(level, parent, value)
                self.domain[level, row] = parent
        self.missing[row] = missing
        self.taint_code[row] = self._intern_taints(taint_set_of(node))

    def _add_usage(self, row: int, gpu: int, cpu: int, mem: int, pods: int) -> None:
        self.used_gpu[row] += gpu
        self.used_cpu[row] += cpu
        self.used_mem[row] += mem
        self.used_pods[row] += pods

    def apply_pod_event(self, event_type: str, pod: dict) -> None:
        """Apply one Pod watch event: the pod counts against its node while bound and not terminal.

        Idempotent: the pod's previous contribution is replaced, never added twice. Raises ValueError for an unknown
        event type or a pod without metadata.name.
        """
        if event_type not in EVENT_TYPES:
            raise ValueError(f"event type must be one of {EVENT_TYPES}, got {event_type!r}")
        metadata = _dict(pod.get("metadata")) if isinstance(pod, dict) else {}
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("a Pod event needs metadata.name")
        key = f"{metadata.get('namespace') or 'default'}/{name}"
        self.pods_resource_version = str(metadata.get("resourceVersion") or self.pods_resource_version)
        self._remove_pod(key)
        if event_type == DELETED:
            return
        node_name = _dict(pod.get("spec")).get("nodeName")
        phase = _dict(pod.get("status")).get("phase")
        if not isinstance(node_name, str) or not node_name or phase in TERMINAL_PHASES:
            return
        gpu, cpu, mem = pod_requests(pod)
        row = self.row_of.get(node_name)
        if row is None:
            self._pending.setdefault(node_name, {})[key] = (gpu, cpu, mem)
            self._pod_node[key] = node_name
            return
        self._pods[key] = self._pod_entry(row, (gpu, cpu, mem))
        self._add_usage(row, gpu, cpu, mem, 1)
        self.version = next_stamp()

    def _pod_entry(self, row: int, request: tuple[int, int, int]) -> int:
        """Return the `_pods` value of a pod on `row` requesting (gpu, cpu, mem), counting one more holder of it."""
        code = self._request_codes.get(request)
        if code is None:
            if self._free_requests:
                code = self._free_requests.pop()
                self._requests[code] = request
            else:
                code = len(self._requests)
                self._requests.append(request)
                self._request_pods.append(0)
            self._request_codes[request] = code
        self._request_pods[code] += 1
        return code << 32 | row

    def _remove_pod(self, key: str) -> None:
        previous = self._pods.pop(key, None)
        if previous is not None:
            row, code = previous & 0xFFFFFFFF, previous >> 32
            gpu, cpu, mem = self._requests[code]
            self._request_pods[code] -= 1
            if not self._request_pods[code]:
                del self._request_codes[self._requests[code]]
                self._requests[code] = None
                self._free_requests.append(code)
            self._add_usage(row, -gpu, -cpu, -mem, -1)
            self.version = next_stamp()
            return
        node_name = self._pod_node.pop(key, None)
        if node_name is not None:
            pending = self._pending.get(node_name, {})
            pending.pop(key, None)
            if not pending:
                self._pending.pop(node_name, None)

    # -- reading ---------------------------------------------------------------------------------------------

    @property
    def node_count(self) -> int:
        """Return the number of nodes currently present."""
        cached = self._derived.get(("node_count", self.topology_version))
        if cached is None:
            cached = int(np.count_nonzero(self.flags[: self.size] & PRESENT))
            self._derived = {k: v for k, v in self._derived.items() if not (isinstance(k, tuple) and
                                                                           k[0] == "node_count")}
            self._derived[("node_count", self.topology_version)] = cached
        return cached

    @property
    def pod_count(self) -> int:
        """Return the number of pods counted against nodes."""
        return len(self._pods)

    def holds_pod(self, key: str) -> bool:
        """Return True when the pod "<namespace>/<name>" counts against a node or waits for its node to appear."""
        return key in self._pods or key in self._pod_node

    def held_pod_keys(self) -> list[str]:
        """Return the keys of the pods `holds_pod` is True for."""
        return [*self._pods, *self._pod_node]

    def free(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return the free (GPU, milli-CPU, memory bytes, pods) per row (allocatable − used; may be negative)."""
        n = self.size
        return (self.alloc_gpu[:n] - self.used_gpu[:n], self.alloc_cpu[:n] - self.used_cpu[:n],
                self.alloc_mem[:n] - self.used_mem[:n], self.alloc_pods[:n] - self.used_pods[:n])

    def domain_arrays(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Return per level (zone, block, rack): the parent-id array and the lexicographic rank array of domains.

        Cached until the topology changes. The rank orders domains by their full label path (zone, block, rack),
        the deterministic tie-break of the placement engine.
        """
        cached = self._derived.get("domains")
        if cached is None:
            parents = [np.asarray(self.domain_parent[level], np.int32) for level in range(DOMAIN_LEVELS)]
            ranks = []
            paths: list[tuple[str, ...]] = []
            for level in range(DOMAIN_LEVELS):
                values = self.domain_value[level]
                parent_ids = self.domain_parent[level]
                paths = [(*(paths[parent_ids[i]] if level else ()), values[i]) for i in range(len(values))]
                order = sorted(range(len(paths)), key=paths.__getitem__)
                rank = np.empty(len(paths), np.int32)
                rank[order] = np.arange(len(paths), dtype=np.int32)
                ranks.append(rank)
            cached = (parents, ranks)
            self._derived["domains"] = cached
        return cached

    def rack_members(self) -> tuple[np.ndarray, np.ndarray]:
        """Return (rows sorted by rack id, start offset of each rack id in it): nodes of rack r are
        rows[start[r]:start[r+1]]. Cached until the topology changes."""
        cached = self._derived.get("racks")
        if cached is None:
            racks = self.domain[RACK, : self.size]
            order = np.argsort(racks, kind="stable").astype(np.int32)
            starts = np.searchsorted(racks[order], np.arange(len(self.domain_value[RACK]) + 1)).astype(np.int32)
            cached = (order, starts)
            self._derived["racks"] = cached
        return cached

    def node_rank(self) -> np.ndarray:
        """Return each row's position in the lexicographic order of node names (cached until rows change)."""
        cached = self._derived.get("names")
        if cached is None:
            names = list(self.names)  # decoded once, not once per comparison (NodeNames decodes on access)
            order = sorted(range(self.size), key=names.__getitem__)
            cached = np.empty(self.size, np.int64)
            cached[order] = np.arange(self.size)
            self._derived["names"] = cached
        return cached

    def name_array(self) -> np.ndarray:
        """Return the node names as a numpy object array (cached until rows change)."""
        cached = self._derived.get("name_array")
        if cached is None:
            cached = np.array(list(self.names), dtype=object)
            self._derived["name_array"] = cached
        return cached

    def rack_paths(self) -> list[tuple[str, str, str]]:
        """Return (zone, block, rack) label values per rack id (cached until the layout changes)."""
        cached = self._derived.get("rack_paths")
        if cached is None or len(cached) != len(self.domain_value[2]):
            cached = [self.domain_path(2, rack) for rack in range(len(self.domain_value[2]))]
            self._derived["rack_paths"] = cached
        return cached

    def domain_label(self, level: int, domain_id: int) -> str:
        """Return the label value of a zone/block/rack domain ("" when the nodes lack the label)."""
        return self.domain_value[level][domain_id]

    def domain_path(self, level: int, domain_id: int) -> tuple[str, ...]:
        """Return the label values from zone down to `level` of a domain, e.g. ("us-east-1a", "b3", "r17")."""
        path = []
        while level >= 0:
            path.append(self.domain_value[level][domain_id])
            domain_id = self.domain_parent[level][domain_id]
            level -= 1
        return tuple(reversed(path))

    # -- bookkeeping -------------------------------------------------------------------------------------------

    def copy(self) -> ClusterSnapshot:
        """Return an independent copy (arrays and tables copied; events on one never affect the other)."""
        other = ClusterSnapshot.__new__(ClusterSnapshot)
        for name, value in self.__dict__.items():
            if isinstance(value, np.ndarray):
                setattr(other, name, value.copy())
            elif isinstance(value, dict):
                setattr(other, name, {k: (dict(v) if isinstance(v, dict) else v) for k, v in value.items()})
            elif isinstance(value, list):
                setattr(other, name, [list(v) if isinstance(v, list) else (dict(v) if isinstance(v, dict) else v)
                                      for v in value])
            else:
                setattr(other, name, value)
        if isinstance(self.names, NodeNames):
            other.names = self.names.copy()
            other.row_of = other.names.rows
        other._derived = {}
        other.shape_cache = {}
        other.shape_cache_bytes = 0
        return other

    def __getstate__(self) -> dict:
        """Pickle without caches (they can be large and are rebuilt on demand)."""
        state = dict(self.__dict__)
        if isinstance(state.get("row_of"), NodeRows):
            del state["row_of"]  # a view of `names`, restored from it
        state["_derived"] = {}
        state["shape_cache"] = {}
        state["shape_cache_bytes"] = 0
        return state

    def __setstate__(self, state: dict) -> None:
        """Restore, with fresh version stamps: stamps are unique per process, not across processes."""
        self.__dict__.update(state)
        if isinstance(state.get("names"), NodeNames):
            self.row_of = self.names.rows
        self.version = next_stamp()
        self.topology_version = next_stamp()

    def clear_caches(self) -> None:
        """Drop the per-shape placement caches (the layout-derived arrays stay)."""
        self.shape_cache = {}
        self.shape_cache_bytes = 0

    def memory_breakdown(self) -> dict[str, int]:
        """Return the approximate bytes held: node arrays, the node-name index, domain tables, pod index."""
        arrays = sum(value.nbytes for value in self.__dict__.values() if isinstance(value, np.ndarray))
        if isinstance(self.names, NodeNames):
            names = self.names.nbytes()
        else:
            names = sys.getsizeof(self.row_of) + sys.getsizeof(self.names) + sum(sys.getsizeof(n) for n in self.names)
        domains = sum(sys.getsizeof(ids) for ids in self._domain_ids) + sum(
            sys.getsizeof(v) for values in self.domain_value for v in values)
        pods = sys.getsizeof(self._pods) + sum(sys.getsizeof(k) + 32 for k in self._pods)
        return {"node_arrays": arrays, "node_names": names, "domains": domains, "pods": pods}

    def nbytes_per_node(self) -> float:
        """Return the bytes per node of the node inventory (arrays, name index, domain tables; pods excluded)."""
        breakdown = self.memory_breakdown()
        return (breakdown["node_arrays"] + breakdown["node_names"] + breakdown["domains"]) / max(self.size, 1)

    def to_summary(self) -> dict:
        """Return free/total GPUs and node counts per zone → block → rack (JSON-serialisable, for the heat map).

        Free GPUs count only schedulable nodes (present, Ready, not cordoned).
        """
        n = self.size
        schedulable = (self.flags[:n] & (PRESENT | READY | CORDONED)) == (PRESENT | READY)
        present = (self.flags[:n] & PRESENT) != 0
        free_gpu = np.maximum(self.alloc_gpu[:n] - self.used_gpu[:n], 0) * schedulable
        racks = self.domain[RACK, :n]
        n_racks = len(self.domain_value[RACK])
        rack_free = np.bincount(racks, weights=free_gpu.astype(np.float64), minlength=n_racks)
        rack_total = np.bincount(racks, weights=(self.alloc_gpu[:n] * present).astype(np.float64), minlength=n_racks)
        rack_nodes = np.bincount(racks, weights=present.astype(np.float64), minlength=n_racks)
        rack_bad = np.bincount(racks, weights=(present & ~schedulable).astype(np.float64), minlength=n_racks)
        zones: dict[int, dict] = {}
        blocks: dict[int, dict] = {}
        for rack in sorted(range(n_racks), key=lambda r: self.domain_path(RACK, r)):
            if rack_nodes[rack] == 0:
                continue
            block = self.domain_parent[RACK][rack]
            zone = self.domain_parent[BLOCK][block]
            zone_entry = zones.setdefault(zone, {"name": self.domain_value[ZONE][zone], "freeGpus": 0, "totalGpus": 0,
                                                 "nodes": 0, "unschedulableNodes": 0, "blocks": []})
            if block not in blocks:
                blocks[block] = {"name": self.domain_value[BLOCK][block], "freeGpus": 0, "totalGpus": 0, "nodes": 0,
                                 "unschedulableNodes": 0, "racks": []}
                zone_entry["blocks"].append(blocks[block])
            entry = {"name": self.domain_value[RACK][rack], "freeGpus": int(rack_free[rack]),
                     "totalGpus": int(rack_total[rack]), "nodes": int(rack_nodes[rack]),
                     "unschedulableNodes": int(rack_bad[rack])}
            blocks[block]["racks"].append(entry)
            for target in (blocks[block], zone_entry):
                for field in ("freeGpus", "totalGpus", "nodes", "unschedulableNodes"):
                    target[field] += entry[field]
        zone_list = list(zones.values())
        return {
            "keys": self.keys.to_dict(),
            "nodes": self.node_count,
            "freeGpus": sum(z["freeGpus"] for z in zone_list),
            "totalGpus": sum(z["totalGpus"] for z in zone_list),
            "zones": zone_list,
            "version": self.version,
            "nodesResourceVersion": self.nodes_resource_version,
            "podsResourceVersion": self.pods_resource_version,
        }
