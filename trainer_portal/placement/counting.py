"""Phase 1 of placement: per-node pod slots for a shape (vectorised with numpy) summed per rack, block and zone.

`View` is the snapshot plus the capacity taken by groups placed earlier in the same call; per-shape arrays are
cached on the snapshot keyed by its version stamp (`_lookup` / `_remember`, bounded by `_SHAPE_CACHE_BYTES`), and
`admit` / `_patch_counts` carry those caches over when a sequential queue simulation admits a job."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainer_portal.placement.requests import Shape
from trainer_portal.placement.snapshot import (
    BLOCK,
    CORDONED,
    DOMAIN_LEVELS,
    HOST,
    PRESENT,
    RACK,
    READY,
    ZONE,
    ClusterSnapshot,
    next_stamp,
    tolerates,
)

_SHAPE_CACHE_BYTES = 96 * 2**20  # per snapshot; ~100 shapes × levels at 50k nodes


# -- the view: snapshot + capacity taken by groups placed earlier in this call ------------------------------------


class View:
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

    def fork(self) -> View:
        other = View.__new__(View)
        other.__dict__.update(self.__dict__)
        other.chunks = list(self.chunks)
        return other

    def take(self, shape: Shape, pods_per_row: Mapping[int, int]) -> None:
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

    def tolerated(self, shape: Shape) -> np.ndarray:
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

    def raw_slots(self, shape: Shape) -> np.ndarray:
        """Per-node pod slots of `shape` by free resources alone (cached per version), eligibility ignored."""
        key = ("raw", shape, self.snapshot.version)
        cached = _lookup(self.snapshot, key)
        if cached is None:
            cached = _slots(self.snapshot_free(), shape)
            _remember(self.snapshot, key, cached)
        return cached

    def base_slots(self, shape: Shape) -> np.ndarray:
        """Per-node pod slots of `shape` on the snapshot alone (cached per version), excluded nodes at 0."""
        key = ("slots", shape, self.snapshot.version)
        cached = _lookup(self.snapshot, key)
        if cached is None:
            cached = self.raw_slots(shape) * (self.schedulable & self.tolerated(shape))
            _remember(self.snapshot, key, cached)
        return cached

    def slots(self, shape: Shape) -> np.ndarray:
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

    def node_slots(self, shape: Shape, label_levels: int, restrict: np.ndarray | None) -> np.ndarray:
        """Per-node slots of `shape` on nodes carrying the first `label_levels` labels, inside `restrict`."""
        slots = self.slots(shape)
        if label_levels:
            slots = slots * self.label_ok(label_levels)
        if restrict is not None:
            slots = slots * restrict
        return slots

    def counts(self, shape: Shape, label_levels: int, slice_level: int, slice_size: int,
               restrict: np.ndarray | None) -> Counts:
        """Phase 1 for a request: node slots and per-domain pods/slices (cached per shape and version)."""
        label_levels = self.effective_label_levels(label_levels)
        key = ("counts", shape, label_levels, slice_level, slice_size, self.snapshot.version)
        if self._cacheable(restrict):
            cached = _lookup(self.snapshot, key)
            if cached is not None:
                return cached
        result = aggregate(self, self.node_slots(shape, label_levels, restrict), slice_level, slice_size)
        if self._cacheable(restrict):
            _remember(self.snapshot, key, result)
        return result

    def fullest_first(self, shape: Shape, slots: np.ndarray,
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

    def empty_slots(self, shape: Shape) -> np.ndarray:
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
    if isinstance(value, Counts):
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


def _slots(free: Sequence[np.ndarray], shape: Shape) -> np.ndarray:
    slots = np.maximum(free[3], 0)
    for amount, available in ((shape.gpu, free[0]), (shape.cpu, free[1]), (shape.mem, free[2])):
        if amount > 0:
            slots = np.minimum(slots, np.maximum(available, 0) // amount)
    return slots


# -- phase 1: aggregation ------------------------------------------------------------------------------------------


@dataclass
class Counts:
    node_slots: np.ndarray  # pods per node
    node_units: np.ndarray  # slices per node (== node_slots without a host-level slice)
    pods: list[np.ndarray]  # per domain level: pods
    units: list[np.ndarray | None]  # per domain level: slices, None below the slice level
    slice_level: int
    slice_size: int


def aggregate(view: View, node_slots: np.ndarray, slice_level: int, slice_size: int) -> Counts:
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
    return Counts(node_slots, node_units, pods, units, slice_level, slice_size)



_TOPOLOGY_ONLY = ("labelled", "empty_max", "node_shape")  # view.cached entries that ignore capacity


def admit(snapshot: ClusterSnapshot, rows: np.ndarray, taken: np.ndarray) -> None:
    """Charge an admitted job (`taken[4, rows]`, unique rows) to a private working snapshot and carry its per-shape
    caches over to the new version by patching only the touched rows and the domain sums (O(rows + domains)
    instead of O(nodes)); entries that cannot be patched (exclusions, LeastFreeCapacity order) are dropped."""
    old = snapshot.version
    entries = {key: value for key, value in snapshot.shape_cache.items() if key and key[-1] == old}
    for key in entries:
        snapshot.shape_cache.pop(key)
    # A carried entry is the same object patched in place (same bytes): it moves to the new version's key without
    # re-measuring it; only the entries dropped at the end leave the byte count (admissions are the hot path of
    # simulations, and measuring every entry twice per admission cost more than the patching).
    carried: set[tuple] = set()

    def carry(key: tuple, value: object) -> None:
        snapshot.shape_cache[(*key[:-1], new)] = value
        carried.add(key)

    snapshot.used_gpu[rows] += taken[0].astype(snapshot.used_gpu.dtype)
    snapshot.used_cpu[rows] += taken[1]
    snapshot.used_mem[rows] += taken[2]
    snapshot.used_pods[rows] += taken[3].astype(snapshot.used_pods.dtype)
    snapshot.version = new = next_stamp()
    view = View(snapshot)
    try:
        _carry_patched(snapshot, view, entries, old, rows, carry)
    finally:
        for key, value in entries.items():
            if key not in carried:
                snapshot.shape_cache_bytes -= _nbytes(value)


def _carry_patched(snapshot: ClusterSnapshot, view: View, entries: dict, old: int, rows: np.ndarray,
                   carry: Callable[[tuple, object], None]) -> None:
    """Patch the per-shape entries of version `old` for the changed `rows` and carry them to the new version."""
    new = snapshot.version
    for key, value in entries.items():
        if key[0] in _TOPOLOGY_ONLY:
            carry(key, value)
    free = entries.get(("free", old))
    if free is None:
        return
    columns = ((snapshot.alloc_gpu, snapshot.used_gpu), (snapshot.alloc_cpu, snapshot.used_cpu),
               (snapshot.alloc_mem, snapshot.used_mem), (snapshot.alloc_pods, snapshot.used_pods))
    for index, (alloc, used) in enumerate(columns):
        free[index][rows] = np.maximum(alloc[rows].astype(np.int64) - used[rows], 0)
    carry(("free", old), free)
    free_rows = [column[rows] for column in free]
    old_base = {key[1]: value[rows].copy() for key, value in entries.items() if key[0] == "slots"}
    for key, value in entries.items():
        if key[0] == "raw":
            value[rows] = _slots(free_rows, key[1])
            carry(key, value)
    for key, value in entries.items():
        if key[0] == "slots":
            raw = snapshot.shape_cache.get(("raw", key[1], new))
            if raw is not None:
                value[rows] = raw[rows] * (view.schedulable[rows] & view.tolerated(key[1])[rows])
                carry(key, value)
    for key, value in entries.items():
        if key[0] == "counts":
            base = snapshot.shape_cache.get(("slots", key[1], new))
            if base is not None and key[1] in old_base:
                _patch_counts(view, value, base, old_base[key[1]], key[2], rows)
                carry(key, value)


def _patch_counts(view: View, counts: Counts, base: np.ndarray, old_base_rows: np.ndarray, label_levels: int,
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

# -- phase 2: BestFit descent ----------------------------------------------------------------------------------------


def best_fit(caps: np.ndarray, tie: np.ndarray, rank: np.ndarray, need: int) -> tuple[np.ndarray, np.ndarray]:
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


def _children(view: View, level: int, parent_ids: Iterable[int]) -> np.ndarray:
    """Domain ids at `level` whose parent (at level-1) is in parent_ids; level 0 → all zones."""
    if level == ZONE:
        return np.arange(view.n_domains[ZONE])
    parents = np.fromiter(parent_ids, np.int64)
    if len(parents) == 1:
        return np.flatnonzero(view.parents[level] == parents[0])
    return np.flatnonzero(np.isin(view.parents[level], parents))


def _rack_rows(view: View, rack_ids: Iterable[int]) -> np.ndarray:
    order, starts = view.snapshot.rack_members()
    chunks = [order[starts[r]: starts[r + 1]] for r in rack_ids]
    return np.concatenate(chunks) if chunks else np.zeros(0, np.int32)


def descend(view: View, counts: Counts, level: int, chosen: dict[int, int]) -> tuple[dict[int, int], dict]:
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
            picked, amounts = best_fit(caps, tie, rank, amount)
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

