"""Kueue-TAS-style topology-aware gang placement over a ClusterSnapshot (placement.md §1).

Phase 1 (bottom-up): per node `slots = min over resources floor(free / request)` (vectorised), summed per rack,
block and zone with `np.bincount`; with a slice constraint (level-3 Jobs under a parent) the pod count is rounded
down to whole slices at the slice level and slices are summed above it.
Phase 2 (top-down): at the required level the smallest domain that holds the whole group (BestFit; ties: fewer
leftover pods, then label values); then level by level the children are filled largest first, the last one
replaced by the tightest child that covers what remains. Unconstrained groups use LeastFreeCapacity over nodes
(fullest nodes first); `basic` groups are placed pod by pod the same way and may be partial.

Several groups of one TrainJob are placed in order on an overlay of the snapshot (earlier groups consume
capacity; the caller's snapshot is never modified). A composite root (job in a zone) tries its domains in BestFit
order and keeps the first where every child group fits. Per-shape slot arrays are cached on the snapshot keyed by
its version stamp, so a repeated shape skips phase 1's node pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtimes.domain.expansion import BASIC, COMPOSITE_POD_GROUP, GANG, Expansion, PodGroupPlan, PodSet
from runtimes.domain.placement.explain import (
    CLUSTER,
    Explanation,
    Fragmentation,
    FragmentationState,
    domain_title,
    exclusion_counts,
    format_counts,
    fragmentation_after,
    fragmentation_state,
    level_name,
    nodes_needed,
    unit_label,
)
from runtimes.domain.placement.quantities import CPU, GPU, MEMORY, QuantityError, parse_resource, to_base_units
from runtimes.domain.placement.snapshot import (
    BLOCK,
    CORDONED,
    DOMAIN_LEVELS,
    HOST,
    LEVEL_NAMES,
    PRESENT,
    RACK,
    READY,
    ZONE,
    ClusterSnapshot,
    TopologyKeys,
    next_stamp,
    tolerates,
)

_SHAPE_CACHE_BYTES = 96 * 2**20  # per snapshot; ~100 shapes × levels at 50k nodes


class PlacementInputError(ValueError):
    """A placement request that cannot be evaluated (bad quantity, unknown topology key, bad counts)."""


# -- requests -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlacementRequest:
    """One PodGroup to place (or a CompositePodGroup of level-3 Jobs, expressed as slices).

    `resources` are per-pod requests (quantity strings or numbers). `topology_key`: all pods in one domain of that
    level (None: anywhere). `slice_size`/`slice_topology_key`: the pods form consecutive slices of `slice_size`
    pods, each inside one domain of the slice level (Kueue slice-required topology); `slice_names` names the
    PodGroup of each slice. `extra` are further pod kinds of the same group (e.g. an MPI launcher) placed in the
    same domain after the main pods.
    """

    name: str
    pod_count: int
    resources: Mapping[str, object] = field(default_factory=dict)
    min_count: int | None = None
    policy: str = GANG
    topology_key: str | None = None
    tolerations: tuple[Mapping, ...] = ()
    slice_size: int | None = None
    slice_topology_key: str | None = None
    slice_names: tuple[str, ...] = ()
    level: int | None = None
    parent: str | None = None
    replicated_jobs: tuple[str, ...] = ()
    extra: tuple[PlacementRequest, ...] = ()
    kind: str = "PodGroup"
    preferred: bool = False  # Kueue preferred mode: try the level, then each coarser one, then spread


@dataclass(frozen=True)
class _Shape:
    gpu: int
    cpu: int
    mem: int
    tolerations: tuple

    @property
    def request(self) -> tuple[int, int, int]:
        return (self.gpu, self.cpu, self.mem)


_SHAPES: dict[tuple, _Shape] = {}


def _shape_of(request: PlacementRequest) -> _Shape:
    """Return the request's per-pod shape in snapshot units (memoised: queues repeat the same few shapes)."""
    try:
        key = (tuple(sorted((str(k), v) for k, v in dict(request.resources).items())),
               tuple(tuple(sorted(dict(t).items())) for t in request.tolerations))
        cached = _SHAPES.get(key)
    except TypeError:  # unhashable values: parse every time
        key, cached = None, None
    if cached is None:
        cached = _parse_shape(request)
        if key is not None and len(_SHAPES) < 10_000:
            _SHAPES[key] = cached
    return cached


def _parse_shape(request: PlacementRequest) -> _Shape:
    amounts = {GPU: 0, CPU: 0, MEMORY: 0}
    for name, value in dict(request.resources).items():
        try:
            amount = parse_resource(str(name), value, field=f"{request.name}.resources.{name}")
        except QuantityError as error:
            raise PlacementInputError(str(error)) from None
        if name in amounts:
            amounts[name] = to_base_units(name, amount)
    tolerations = tuple(sorted(tuple(sorted((str(k), str(v)) for k, v in dict(t).items()))
                               for t in request.tolerations))
    return _Shape(amounts[GPU], amounts[CPU], amounts[MEMORY], tolerations)


# -- results ------------------------------------------------------------------------------------------------------


@dataclass
class GroupPlacement:
    """The placement of one PodGroup / CompositePodGroup."""

    name: str
    kind: str
    policy: str
    level: int | None
    topology_key: str | None
    pod_count: int
    min_count: int | None
    fits: bool
    placed: int
    domain: dict | None
    pods_per_node: dict[str, int]
    span: dict[str, int]
    message: str
    explanation: Explanation | None = None
    parent: str | None = None
    racks: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """Return a JSON-serialisable form."""
        return {
            "name": self.name,
            "kind": self.kind,
            "policy": self.policy,
            "level": self.level,
            "topologyKey": self.topology_key,
            "podCount": self.pod_count,
            "minCount": self.min_count,
            "fits": self.fits,
            "placed": self.placed,
            "domain": self.domain,
            "podsPerNode": dict(self.pods_per_node),
            "span": dict(self.span),
            "racks": list(self.racks),
            "message": self.message,
            "explanation": self.explanation.to_dict() if self.explanation else None,
            "parent": self.parent,
        }


@dataclass
class PlacementResult:
    """The verdict for one TrainJob: every group's placement, and the fragmentation left behind."""

    groups: list[GroupPlacement]
    fits: bool
    fragmentation_before: Fragmentation | None
    fragmentation_after: Fragmentation | None
    snapshot_version: int
    total_nodes: int

    def group(self, name: str) -> GroupPlacement:
        """Return the placement of group `name`; raises KeyError when there is none."""
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(name)

    @property
    def message(self) -> str:
        """Return a one-line verdict."""
        failing = [g for g in self.groups if not g.fits and g.policy == GANG]
        if not failing:
            return "fits: " + "; ".join(g.message for g in self.groups if g.kind != COMPOSITE_POD_GROUP)
        return "does not fit: " + "; ".join(g.message for g in failing)

    def to_dict(self) -> dict:
        """Return a JSON-serialisable form for the API."""
        return {
            "fits": self.fits,
            "message": self.message,
            "groups": [group.to_dict() for group in self.groups],
            "fragmentation": {
                "before": self.fragmentation_before.to_dict() if self.fragmentation_before else None,
                "after": self.fragmentation_after.to_dict() if self.fragmentation_after else None,
            },
            "snapshotVersion": self.snapshot_version,
            "totalNodes": self.total_nodes,
        }


# -- the view: snapshot + capacity taken by groups placed earlier in this call ------------------------------------


