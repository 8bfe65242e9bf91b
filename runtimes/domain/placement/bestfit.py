"""Phase 2 of placement: BestFit choice among domains and the top-down descent that fills children largest first,
replacing the last one by the tightest child that covers what remains."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from runtimes.domain.placement.slots import _Counts, _View
from runtimes.domain.placement.snapshot import HOST, ZONE

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

