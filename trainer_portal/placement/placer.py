"""Placing one group: `Placer` resolves the group's topology level, picks the domain (required / preferred /
LeastFreeCapacity) and builds the why-not explanation when nothing fits; `Outcome` is its result."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainer_portal.placement.counting import Counts, View, aggregate, best_fit, descend
from trainer_portal.placement.explain import (
    CLUSTER,
    Explanation,
    domain_title,
    exclusion_counts,
    format_counts,
    level_name,
    unit_label,
)
from trainer_portal.placement.requests import BASIC, GANG, PlacementInputError, PlacementRequest, Shape, shape_of
from trainer_portal.placement.snapshot import HOST, LEVEL_NAMES, PRESENT, ZONE, ClusterSnapshot, TopologyKeys

# -- placing one group ---------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    fits: bool
    placed: int
    pods_per_row: dict[int, int]
    level: int
    domain_id: int | None
    assignments: dict
    explanation: Explanation | None
    message: str
    shape: Shape


class Placer:
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

    def place(self, view: View, request: PlacementRequest, restrict: np.ndarray | None = None) -> Outcome:
        shape = shape_of(request)
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
            return Outcome(True, 0, {}, level, None, {}, None, f"{request.name}: no pods to place", shape)
        if request.policy == BASIC or (level == CLUSTER and slice_size == 1 and slice_level == HOST):
            return self._least_free(view, request, shape, restrict)
        if request.preferred and level != CLUSTER:
            return self._preferred(view, request, shape, level, slice_level, slice_size, restrict)
        return self._required(view, request, shape, level, slice_level, slice_size, restrict)

    def _preferred(self, view: View, request: PlacementRequest, shape: Shape, level: int, slice_level: int,
                   slice_size: int, restrict: np.ndarray | None) -> Outcome:
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

    def _least_free(self, view: View, request: PlacementRequest, shape: Shape,
                    restrict: np.ndarray | None) -> Outcome:
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
            message = f"{request.name}: {need:,} {_pods_fit(need)}"
            if pods:
                message += f" on {_nodes(len(pods))}"
        elif request.policy == BASIC:
            message = (f"{request.name}: basic group, {placed:,} of {need:,} pods can be placed now; the rest wait "
                       f"individually")
        else:
            message = explanation.message if explanation else f"{request.name}: does not fit"
        return Outcome(fits or (request.policy == BASIC and placed == need), placed, pods, CLUSTER, None, {},
                        explanation, message, shape)

    def _required(self, view: View, request: PlacementRequest, shape: Shape, level: int, slice_level: int,
                  slice_size: int, restrict: np.ndarray | None, *, explain: bool = True) -> Outcome:
        label_levels = max(level, slice_level if slice_level != HOST else -1) + 1
        counts = view.counts(shape, label_levels, slice_level, slice_size, restrict)
        need = request.pod_count // slice_size
        if level == CLUSTER:
            total = int(counts.units[ZONE].sum())
            if total >= need:
                picked, amounts = best_fit(counts.units[ZONE], counts.pods[ZONE], view.ranks[ZONE], need)
                chosen = dict(zip(picked.tolist(), amounts.tolist(), strict=True))
                pods, assignments = descend(view, counts, ZONE, chosen) if self.assign else ({}, {})
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
            pods, assignments = descend(view, counts, level, {best: need}) if self.assign else ({}, {})
            return self._fit(request, shape, level, best, pods, assignments, 1)
        labelled = self._labelled_domains(view, level, label_levels, restrict)
        if not labelled.any():
            return self._no_fit(view, request, shape, level, None, 0, counts, restrict, explain)
        tie = counts.node_slots if level == HOST else counts.pods[level]
        rank = (np.arange(len(caps)) if level == HOST else view.ranks[level])
        # Domains made only of nodes without the label never count as "the best domain".
        best = int(np.lexsort((rank, tie, -np.where(labelled, caps, -1)))[0])
        return self._no_fit(view, request, shape, level, best, int(caps[best]), counts, restrict, explain)

    def _labelled_domains(self, view: View, level: int, label_levels: int,
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

    def _fit(self, request: PlacementRequest, shape: Shape, level: int, domain_id: int | None,
             pods: dict[int, int], assignments: dict, domains: int) -> Outcome:
        placed = sum(pods.values()) if pods else request.pod_count
        where = domain_title(self.snapshot, level, domain_id) if domain_id is not None else \
            f"{domains} {'zone' if domains == 1 else 'zones'}"
        message = f"{request.name}: {placed:,} {_pods_fit(placed)} in {where}"
        if pods:
            message += f" on {_nodes(len(pods))}"
        return Outcome(True, placed, pods, level, domain_id, assignments, None, message, shape)

    def _no_fit(self, view: View, request: PlacementRequest, shape: Shape, level: int, best: int | None,
                have: int, counts: Counts, restrict: np.ndarray | None, explain: bool = True) -> Outcome:
        if not explain:
            return Outcome(False, 0, {}, level, best, {}, None, f"{request.name}: does not fit", shape)
        explanation = self._explain(view, request, shape, level, counts.slice_level, counts.slice_size, best, counts,
                                    restrict, have=have)
        return Outcome(False, 0, {}, level, best, {}, explanation, explanation.message, shape)

    # -- explanation ----------------------------------------------------------------------------------------------

    def _explain(self, view: View, request: PlacementRequest, shape: Shape, level: int, slice_level: int,
                 slice_size: int, best: int | None, counts: Counts, restrict: np.ndarray | None, *,
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

    def _alternatives(self, view: View, request: PlacementRequest, shape: Shape, level: int, slice_level: int,
                      slice_size: int, best: int | None, counts: Counts, have: int, need: int,
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
        never = False
        if level != CLUSTER and best is not None:
            biggest = view.cached(("empty_max", shape, label_levels, level, slice_level, slice_size), None,
                                  lambda: self._empty_capacity(view, shape, label_levels, level, slice_level,
                                                               slice_size))
            if biggest < need:
                never = True
                advice.append(f"even an empty {LEVEL_NAMES[level]} holds at most {biggest:,} of {need:,} "
                              f"{unit_label(need, slice_size)}: split the group or choose a coarser level")
        if best is None and level != CLUSTER:
            return advice
        missing_pods = max(need - have, 0) * slice_size
        if not missing_pods:
            return advice
        _, gpus = view.cached(("node_shape", shape), None, lambda: self._usual_node(view, shape))
        # Freeing nodes cannot help a gang no empty domain holds ("even an empty zone …" says so): no "fits once
        # N more free" next to it. Otherwise N counts the best domain's own nodes, biggest gain first, so the
        # advice holds when applied to the snapshot.
        more = 0 if never else self._nodes_to_free(view, shape, label_levels, level, best, missing_pods, restrict)
        where = "the cluster" if level == CLUSTER else domain_title(self.snapshot, level, best)
        if more:
            kind = f"{gpus}-GPU node" if gpus else "node"
            advice.append(f"needs {more:,} more free {kind}{'s' if more > 1 else ''} in {where}")
        blocked = view.cached(("blocked", shape, level), restrict,
                              lambda: self._blocked_capacity(view, shape, level, restrict), ignore_overlay=True)
        if int(blocked[0 if level == CLUSTER else best]) >= missing_pods:
            advice.append(f"would fit if the not-ready, cordoned or tainted nodes of {where} were schedulable")
        return advice

    def _nodes_to_free(self, view: View, shape: Shape, label_levels: int, level: int, best: int | None,
                       missing_pods: int, restrict: np.ndarray | None) -> int:
        """Return how many nodes of the best domain (the cluster at CLUSTER level) must be emptied to add
        `missing_pods` slots — the nodes that gain most first; 0 when emptying all of them is not enough."""
        n = view.n
        usable = view.schedulable & view.tolerated(shape)
        if label_levels:
            usable = usable & view.label_ok(label_levels)
        if restrict is not None:
            usable = usable & restrict
        inside = usable.copy()
        if level == HOST:
            inside = np.zeros(n, dtype=bool)
            if best is not None:
                inside[best] = usable[best]
        elif level != CLUSTER and best is not None:
            inside &= self.snapshot.domain[level, :n] == best
        now = view.node_slots(shape, label_levels, restrict)
        gain = (view.empty_slots(shape) - now)[inside]
        gain = np.sort(gain[gain > 0])[::-1]
        total = np.cumsum(gain)
        if not len(total) or int(total[-1]) < missing_pods:
            return 0
        return int(np.searchsorted(total, missing_pods)) + 1

    def _empty_capacity(self, view: View, shape: Shape, label_levels: int, level: int, slice_level: int,
                        slice_size: int) -> int:
        empty = view.empty_slots(shape)
        if label_levels:
            empty = empty * view.label_ok(label_levels)
        if level == HOST:
            return int(empty.max(initial=0)) // slice_size
        counts = aggregate(view, empty, slice_level, slice_size)
        return int(counts.units[level].max(initial=0))

    def _usual_node(self, view: View, shape: Shape) -> tuple[int, int]:
        """The most common (pods per empty node, GPUs per node) among nodes that can hold a pod of `shape`."""
        empty = view.empty_slots(shape)
        usable = empty > 0
        if not usable.any():
            return 0, 0
        # Slot and GPU counts are small integers: bincount finds the mode without sorting 50k values.
        pods = int(np.argmax(np.bincount(np.minimum(empty[usable], 4096))))
        gpus = int(np.argmax(np.bincount(np.clip(self.snapshot.alloc_gpu[: view.n][usable], 0, 4096))))
        return pods, gpus

    def _blocked_capacity(self, view: View, shape: Shape, level: int, restrict: np.ndarray | None) -> np.ndarray:
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


def _pods_fit(count: int) -> str:
    """Return "pod fits" or "pods fit" for `count` pods (messages read as sentences)."""
    return "pod fits" if count == 1 else "pods fit"


def _nodes(count: int) -> str:
    """Return e.g. "1 node" or "2,048 nodes"."""
    return f"{count:,} {'node' if count == 1 else 'nodes'}"