class _View:
    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.n = snapshot.size
        self.chunks: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, taken[4, rows]) placed in this call
        self._merged: tuple[np.ndarray, np.ndarray] | None = None
        self.parents, self.ranks = snapshot.domain_arrays()
        self.n_domains = [len(snapshot.domain_value[level]) for level in range(DOMAIN_LEVELS)]
        key = ("schedulable", snapshot.topology_version)
        schedulable = _lookup(snapshot, key)
        if schedulable is None:
            flags = snapshot.flags[: self.n]
            schedulable = (flags & (PRESENT | READY | CORDONED)) == (PRESENT | READY)
            _remember(snapshot, key, schedulable)
        self.schedulable = schedulable

    @property
    def overlay(self) -> bool:
        """Whether groups placed earlier in this call took capacity."""
        return bool(self.chunks)

    def fork(self) -> _View:
        other = _View.__new__(_View)
        other.__dict__.update(self.__dict__)
        other.chunks = list(self.chunks)
        return other

    def take(self, shape: _Shape, pods_per_row: Mapping[int, int]) -> None:
        if not pods_per_row:
            return
        rows = np.fromiter(pods_per_row, np.int64, len(pods_per_row))
        pods = np.fromiter(pods_per_row.values(), np.int64, len(pods_per_row))
        taken = np.vstack((pods * shape.gpu, pods * shape.cpu, pods * shape.mem, pods))
        self.chunks.append((rows, taken))
        self._merged = None

    def merged(self) -> tuple[np.ndarray, np.ndarray]:
        """(unique rows, taken[4, rows]) summed over everything placed in this call."""
        if self._merged is None:
            rows = np.concatenate([rows for rows, _ in self.chunks])
            taken = np.concatenate([taken for _, taken in self.chunks], axis=1)
            unique, inverse = np.unique(rows, return_inverse=True)
            summed = np.zeros((4, len(unique)), np.int64)
            for index in range(4):
                summed[index] = np.bincount(inverse, weights=taken[index], minlength=len(unique))
            self._merged = (unique, summed)
        return self._merged

    def free(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        free = [array.astype(np.int64) for array in self.snapshot.free()]
        if self.chunks:
            rows, taken = self.merged()
            for index in range(4):
                free[index][rows] -= taken[index]
        return free[0], free[1], free[2], free[3]

    def tolerated(self, shape: _Shape) -> np.ndarray:
        key = ("tolerated", shape.tolerations, self.snapshot.topology_version)
        cached = _lookup(self.snapshot, key)
        if cached is None:
            tolerations = [dict(t) for t in shape.tolerations]
            lookup = np.array([all(tolerates(tolerations, taint) for taint in taints)
                               for taints in self.snapshot.taint_sets], bool)
            cached = lookup[self.snapshot.taint_code[: self.n]]
            _remember(self.snapshot, key, cached)
        return cached

    def label_ok(self, levels: int) -> np.ndarray:
        """Nodes carrying the labels of the first `levels` levels (zone, block, rack, host)."""
        key = ("labels", levels, self.snapshot.topology_version)
        cached = _lookup(self.snapshot, key)
        if cached is None:
            cached = (self.snapshot.missing[: self.n] & ((1 << levels) - 1)) == 0
            _remember(self.snapshot, key, cached)
        return cached

    def snapshot_free(self) -> list[np.ndarray]:
        """The snapshot's free GPU / milli-CPU / memory / pods per node as int64, clipped at 0 (cached)."""
        key = ("free", self.snapshot.version)
        cached = _lookup(self.snapshot, key)
        if cached is None:
            cached = [np.maximum(array, 0, dtype=np.int64) for array in self.snapshot.free()]
            _remember(self.snapshot, key, cached)
        return cached

    def raw_slots(self, shape: _Shape) -> np.ndarray:
        """Per-node pod slots of `shape` by free resources alone (cached per version), eligibility ignored."""
        key = ("raw", shape, self.snapshot.version)
        cached = _lookup(self.snapshot, key)
        if cached is None:
            cached = _slots(self.snapshot_free(), shape)
            _remember(self.snapshot, key, cached)
        return cached

    def base_slots(self, shape: _Shape) -> np.ndarray:
        """Per-node pod slots of `shape` on the snapshot alone (cached per version), excluded nodes at 0."""
        key = ("slots", shape, self.snapshot.version)
        cached = _lookup(self.snapshot, key)
        if cached is None:
            cached = self.raw_slots(shape) * (self.schedulable & self.tolerated(shape))
            _remember(self.snapshot, key, cached)
        return cached

    def slots(self, shape: _Shape) -> np.ndarray:
        base = self.base_slots(shape)
        if not self.chunks:
            return base
        rows, taken = self.merged()
        current = [array[rows].astype(np.int64) for array in self.snapshot.free()]
        patched = _slots([current[i] - taken[i] for i in range(4)], shape)
        ok = (self.schedulable & self.tolerated(shape))[rows]
        result = base.copy()
        result[rows] = patched * ok
        return result

    def effective_label_levels(self, levels: int) -> int:
        """`levels`, or 0 when every node carries those labels (so all levels share one cached aggregate)."""
        if not levels:
            return 0
        key = ("labels_all", levels, self.snapshot.topology_version)
        complete = _lookup(self.snapshot, key)
        if complete is None:
            complete = bool(self.label_ok(levels).all())
            _remember(self.snapshot, key, complete)
        return 0 if complete else levels

    def _cacheable(self, restrict: np.ndarray | None) -> bool:
        return not self.overlay and restrict is None

    def node_slots(self, shape: _Shape, label_levels: int, restrict: np.ndarray | None) -> np.ndarray:
        """Per-node slots of `shape` on nodes carrying the first `label_levels` labels, inside `restrict`."""
        slots = self.slots(shape)
        if label_levels:
            slots = slots * self.label_ok(label_levels)
        if restrict is not None:
            slots = slots * restrict
        return slots

    def counts(self, shape: _Shape, label_levels: int, slice_level: int, slice_size: int,
               restrict: np.ndarray | None) -> _Counts:
        """Phase 1 for a request: node slots and per-domain pods/slices (cached per shape and version)."""
        label_levels = self.effective_label_levels(label_levels)
        key = ("counts", shape, label_levels, slice_level, slice_size, self.snapshot.version)
        if self._cacheable(restrict):
            cached = _lookup(self.snapshot, key)
            if cached is not None:
                return cached
        result = _aggregate(self, self.node_slots(shape, label_levels, restrict), slice_level, slice_size)
        if self._cacheable(restrict):
            _remember(self.snapshot, key, result)
        return result

    def fullest_first(self, shape: _Shape, slots: np.ndarray,
                      restrict: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Rows with free slots ordered fullest first (LeastFreeCapacity), and the running sum of their slots."""
        key = ("lfc", shape, self.snapshot.version)
        if self._cacheable(restrict):
            cached = _lookup(self.snapshot, key)
            if cached is not None:
                return cached
        candidates = np.flatnonzero(slots > 0)
        order = candidates[np.argsort(slots[candidates], kind="stable")]
        result = (order, np.cumsum(slots[order]))
        if self._cacheable(restrict):
            _remember(self.snapshot, key, result)
        return result

    def cached(self, key: tuple, restrict: np.ndarray | None, compute: Callable[[], Any], *,
               ignore_overlay: bool = False) -> Any:
        """Return compute() memoised under `key` + version when nothing is overlaid or restricted."""
        if restrict is not None or (self.overlay and not ignore_overlay):
            return compute()
        full_key = (*key, self.snapshot.version)
        value = _lookup(self.snapshot, full_key)
        if value is None:
            value = compute()
            _remember(self.snapshot, full_key, value)
        return value

    def empty_slots(self, shape: _Shape) -> np.ndarray:
        """Per-node pod slots of `shape` on empty nodes (allocatable only), for "even empty, …" advice."""
        key = ("empty", shape, self.snapshot.topology_version)
        cached = _lookup(self.snapshot, key)
        if cached is None:
            s = self.snapshot
            n = self.n
            alloc = [s.alloc_gpu[:n].astype(np.int64), s.alloc_cpu[:n], s.alloc_mem[:n],
                     s.alloc_pods[:n].astype(np.int64)]
            cached = _slots(alloc, shape) * ((s.flags[:n] & PRESENT) != 0)
            _remember(self.snapshot, key, cached)
        return cached


def _nbytes(value: object, seen: set[int] | None = None) -> int:
    """Approximate bytes held by a cached value (arrays counted once)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, _Counts):
        return sum(_nbytes(v, seen) for v in (value.node_slots, value.node_units, *value.pods, *value.units))
    if isinstance(value, tuple | list):
        return 64 + sum(_nbytes(v, seen) for v in value)
    return 64


def _lookup(snapshot: ClusterSnapshot, key: tuple) -> Any:
    """Return a cached value (refreshing its LRU position) or None."""
    value = snapshot.shape_cache.pop(key, None)
    if value is not None:
        snapshot.shape_cache[key] = value
    return value


def _remember(snapshot: ClusterSnapshot, key: tuple, value: object) -> None:
    """Cache `value` under `key`, evicting least recently used entries beyond the byte budget."""
    size = _nbytes(value)
    previous = snapshot.shape_cache.pop(key, None)
    if previous is not None:
        snapshot.shape_cache_bytes -= _nbytes(previous)
    snapshot.shape_cache[key] = value
    snapshot.shape_cache_bytes += size
    while snapshot.shape_cache_bytes > _SHAPE_CACHE_BYTES and len(snapshot.shape_cache) > 1:
        oldest = next(iter(snapshot.shape_cache))
        snapshot.shape_cache_bytes -= _nbytes(snapshot.shape_cache.pop(oldest))


def _slots(free: Sequence[np.ndarray], shape: _Shape) -> np.ndarray:
    slots = np.maximum(free[3], 0)
    for amount, available in ((shape.gpu, free[0]), (shape.cpu, free[1]), (shape.mem, free[2])):
        if amount > 0:
            slots = np.minimum(slots, np.maximum(available, 0) // amount)
    return slots


# -- phase 1: aggregation ------------------------------------------------------------------------------------------


@dataclass
class _Counts:
    node_slots: np.ndarray  # pods per node
    node_units: np.ndarray  # slices per node (== node_slots without a host-level slice)
    pods: list[np.ndarray]  # per domain level: pods
    units: list[np.ndarray | None]  # per domain level: slices, None below the slice level
    slice_level: int
    slice_size: int


def _aggregate(view: _View, node_slots: np.ndarray, slice_level: int, slice_size: int) -> _Counts:
    racks = view.snapshot.domain[RACK, : view.n]
    as_float = node_slots.astype(np.float64)
    rack_pods = np.bincount(racks, weights=as_float, minlength=view.n_domains[RACK])
    block_pods = np.bincount(view.parents[RACK], weights=rack_pods, minlength=view.n_domains[BLOCK])
    zone_pods = np.bincount(view.parents[BLOCK], weights=block_pods, minlength=view.n_domains[ZONE])
    pods = [zone_pods.astype(np.int64), block_pods.astype(np.int64), rack_pods.astype(np.int64)]
    units: list[np.ndarray | None] = [None, None, None]
    node_units = node_slots
    if slice_size == 1:
        units = list(pods)
    elif slice_level == HOST:
        node_units = node_slots // slice_size
        rack_units = np.bincount(racks, weights=node_units.astype(np.float64), minlength=view.n_domains[RACK])
        block_units = np.bincount(view.parents[RACK], weights=rack_units, minlength=view.n_domains[BLOCK])
        zone_units = np.bincount(view.parents[BLOCK], weights=block_units, minlength=view.n_domains[ZONE])
        units = [zone_units.astype(np.int64), block_units.astype(np.int64), rack_units.astype(np.int64)]
    else:
        units[slice_level] = pods[slice_level] // slice_size
        for level in range(slice_level - 1, -1, -1):
            units[level] = np.bincount(view.parents[level + 1], weights=units[level + 1].astype(np.float64),
                                       minlength=view.n_domains[level]).astype(np.int64)
    return _Counts(node_slots, node_units, pods, units, slice_level, slice_size)


# -- phase 2: BestFit descent ----------------------------------------------------------------------------------------


def _best_fit(caps: np.ndarray, tie: np.ndarray, rank: np.ndarray, need: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (indices, amounts) covering `need` from `caps`: largest first, the last one the tightest fit.

    Order: caps descending, then `tie` ascending (less leftover), then `rank` (label values). Takes everything
    positive when the total is short.
    """
    if need <= 0 or len(caps) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((rank, tie, -caps)) if len(caps) > 1 else np.zeros(1, np.int64)
    sorted_caps = caps[order]
    taken_before = np.concatenate(([0], np.cumsum(sorted_caps)[:-1]))
    remaining = need - taken_before
    covers = (sorted_caps >= remaining) & (remaining > 0)
    if not covers.any():
        positive = sorted_caps > 0
        return order[positive], sorted_caps[positive]
    position = int(np.argmax(covers))
    still = int(remaining[position])
    # Tight fit: the smallest cap >= what remains among the untaken; the first of equals in sort order.
    tail = sorted_caps[position:]
    fitting = int(np.count_nonzero(tail >= still))  # the tail is sorted descending
    first_equal = int(np.argmax(tail == tail[fitting - 1]))
    indices = np.concatenate((order[:position], order[position + first_equal: position + first_equal + 1]))
    amounts = np.concatenate((sorted_caps[:position], [still]))
    return indices, amounts.astype(np.int64)


def _children(view: _View, level: int, parent_ids: Iterable[int]) -> np.ndarray:
    """Domain ids at `level` whose parent (at level-1) is in parent_ids; level 0 → all zones."""
    if level == ZONE:
        return np.arange(view.n_domains[ZONE])
    parents = np.fromiter(parent_ids, np.int64)
    if len(parents) == 1:
        return np.flatnonzero(view.parents[level] == parents[0])
    return np.flatnonzero(np.isin(view.parents[level], parents))


def _rack_rows(view: _View, rack_ids: Iterable[int]) -> np.ndarray:
    order, starts = view.snapshot.rack_members()
    chunks = [order[starts[r]: starts[r + 1]] for r in rack_ids]
    return np.concatenate(chunks) if chunks else np.zeros(0, np.int32)


def _descend(view: _View, counts: _Counts, level: int, chosen: dict[int, int]) -> tuple[dict[int, int], dict]:
    """Spread `chosen` {domain id at `level`: amount in units} down to nodes. Returns (pods per row, per-level
    assignments {level: {domain: amount}}).

    Levels at or above the slice level are filled pooled (all children of the chosen domains re-sorted together);
    below it each parent's amount is spread over its own children. A parent whose whole capacity is taken hands
    every child its full capacity without sorting.
    """
    s, slice_level = counts.slice_size, counts.slice_level
    node_rank = view.snapshot.node_rank()
    assignments: dict[int, dict[int, int]] = {level: dict(chosen)}
    current = dict(chosen)
    for child_level in range(level + 1, HOST + 1):
        pooled = child_level <= slice_level
        if pooled:
            groups = [(list(current), sum(current.values()))]
        else:
            groups = [([parent], amount * (s if child_level - 1 == slice_level else 1))
                      for parent, amount in current.items()]
        ids_parts, amount_parts = [], []
        full_ids: list[np.ndarray] = []
        for parents, amount in groups:
            if child_level == HOST:
                ids = _rack_rows(view, parents)
                caps = counts.node_units[ids] if pooled else counts.node_slots[ids]
            else:
                ids = _children(view, child_level, parents)
                caps = counts.units[child_level][ids] if pooled else counts.pods[child_level][ids]
            if int(caps.sum()) <= amount:
                full_ids.append(ids[caps > 0])
                continue
            if child_level == HOST:
                tie, rank = counts.node_slots[ids], node_rank[ids]
            else:
                tie, rank = counts.pods[child_level][ids], view.ranks[child_level][ids]
            picked, amounts = _best_fit(caps, tie, rank, amount)
            ids_parts.append(ids[picked])
            amount_parts.append(amounts)
        if full_ids:
            ids = np.concatenate(full_ids)
            if child_level == HOST:
                caps = counts.node_units[ids] if pooled else counts.node_slots[ids]
            else:
                caps = counts.units[child_level][ids] if pooled else counts.pods[child_level][ids]
            ids_parts.append(ids)
            amount_parts.append(caps)
        if ids_parts:
            all_ids = np.concatenate(ids_parts).tolist()
            all_amounts = np.concatenate(amount_parts).tolist()
        else:
            all_ids, all_amounts = [], []
        next_assign: dict[int, int] = {}
        for key, amount in zip(all_ids, all_amounts, strict=True):
            next_assign[key] = next_assign.get(key, 0) + amount
        assignments[child_level] = next_assign
        current = next_assign
    if slice_level == HOST and s > 1:
        current = {row: amount * s for row, amount in current.items()}
    return current, assignments


# -- placing one group ---------------------------------------------------------------------------------------------


@dataclass
class _Outcome:
    fits: bool
    placed: int
    pods_per_row: dict[int, int]
    level: int
    domain_id: int | None
    assignments: dict
    explanation: Explanation | None
    message: str
    shape: _Shape


class _Placer:
    def __init__(self, snapshot: ClusterSnapshot, keys: TopologyKeys) -> None:
        self.snapshot = snapshot
        self.keys = keys
        self.assign = True  # False: decide fit/no-fit and the domain only, skip the per-node descent

    def level_of(self, key: str | None, what: str) -> int:
        if key is None:
            return CLUSTER
        try:
            return self.keys.level_of(key)
        except ValueError as error:
            raise PlacementInputError(f"{what}: {error}") from None

    def place(self, view: _View, request: PlacementRequest, restrict: np.ndarray | None = None) -> _Outcome:
        shape = _shape_of(request)
        if request.pod_count < 0:
            raise PlacementInputError(f"{request.name}: pod_count must be >= 0")
        level = self.level_of(request.topology_key, f"{request.name}.topology_key")
        slice_size = request.slice_size or 1
        slice_level = self.level_of(request.slice_topology_key, f"{request.name}.slice_topology_key") \
            if request.slice_topology_key else HOST
        if slice_size > 1 and request.pod_count % slice_size:
            raise PlacementInputError(f"{request.name}: pod_count {request.pod_count} is not a multiple of the slice "
                                      f"size {slice_size}")
        if slice_level != HOST and level != CLUSTER and slice_level < level:
            raise PlacementInputError(f"{request.name}: the slice level ({LEVEL_NAMES[slice_level]}) must not be "
                                      f"coarser than the group's level ({LEVEL_NAMES[level]})")
        if request.pod_count == 0:
            return _Outcome(True, 0, {}, level, None, {}, None, f"{request.name}: no pods to place", shape)
        if request.policy == BASIC or (level == CLUSTER and slice_size == 1 and slice_level == HOST):
            return self._least_free(view, request, shape, restrict)
        if request.preferred and level != CLUSTER:
            return self._preferred(view, request, shape, level, slice_level, slice_size, restrict)
        return self._required(view, request, shape, level, slice_level, slice_size, restrict)

    def _preferred(self, view: _View, request: PlacementRequest, shape: _Shape, level: int, slice_level: int,
                   slice_size: int, restrict: np.ndarray | None) -> _Outcome:
        """Kueue preferred mode: the requested level, else the next coarser one that fits, else spread."""
        for candidate in range(level, CLUSTER - 1, -1):
            if slice_level != HOST and candidate > slice_level:
                continue
            # Explanations are only built for the requested level, and only when nothing fits.
            outcome = self._required(view, request, shape, candidate, slice_level, slice_size, restrict,
                                     explain=False)
            if outcome.fits:
                if candidate != level:
                    outcome.message += (f" (preferred {LEVEL_NAMES[level]} not possible: no {LEVEL_NAMES[level]} "
                                        f"holds all {request.pod_count:,} pods)")
                return outcome
        return self._required(view, request, shape, level, slice_level, slice_size, restrict)

    def _least_free(self, view: _View, request: PlacementRequest, shape: _Shape,
                    restrict: np.ndarray | None) -> _Outcome:
        """LeastFreeCapacity over nodes: fullest nodes first (fills holes); partial for basic groups."""
        slots = view.node_slots(shape, 0, restrict)
        need = request.pod_count
        order, cumulative = view.fullest_first(shape, slots, restrict)
        available = int(cumulative[-1]) if len(cumulative) else 0
        placed = min(need, available)
        pods: dict[int, int] = {}
        if self.assign and placed:
            stop = int(np.searchsorted(cumulative, placed)) + 1
            takes = slots[order[:stop]].copy()
            takes[-1] -= int(cumulative[stop - 1]) - placed
            pods = dict(zip(order[:stop].tolist(), takes.tolist(), strict=True))
        minimum = request.min_count if request.policy == GANG and request.min_count is not None else need
        fits = placed >= minimum
        if request.policy == GANG and not fits:
            pods = {}
        explanation = None
        if placed < need:
            explanation = self._explain(view, request, shape, CLUSTER, HOST, 1, None,
                                        view.counts(shape, 0, HOST, 1, restrict), restrict, have=placed)
        if fits and placed == need:
            message = f"{request.name}: {need:,} {unit_label(need, 1)} fit"
            if pods:
                message += f" on {len(pods):,} nodes"
        elif request.policy == BASIC:
            message = (f"{request.name}: basic group, {placed:,} of {need:,} pods can be placed now; the rest wait "
                       f"individually")
        else:
            message = explanation.message if explanation else f"{request.name}: does not fit"
        return _Outcome(fits or (request.policy == BASIC and placed == need), placed, pods, CLUSTER, None, {},
                        explanation, message, shape)

    def _required(self, view: _View, request: PlacementRequest, shape: _Shape, level: int, slice_level: int,
                  slice_size: int, restrict: np.ndarray | None, *, explain: bool = True) -> _Outcome:
        label_levels = max(level, slice_level if slice_level != HOST else -1) + 1
        counts = view.counts(shape, label_levels, slice_level, slice_size, restrict)
        need = request.pod_count // slice_size
        if level == CLUSTER:
            total = int(counts.units[ZONE].sum())
            if total >= need:
                picked, amounts = _best_fit(counts.units[ZONE], counts.pods[ZONE], view.ranks[ZONE], need)
                chosen = dict(zip(picked.tolist(), amounts.tolist(), strict=True))
                pods, assignments = _descend(view, counts, ZONE, chosen) if self.assign else ({}, {})
                return self._fit(request, shape, CLUSTER, None, pods, assignments, len(chosen))
            return self._no_fit(view, request, shape, CLUSTER, None, total, counts, restrict, explain)
        if level == HOST:
            caps = counts.node_units
        else:
            caps = counts.units[level]
        fitting = np.flatnonzero(caps >= need)
        if len(fitting):
            tie = counts.node_slots[fitting] if level == HOST else counts.pods[level][fitting]
            rank = view.snapshot.node_rank()[fitting] if level == HOST else view.ranks[level][fitting]
            best = int(fitting[np.lexsort((rank, tie, caps[fitting]))[0]])
            if level == HOST:
                pods = {best: need * slice_size}
                return self._fit(request, shape, HOST, best, pods, {HOST: {best: need}}, 1)
            pods, assignments = _descend(view, counts, level, {best: need}) if self.assign else ({}, {})
            return self._fit(request, shape, level, best, pods, assignments, 1)
        labelled = self._labelled_domains(view, level, label_levels, restrict)
        if not labelled.any():
            return self._no_fit(view, request, shape, level, None, 0, counts, restrict, explain)
        tie = counts.node_slots if level == HOST else counts.pods[level]
        rank = (np.arange(len(caps)) if level == HOST else view.ranks[level])
        # Domains made only of nodes without the label never count as "the best domain".
        best = int(np.lexsort((rank, tie, -np.where(labelled, caps, -1)))[0])
        return self._no_fit(view, request, shape, level, best, int(caps[best]), counts, restrict, explain)

    def _labelled_domains(self, view: _View, level: int, label_levels: int,
                          restrict: np.ndarray | None) -> np.ndarray:
        """Per domain of `level`: whether any present node of it carries the labels the request needs."""
        def compute() -> np.ndarray:
            ok = view.label_ok(label_levels) & ((self.snapshot.flags[: view.n] & PRESENT) != 0)
            if restrict is not None:
                ok = ok & restrict
            if level == HOST:
                return ok
            return np.bincount(self.snapshot.domain[level, : view.n], weights=ok.astype(np.float64),
                               minlength=view.n_domains[level]) > 0
        return view.cached(("labelled", level, label_levels), restrict, compute)

    def _fit(self, request: PlacementRequest, shape: _Shape, level: int, domain_id: int | None,
             pods: dict[int, int], assignments: dict, domains: int) -> _Outcome:
        placed = sum(pods.values()) if pods else request.pod_count
        where = domain_title(self.snapshot, level, domain_id) if domain_id is not None else \
            f"{domains} {'zone' if domains == 1 else 'zones'}"
        message = f"{request.name}: {placed:,} pods fit in {where}"
        if pods:
            message += f" on {len(pods):,} nodes"
        return _Outcome(True, placed, pods, level, domain_id, assignments, None, message, shape)

    def _no_fit(self, view: _View, request: PlacementRequest, shape: _Shape, level: int, best: int | None,
                have: int, counts: _Counts, restrict: np.ndarray | None, explain: bool = True) -> _Outcome:
        if not explain:
            return _Outcome(False, 0, {}, level, best, {}, None, f"{request.name}: does not fit", shape)
        explanation = self._explain(view, request, shape, level, counts.slice_level, counts.slice_size, best, counts,
                                    restrict, have=have)
        return _Outcome(False, 0, {}, level, best, {}, explanation, explanation.message, shape)

    # -- explanation ----------------------------------------------------------------------------------------------

    def _explain(self, view: _View, request: PlacementRequest, shape: _Shape, level: int, slice_level: int,
                 slice_size: int, best: int | None, counts: _Counts, restrict: np.ndarray | None, *,
                 have: int) -> Explanation:
        need = request.pod_count // slice_size if request.policy == GANG else request.pod_count
        unit = unit_label(need, slice_size)
        label_levels = max(level, slice_level if slice_level != HOST else -1) + 1
        excluded = view.cached(
            ("excluded", shape, label_levels), restrict,
            lambda: exclusion_counts(self.snapshot, view.tolerated(shape), view.label_ok(label_levels), view.free(),
                                     shape.request, self.keys.levels(), label_levels, restrict))
        total_nodes = self.snapshot.node_count
        if level == CLUSTER:
            head = f"{request.name}: the cluster fits only {have:,} of {need:,} {unit}"
            best_title = "the cluster"
        elif best is None:
            head = (f"{request.name}: no node carries the {LEVEL_NAMES[level]} label {self.keys.levels()[level]!r}"
                    if total_nodes else f"{request.name}: the cluster has no nodes")
            best_title = None
        else:
            best_title = domain_title(self.snapshot, level, best)
            head = (f"{request.name}: no {LEVEL_NAMES[level]} can hold all {need:,} {unit}; the best, "
                    f"{best_title}, fits {have:,} of {need:,}")
        alternatives = self._alternatives(view, request, shape, level, slice_level, slice_size, best, counts,
                                          have, need, restrict)
        message = f"{head}. Total nodes: {total_nodes:,}"
        if excluded:
            message += f"; excluded: {format_counts(excluded)}"
        if alternatives:
            message += f". {alternatives[0][0].upper()}{alternatives[0][1:]}"
        return Explanation(level_name(level), best_title, have, need, unit, total_nodes, dict(excluded),
                           alternatives, message)

    def _alternatives(self, view: _View, request: PlacementRequest, shape: _Shape, level: int, slice_level: int,
                      slice_size: int, best: int | None, counts: _Counts, have: int, need: int,
                      restrict: np.ndarray | None) -> list[str]:
        """Return advice, most useful first: a coarser level that fits, capacity to add, nodes to repair."""
        advice: list[str] = []
        if best is None and level != CLUSTER and self.snapshot.node_count:
            advice.append(f"no node carries the label {self.keys.levels()[level]!r}: label the nodes or choose "
                          f"another level")
        if level != CLUSTER:
            for coarser in range(level - 1, CLUSTER - 1, -1):
                relaxed_labels = max(coarser, slice_level if slice_level != HOST else -1) + 1
                relaxed = view.counts(shape, relaxed_labels, slice_level, slice_size, restrict)
                if coarser == CLUSTER:
                    capacity = int(relaxed.units[ZONE].sum())
                else:
                    capacity = int(relaxed.units[coarser].max(initial=0))
                if capacity >= need:
                    target = "dropped" if coarser == CLUSTER else f"relaxed to {LEVEL_NAMES[coarser]}"
                    advice.append(f"fits if the {LEVEL_NAMES[level]} constraint is {target}")
                    break
        if slice_size > 1 and level not in (CLUSTER, HOST) and \
                int(counts.pods[level].max(initial=0)) >= request.pod_count:
                advice.append(f"{request.pod_count:,} pods would fit in one {LEVEL_NAMES[level]}, but not as whole "
                              f"slices of {slice_size} pods per {LEVEL_NAMES[slice_level]}")
        label_levels = max(level, slice_level if slice_level != HOST else -1) + 1
        if level != CLUSTER and best is not None:
            biggest = view.cached(("empty_max", shape, label_levels, level, slice_level, slice_size), None,
                                  lambda: self._empty_capacity(view, shape, label_levels, level, slice_level,
                                                               slice_size))
            if biggest < need:
                advice.append(f"even an empty {LEVEL_NAMES[level]} holds at most {biggest:,} of {need:,} "
                              f"{unit_label(need, slice_size)}: split the group or choose a coarser level")
        if best is None and level != CLUSTER:
            return advice
        missing_pods = max(need - have, 0) * slice_size
        if not missing_pods:
            return advice
        pods_per_node, gpus = view.cached(("node_shape", shape), None, lambda: self._usual_node(view, shape))
        more = nodes_needed(missing_pods, pods_per_node)
        where = "the cluster" if level == CLUSTER else domain_title(self.snapshot, level, best)
        if more:
            kind = f"{gpus}-GPU node" if gpus else "node"
            advice.append(f"needs {more:,} more free {kind}{'s' if more > 1 else ''} in {where}")
        blocked = view.cached(("blocked", shape, level), restrict,
                              lambda: self._blocked_capacity(view, shape, level, restrict), ignore_overlay=True)
        if int(blocked[0 if level == CLUSTER else best]) >= missing_pods:
            advice.append(f"would fit if the not-ready, cordoned or tainted nodes of {where} were schedulable")
        return advice

    def _empty_capacity(self, view: _View, shape: _Shape, label_levels: int, level: int, slice_level: int,
                        slice_size: int) -> int:
        empty = view.empty_slots(shape)
        if label_levels:
            empty = empty * view.label_ok(label_levels)
        if level == HOST:
            return int(empty.max(initial=0)) // slice_size
        counts = _aggregate(view, empty, slice_level, slice_size)
        return int(counts.units[level].max(initial=0))

    def _usual_node(self, view: _View, shape: _Shape) -> tuple[int, int]:
        """The most common (pods per empty node, GPUs per node) among nodes that can hold a pod of `shape`."""
        empty = view.empty_slots(shape)
        usable = empty > 0
        if not usable.any():
            return 0, 0
        # Slot and GPU counts are small integers: bincount finds the mode without sorting 50k values.
        pods = int(np.argmax(np.bincount(np.minimum(empty[usable], 4096))))
        gpus = int(np.argmax(np.bincount(np.clip(self.snapshot.alloc_gpu[: view.n][usable], 0, 4096))))
        return pods, gpus

    def _blocked_capacity(self, view: _View, shape: _Shape, level: int, restrict: np.ndarray | None) -> np.ndarray:
        """Per domain of `level`: pod slots on nodes excluded only for being not ready, cordoned or tainted
        (on the snapshot, not counting groups placed earlier in this call: it is advice, not a verdict)."""
        raw = view.raw_slots(shape)
        flags = self.snapshot.flags[: view.n]
        blocked = ((flags & PRESENT) != 0) & ~(view.schedulable & view.tolerated(shape))
        if restrict is not None:
            blocked &= restrict
        weights = (raw * blocked).astype(np.float64)
        if level == CLUSTER:
            return np.array([weights.sum()], np.int64)
        if level == HOST:
            return weights.astype(np.int64)
        return np.bincount(self.snapshot.domain[level, : view.n], weights=weights,
                           minlength=view.n_domains[level]).astype(np.int64)


# -- from an Expansion to requests -------------------------------------------------------------------------------


def _requests_for_pod_sets(name: str, pod_sets: list[PodSet], counts: list[int], group: PodGroupPlan | None,
                           policy: str, tolerations: tuple[Mapping, ...]) -> PlacementRequest:
    """One request for a group of pod sets: identical shapes merge; the biggest shape is the main request."""
    merged: dict[tuple, int] = {}
    resources_of: dict[tuple, dict] = {}
    for pod_set, count in zip(pod_sets, counts, strict=True):
        key = tuple(sorted(pod_set.resources_per_pod.items()))
        merged[key] = merged.get(key, 0) + count
        resources_of[key] = dict(pod_set.resources_per_pod)

    def weight(key: tuple) -> tuple:
        gpu = dict(key).get(GPU, "0")
        return (parse_resource(GPU, gpu) * merged[key], merged[key])

    ordered = sorted(merged, key=weight, reverse=True)
    common = {
        "policy": policy,
        "topology_key": group.topology_key if group else None,
        "tolerations": tolerations,
        "level": group.level if group else 0,
        "parent": group.parent if group else None,
        "replicated_jobs": tuple(p.replicated_job for p in pod_sets),
    }
    extra = tuple(PlacementRequest(name=f"{name} ({i + 1})", pod_count=merged[key], resources=resources_of[key],
                                   **common) for i, key in enumerate(ordered[1:]))
    total = sum(merged.values())
    main = ordered[0]
    min_count = group.min_count if group is not None and policy == GANG else None
    return PlacementRequest(name=name, pod_count=merged[main] if extra else total, resources=resources_of[main],
                            min_count=None if extra else min_count, extra=extra, **common)


def requests_from_expansion(expansion: Expansion, tolerations: tuple[Mapping, ...] = ()) -> list[PlacementRequest]:
    """Return the placement requests of a flat (non-composite) expansion, in creation order.

    ReplicatedJobs in no PodGroup become `basic` requests named "<rjob> (no PodGroup)".
    """
    requests = []
    covered: set[str] = set()
    for group in expansion.leaf_groups:
        pod_sets = [expansion.pod_set(name) for name in group.replicated_jobs]
        counts = [p.pods_per_replica if group.job_index is not None else p.count for p in pod_sets]
        requests.append(_requests_for_pod_sets(group.name, pod_sets, counts, group, group.policy, tolerations))
        covered.update(group.replicated_jobs)
    for pod_set in expansion.pod_sets:
        if pod_set.replicated_job not in covered and pod_set.count:
            requests.append(_requests_for_pod_sets(f"{pod_set.replicated_job} (no PodGroup)", [pod_set],
                                                   [pod_set.count], None, BASIC, tolerations))
    return requests


# -- the public entry point --------------------------------------------------------------------------------------


def place(expansion_or_requests: Expansion | Sequence[PlacementRequest], snapshot: ClusterSnapshot, *,
          keys: TopologyKeys | None = None, tolerations: tuple[Mapping, ...] = (),
          with_fragmentation: bool = True, details: bool = True) -> PlacementResult:
    """Place every group of a TrainJob on `snapshot` and explain what does not fit.

    Groups are placed in order; each one sees the capacity the earlier ones took (on an overlay: `snapshot` is never
    modified). A composite expansion places its children inside one domain of the root's level. Raises
    PlacementInputError for malformed quantities, unknown topology keys or keys that differ from the snapshot's.

    `details=False` (queue explanations) answers fit / domain / explanation only: the last group is not spread
    over nodes (no `pods_per_node`, `racks`, `span`) and no fragmentation is computed.
    """
    _check_keys(snapshot, keys)
    placer = _Placer(snapshot, snapshot.keys)
    before_view = _View(snapshot)
    groups, view, main_shape = _place_job(placer, before_view.fork(), expansion_or_requests, tolerations, details)
    fits = all(group.fits for group in groups if group.policy == GANG)
    before = after = None
    if with_fragmentation and details and main_shape is not None:
        before, after = _fragmentations(before_view, view, main_shape)
    return PlacementResult(groups, fits, before, after, snapshot.version, snapshot.node_count)


def explain_queue(jobs: Iterable[Expansion | Sequence[PlacementRequest]], snapshot: ClusterSnapshot, *,
                  sequential: bool = False, tolerations: tuple[Mapping, ...] = ()) -> list[PlacementResult]:
    """Return one verdict per queued job, in order ("why is it not admitted").

    Independent (default): every job against the current snapshot, fit/domain/explanation only. Sequential: an
    admission simulation in queue order where every job that fits takes its capacity before the next is judged.
    The snapshot is never modified. Raises PlacementInputError like `place`.
    """
    work = snapshot.copy() if sequential else snapshot
    placer = _Placer(work, work.keys)
    results = []
    for job in jobs:
        groups, after, _ = _place_job(placer, _View(work), job, tolerations, details=sequential)
        fits = all(group.fits for group in groups if group.policy == GANG)
        results.append(PlacementResult(groups, fits, None, None, snapshot.version, snapshot.node_count))
        if sequential and fits and after.chunks:
            _admit(work, *after.merged())
    return results


_TOPOLOGY_ONLY = ("labelled", "empty_max", "node_shape")  # view.cached entries that ignore capacity


def _admit(snapshot: ClusterSnapshot, rows: np.ndarray, taken: np.ndarray) -> None:
    """Charge an admitted job (`taken[4, rows]`, unique rows) to a private working snapshot and carry its per-shape
    caches over to the new version by patching only the touched rows and the domain sums (O(rows + domains)
    instead of O(nodes)); entries that cannot be patched (exclusions, LeastFreeCapacity order) are dropped."""
    old = snapshot.version
    entries = {key: value for key, value in snapshot.shape_cache.items() if key and key[-1] == old}
    for key in entries:
        snapshot.shape_cache_bytes -= _nbytes(snapshot.shape_cache.pop(key))
    snapshot.used_gpu[rows] += taken[0].astype(snapshot.used_gpu.dtype)
    snapshot.used_cpu[rows] += taken[1]
    snapshot.used_mem[rows] += taken[2]
    snapshot.used_pods[rows] += taken[3].astype(snapshot.used_pods.dtype)
    snapshot.version = new = next_stamp()
    view = _View(snapshot)
    for key, value in entries.items():
        if key[0] in _TOPOLOGY_ONLY:
            _remember(snapshot, (*key[:-1], new), value)
    free = entries.get(("free", old))
    if free is None:
        return
    columns = ((snapshot.alloc_gpu, snapshot.used_gpu), (snapshot.alloc_cpu, snapshot.used_cpu),
               (snapshot.alloc_mem, snapshot.used_mem), (snapshot.alloc_pods, snapshot.used_pods))
    for index, (alloc, used) in enumerate(columns):
        free[index][rows] = np.maximum(alloc[rows].astype(np.int64) - used[rows], 0)
    _remember(snapshot, ("free", new), free)
    free_rows = [column[rows] for column in free]
    old_base = {key[1]: value[rows].copy() for key, value in entries.items() if key[0] == "slots"}
    for key, value in entries.items():
        if key[0] == "raw":
            value[rows] = _slots(free_rows, key[1])
            _remember(snapshot, (*key[:-1], new), value)
    for key, value in entries.items():
        if key[0] == "slots":
            raw = _lookup(snapshot, ("raw", key[1], new))
            if raw is not None:
                value[rows] = raw[rows] * (view.schedulable[rows] & view.tolerated(key[1])[rows])
                _remember(snapshot, (*key[:-1], new), value)
    for key, value in entries.items():
        if key[0] == "counts":
            base = _lookup(snapshot, ("slots", key[1], new))
            if base is not None and key[1] in old_base:
                _patch_counts(view, value, base, old_base[key[1]], key[2], rows)
                _remember(snapshot, (*key[:-1], new), value)


def _patch_counts(view: _View, counts: _Counts, base: np.ndarray, old_base_rows: np.ndarray, label_levels: int,
                  rows: np.ndarray) -> None:
    """Update a cached phase-1 result whose base slots changed on `rows` (base already holds the new values)."""
    if counts.node_slots is base:
        old_slots, new_slots = old_base_rows, base[rows]
    else:
        old_slots = counts.node_slots[rows].copy()
        new_slots = base[rows] * view.label_ok(label_levels)[rows] if label_levels else base[rows]
        counts.node_slots[rows] = new_slots
    racks = view.snapshot.domain[RACK, rows]
    np.add.at(counts.pods[RACK], racks, (new_slots - old_slots).astype(np.int64))
    for level in (BLOCK, ZONE):
        counts.pods[level][:] = np.bincount(view.parents[level + 1], weights=counts.pods[level + 1].astype(
            np.float64), minlength=view.n_domains[level]).astype(np.int64)
    s, slice_level = counts.slice_size, counts.slice_level
    if s == 1:
        return  # units are the pods arrays themselves
    if slice_level == HOST:
        old_units = counts.node_units[rows].copy()
        counts.node_units[rows] = new_slots // s
        np.add.at(counts.units[RACK], racks, counts.node_units[rows] - old_units)
        top = RACK
    else:
        counts.units[slice_level][:] = counts.pods[slice_level] // s
        top = slice_level
    for level in range(top - 1, -1, -1):
        counts.units[level][:] = np.bincount(view.parents[level + 1], weights=counts.units[level + 1].astype(
            np.float64), minlength=view.n_domains[level]).astype(np.int64)


def _check_keys(snapshot: ClusterSnapshot, keys: TopologyKeys | None) -> None:
    if keys is not None and keys != snapshot.keys:
        raise PlacementInputError(f"the snapshot was built with topology keys {snapshot.keys.to_dict()}, not "
                                  f"{keys.to_dict()}")


def _place_job(placer: _Placer, view: _View, job: Expansion | Sequence[PlacementRequest],
               tolerations: tuple[Mapping, ...], details: bool) -> tuple[list[GroupPlacement], _View, _Shape | None]:
    """Place one TrainJob's groups on `view` (modified); return the group results, the view after them (a new one
    for composite jobs) and the job's main shape."""
    if isinstance(job, Expansion) and job.composite:
        placer.assign = True
        groups, view = _place_composite(placer, view, job, tolerations)
        return groups, view, _main_shape(requests_from_expansion(job, tolerations))
    requests = requests_from_expansion(job, tolerations) if isinstance(job, Expansion) else list(job)
    groups = []
    for index, request in enumerate(requests):
        last = index == len(requests) - 1
        placer.assign = details or not last or bool(request.extra)
        outcome, extras = _place_with_extras(placer, view, request, None)
        groups.append(_group_result(placer.snapshot, request, outcome, extras))
        if last and not details:
            break
        if outcome.fits or request.policy == BASIC:
            view.take(outcome.shape, outcome.pods_per_row)
            for _, extra_outcome in extras:
                view.take(extra_outcome.shape, extra_outcome.pods_per_row)
    placer.assign = True
    return groups, view, _main_shape(requests)


def _main_shape(requests: Sequence[PlacementRequest]) -> _Shape | None:
    best = None
    for request in requests:
        shape = _shape_of(request)
        weight = (request.policy == GANG, shape.gpu * request.pod_count, request.pod_count)
        if best is None or weight > best[0]:
            best = (weight, shape)
    return best[1] if best else None


def _fragmentations(before: _View, after: _View, shape: _Shape) -> tuple[Fragmentation, Fragmentation]:
    """Fragmentation before (cached per shape and version) and after this call's placements (by delta)."""
    snapshot = before.snapshot

    def base() -> FragmentationState:
        free = before.snapshot_free()
        used_gpu = snapshot.alloc_gpu[: before.n].astype(np.int64) - free[0]
        return fragmentation_state(snapshot, before.base_slots(shape), free[0], used_gpu, before.schedulable,
                                   shape.gpu)

    state = before.cached(("fragmentation", shape), None, base)
    if not after.chunks:
        summary = state.summary(snapshot)
        return summary, summary
    rows, taken = after.merged()
    after_slots = after.slots(shape)
    updated = fragmentation_after(state, snapshot, rows, before.base_slots(shape)[rows], after_slots[rows],
                                  before.snapshot_free()[0][rows], taken[0], before.schedulable[rows],
                                  int(after_slots.max(initial=0)))
    return state.summary(snapshot), updated.summary(snapshot)


def _place_with_extras(placer: _Placer, view: _View, request: PlacementRequest,
                       restrict: np.ndarray | None) -> tuple[_Outcome, list[tuple[PlacementRequest, _Outcome]]]:
    """Place the main pods, then the extra pod kinds in the same domain (trying the next domains if needed)."""
    outcome = placer.place(view, request, restrict)
    if not request.extra or not outcome.fits:
        return outcome, [(extra, _skipped(extra)) for extra in request.extra]
    level = outcome.level
    tried = 0
    while True:
        trial = view.fork()
        trial.take(outcome.shape, outcome.pods_per_row)
        extras = []
        ok = True
        domain_mask = None
        if level not in (CLUSTER, HOST) and outcome.domain_id is not None:
            domain_mask = view.snapshot.domain[level, : view.n] == outcome.domain_id
            if restrict is not None:
                domain_mask &= restrict
        for extra in request.extra:
            unconstrained = PlacementRequest(**{**extra.__dict__, "topology_key": None, "extra": ()})
            extra_outcome = placer.place(trial, unconstrained, domain_mask if domain_mask is not None else restrict)
            extras.append((extra, extra_outcome))
            if not extra_outcome.fits:
                ok = False
                break
            trial.take(extra_outcome.shape, extra_outcome.pods_per_row)
        if ok:
            return outcome, extras
        tried += 1
        if domain_mask is None or tried >= 8:
            failed = extras[-1][1]
            message = f"{request.name}: the main pods fit in {domain_title(view.snapshot, level, outcome.domain_id)} " \
                      f"but its other pods do not: {failed.message}" if outcome.domain_id is not None else \
                      failed.message
            return _Outcome(False, 0, {}, level, outcome.domain_id, {}, failed.explanation, message,
                            outcome.shape), [(extra, _skipped(extra)) for extra in request.extra]
        # Exclude the domain that could not take the extra pods and try the next best one.
        excluded = ~(view.snapshot.domain[level, : view.n] == outcome.domain_id)
        restrict = excluded if restrict is None else (restrict & excluded)
        outcome = placer.place(view, request, restrict)
        if not outcome.fits:
            return outcome, [(extra, _skipped(extra)) for extra in request.extra]


def _skipped(request: PlacementRequest) -> _Outcome:
    return _Outcome(False, 0, {}, CLUSTER, None, {}, None, f"{request.name}: not placed", _shape_of(request))


def _span(snapshot: ClusterSnapshot, rows: Iterable[int]) -> dict[str, int]:
    rows = np.fromiter(rows, np.int64)
    if not len(rows):
        return {"zones": 0, "blocks": 0, "racks": 0, "nodes": 0}
    return {
        "zones": len(set(snapshot.domain[ZONE, rows].tolist())),
        "blocks": len(set(snapshot.domain[BLOCK, rows].tolist())),
        "racks": len(set(snapshot.domain[RACK, rows].tolist())),
        "nodes": len(rows),
    }


def _rack_list(snapshot: ClusterSnapshot, pods_per_row: Mapping[int, int]) -> list[dict]:
    """Pods per rack, ordered by label path: what the heat map highlights."""
    if not pods_per_row:
        return []
    rows = np.fromiter(pods_per_row, np.int64, len(pods_per_row))
    pods = np.fromiter(pods_per_row.values(), np.int64, len(pods_per_row))
    racks = snapshot.domain[RACK, rows]
    unique, inverse = np.unique(racks, return_inverse=True)
    totals = np.bincount(inverse, weights=pods).astype(np.int64).tolist()
    paths = snapshot.rack_paths()
    entries = sorted(zip((paths[r] for r in unique.tolist()), totals, strict=True))
    return [{"zone": zone, "block": block, "rack": rack, "pods": count} for (zone, block, rack), count in entries]


def _pods_per_node(snapshot: ClusterSnapshot, pods_per_row: Mapping[int, int]) -> dict[str, int]:
    """{node name: pods}, ordered by node name."""
    if not pods_per_row:
        return {}
    rows = np.fromiter(pods_per_row, np.int64, len(pods_per_row))
    order = np.argsort(snapshot.node_rank()[rows], kind="stable")
    rows = rows[order]
    names = snapshot.name_array()[rows].tolist()
    return dict(zip(names, (pods_per_row[row] for row in rows.tolist()), strict=True))


def _domain_dict(snapshot: ClusterSnapshot, level: int, domain_id: int | None) -> dict | None:
    if domain_id is None or level == CLUSTER:
        return None
    key = snapshot.keys.levels()[level]
    if level == HOST:
        return {"level": "host", "key": key, "value": snapshot.names[domain_id], "path": [snapshot.names[domain_id]]}
    path = snapshot.domain_path(level, domain_id)
    return {"level": LEVEL_NAMES[level], "key": key, "value": path[-1], "path": list(path)}


def _group_result(snapshot: ClusterSnapshot, request: PlacementRequest, outcome: _Outcome,
                  extras: list[tuple[PlacementRequest, _Outcome]] = ()) -> GroupPlacement:
    pods_per_row = dict(outcome.pods_per_row)
    for _, extra in extras:
        for row, pods in extra.pods_per_row.items():
            pods_per_row[row] = pods_per_row.get(row, 0) + pods
    total = request.pod_count + sum(extra.pod_count for extra in request.extra)
    placed = sum(pods_per_row.values()) if pods_per_row or not outcome.fits else outcome.placed
    return GroupPlacement(
        name=request.name,
        kind=request.kind,
        policy=request.policy,
        level=request.level,
        topology_key=request.topology_key,
        pod_count=total,
        min_count=request.min_count if not request.extra else (total if request.policy == GANG else None),
        fits=outcome.fits,
        placed=placed,
        domain=_domain_dict(snapshot, outcome.level, outcome.domain_id),
        pods_per_node=_pods_per_node(snapshot, pods_per_row),
        span=_span(snapshot, pods_per_row),
        message=outcome.message,
        explanation=outcome.explanation,
        parent=request.parent,
        racks=_rack_list(snapshot, pods_per_row),
    )


# -- composite ----------------------------------------------------------------------------------------------------


def composite_requests(expansion: Expansion, tolerations: tuple[Mapping, ...] = ()) -> tuple[
        PodGroupPlan, list[tuple[PodGroupPlan, PlacementRequest, list[PodGroupPlan]]]]:
    """Return the root CompositePodGroup and, per child, (plan, request, leaf plans): a child CompositePodGroup of
    level-3 Jobs becomes one sliced request (slice = one Job, at the leaves' topology level)."""
    root = next(g for g in expansion.pod_groups if g.parent is None)
    children = []
    for child in (g for g in expansion.pod_groups if g.parent == root.name):
        pod_sets = [expansion.pod_set(name) for name in child.replicated_jobs]
        if child.kind == COMPOSITE_POD_GROUP:
            leaves = [g for g in expansion.pod_groups if g.parent == child.name]
            sizes = {leaf.pod_count for leaf in leaves}
            request = _requests_for_pod_sets(child.name, pod_sets, [p.count for p in pod_sets], child, GANG,
                                             tolerations)
            slice_size = sizes.pop() if len(sizes) == 1 else None
            slice_key = leaves[0].topology_key if leaves else None
            sliced = bool(slice_size and slice_size > 1 and slice_key)  # Jobs without a key may spread anywhere
            request = PlacementRequest(**{
                **request.__dict__, "kind": COMPOSITE_POD_GROUP, "min_count": None,
                "slice_size": slice_size if sliced else None,
                "slice_topology_key": slice_key if sliced else None,
                "slice_names": tuple(leaf.name for leaf in leaves),
                "policy": leaves[0].policy if leaves else GANG})
            children.append((child, request, leaves))
        else:
            request = _requests_for_pod_sets(child.name, pod_sets, [p.count for p in pod_sets], child, child.policy,
                                             tolerations)
            children.append((child, request, []))
    return root, children


def _place_composite(placer: _Placer, view: _View, expansion: Expansion,
                     tolerations: tuple[Mapping, ...]) -> tuple[list[GroupPlacement], _View]:
    root, children = composite_requests(expansion, tolerations)
    snapshot = view.snapshot
    root_level = placer.level_of(root.topology_key, f"{root.name}.topology_key")
    candidates: list[int | None] = [None]
    if root_level not in (CLUSTER, HOST):
        # Order the root's domains by BestFit on the biggest child's slots: smallest domain that holds it first.
        main = max(children, key=lambda c: c[1].pod_count)[1]
        slots = view.slots(_shape_of(main)) * view.label_ok(root_level + 1)
        counts = _aggregate(view, slots, HOST, 1)
        caps = counts.pods[root_level]
        fitting = caps >= main.pod_count
        order = np.lexsort((view.ranks[root_level], caps, ~fitting))
        candidates = [int(d) for d in order if caps[d] > 0] or [int(order[0])] if len(order) else [None]
    best_attempt = None
    for domain_id in candidates:
        trial = view.fork()
        restrict = None
        if domain_id is not None:
            restrict = snapshot.domain[root_level, : view.n] == domain_id
        results = []
        for plan, request, leaves in children:
            outcome, extras = _place_with_extras(placer, trial, request, restrict)
            results.append((plan, request, leaves, outcome, extras))
            if outcome.fits or request.policy == BASIC:
                trial.take(outcome.shape, outcome.pods_per_row)
                for _, extra in extras:
                    trial.take(extra.shape, extra.pods_per_row)
        fitted = sum(1 for r in results if r[3].fits or r[1].policy == BASIC)
        placed = sum(r[3].placed for r in results)
        attempt = (fitted == len(results), fitted, placed, domain_id, results, trial)
        if best_attempt is None or attempt[:3] > best_attempt[:3]:
            best_attempt = attempt
        if attempt[0]:
            break
    all_fit, fitted, _, domain_id, results, trial = best_attempt
    groups = []
    pods_all: dict[int, int] = {}
    for _, _, _, outcome, extras in results:
        for source in [outcome, *(extra for _, extra in extras)]:
            for row, pods in source.pods_per_row.items():
                pods_all[row] = pods_all.get(row, 0) + pods
    where = domain_title(snapshot, root_level, domain_id) if domain_id is not None else "the cluster"
    if all_fit:
        message = f"{root.name}: all {len(results)} groups fit in {where}"
    else:
        level = level_name(root_level)
        message = (f"{root.name}: no {level} holds all {len(results)} groups together; the best, {where}, fits "
                   f"{fitted} of {len(results)}")
    groups.append(GroupPlacement(
        name=root.name, kind=COMPOSITE_POD_GROUP, policy=root.policy, level=root.level,
        topology_key=root.topology_key, pod_count=root.pod_count, min_count=root.min_group_count, fits=all_fit,
        placed=sum(pods_all.values()) if all_fit else 0, domain=_domain_dict(snapshot, root_level, domain_id),
        pods_per_node={}, span=_span(snapshot, pods_all), message=message, explanation=None, parent=None,
        racks=_rack_list(snapshot, pods_all)))
    for _, request, leaves, outcome, extras in results:
        groups.append(_group_result(snapshot, request, outcome, extras))
        if leaves:
            groups.extend(_leaf_results(snapshot, request, leaves, outcome))
    return groups, trial


def _leaf_results(snapshot: ClusterSnapshot, request: PlacementRequest, leaves: list[PodGroupPlan],
                  outcome: _Outcome) -> list[GroupPlacement]:
    """Split a sliced outcome into its level-3 PodGroups: consecutive slices, each inside one slice domain."""
    size = request.slice_size or (leaves[0].pod_count if leaves else 1) or 1
    slice_level = snapshot.keys.level_of(request.slice_topology_key) if request.slice_topology_key else HOST
    rows_by_domain: dict[int, list[int]] = {}
    for row in sorted(outcome.pods_per_row, key=lambda r: snapshot.names[r]):
        if request.slice_topology_key is None:
            domain = 0  # no slice constraint: consecutive pods in name order form each Job
        else:
            domain = row if slice_level == HOST else int(snapshot.domain[slice_level, row])
        rows_by_domain.setdefault(domain, []).append(row)
    chunks: list[dict[int, int]] = []

    def domain_order(domain: int) -> tuple:
        if request.slice_topology_key is None:
            return ()
        return (snapshot.names[domain],) if slice_level == HOST else snapshot.domain_path(slice_level, domain)

    for domain in sorted(rows_by_domain, key=domain_order):
        current: dict[int, int] = {}
        filled = 0
        for row in rows_by_domain[domain]:
            pods = outcome.pods_per_row[row]
            while pods:
                take = min(pods, size - filled)
                current[row] = current.get(row, 0) + take
                filled += take
                pods -= take
                if filled == size:
                    chunks.append(current)
                    current, filled = {}, 0
    results = []
    for index, leaf in enumerate(leaves):
        chunk = chunks[index] if outcome.fits and index < len(chunks) else {}
        domain = None
        if chunk and request.slice_topology_key is not None:
            first = next(iter(chunk))
            domain = _domain_dict(snapshot, slice_level, first if slice_level == HOST else
                                  int(snapshot.domain[slice_level, first]))
        names = snapshot.names
        results.append(GroupPlacement(
            name=leaf.name, kind=leaf.kind, policy=leaf.policy, level=leaf.level, topology_key=leaf.topology_key,
            pod_count=leaf.pod_count, min_count=leaf.min_count, fits=bool(chunk), placed=sum(chunk.values()),
            domain=domain, pods_per_node={names[r]: p for r, p in sorted(chunk.items(), key=lambda i: names[i[0]])},
            span=_span(snapshot, chunk),
            message=(f"{leaf.name}: {leaf.pod_count:,} pods in "
                     f"{domain['level'] + ' ' + domain['value'] if domain else 'its slice'}") if chunk else
            f"{leaf.name}: not placed ({outcome.message})",
            explanation=None if chunk else outcome.explanation, parent=leaf.parent,
            racks=_rack_list(snapshot, chunk)))
    return results
