"""Kueue-TAS-style topology-aware gang placement over a ClusterSnapshot (docs/reference/placement.md §1).

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

The implementation is split by concern: `requests` (PlacementRequest, CompositeRequest, shapes), `counting`
(phase 1 with the per-snapshot caches, and the phase 2 BestFit descent), `placer` (one group, explanations) and
`result` (GroupPlacement / PlacementResult). This module orchestrates them (`place`, `explain_queue`). A job is
either a sequence of PlacementRequests (placed in order) or one CompositeRequest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from trainer_portal.placement.counting import View, admit, aggregate
from trainer_portal.placement.explain import (
    CLUSTER,
    Fragmentation,
    FragmentationState,
    domain_title,
    fragmentation_after,
    fragmentation_state,
    level_name,
)
from trainer_portal.placement.placer import Outcome, Placer
from trainer_portal.placement.requests import (
    BASIC,
    COMPOSITE_POD_GROUP,
    GANG,
    CompositeRequest,
    PlacementInputError,
    PlacementRequest,
    Shape,
    shape_of,
)
from trainer_portal.placement.result import (
    GroupPlacement,
    PlacementResult,
    domain_dict,
    group_result,
    leaf_results,
    rack_list,
    span_of,
)
from trainer_portal.placement.snapshot import HOST, ClusterSnapshot, TopologyKeys

Job = Sequence[PlacementRequest] | CompositeRequest

__all__ = [
    "Admission",
    "CompositeRequest",
    "GroupPlacement",
    "Job",
    "PlacementInputError",
    "PlacementRequest",
    "PlacementResult",
    "admit_job",
    "explain_queue",
    "place",
    "release_job",
]


# -- the public entry point --------------------------------------------------------------------------------------


def place(job: Job, snapshot: ClusterSnapshot, *, keys: TopologyKeys | None = None,
          with_fragmentation: bool = True, details: bool = True) -> PlacementResult:
    """Place every group of a TrainJob on `snapshot` and return the PlacementResult, explaining what does not fit.

    Groups are placed in order; each one sees the capacity the earlier ones took (on an overlay: `snapshot` is never
    modified). A CompositeRequest places its children inside one domain of the root's level. Raises
    PlacementInputError for malformed quantities, unknown topology keys or keys that differ from the snapshot's.

    `details=False` (queue explanations) answers fit / domain / explanation only: the last group is not spread
    over nodes (no `pods_per_node`, `racks`, `span`) and no fragmentation is computed.
    """
    _check_keys(snapshot, keys)
    placer = Placer(snapshot, snapshot.keys)
    before_view = View(snapshot)
    groups, view, main_shape = _place_job(placer, before_view.fork(), job, details)
    fits = all(group.fits for group in groups if group.policy == GANG)
    before = after = None
    if with_fragmentation and details and main_shape is not None:
        before, after = _fragmentations(before_view, view, main_shape)
    return PlacementResult(groups, fits, before, after, snapshot.version, snapshot.node_count)


def explain_queue(jobs: Iterable[Job], snapshot: ClusterSnapshot, *,
                  sequential: bool = False) -> list[PlacementResult]:
    """Return one verdict per queued job, in order ("why is it not admitted").

    Independent (default): every job against the current snapshot, fit/domain/explanation only. Sequential: an
    admission simulation in queue order where every job that fits takes its capacity before the next is judged.
    The snapshot is never modified. Raises PlacementInputError like `place`.
    """
    work = snapshot.copy() if sequential else snapshot
    placer = Placer(work, work.keys)
    results = []
    for job in jobs:
        groups, after, _ = _place_job(placer, View(work), job, details=sequential)
        fits = all(group.fits for group in groups if group.policy == GANG)
        results.append(PlacementResult(groups, fits, None, None, snapshot.version, snapshot.node_count))
        if sequential and fits and after.chunks:
            admit(work, *after.merged())
    return results



@dataclass(frozen=True)
class Admission:
    """What `admit_job` did: whether every gang fitted, the domain the first constrained group landed in (its
    label path, "" when unconstrained), and the (rows, taken[4, rows]) charged — empty when nothing was."""

    fits: bool
    domain: str
    rows: np.ndarray
    taken: np.ndarray


def admit_job(job: Job, snapshot: ClusterSnapshot) -> Admission:
    """Place `job` on `snapshot` and, when every gang fits, charge it to the snapshot (which IS modified).

    For simulations that evolve a private working copy: no per-node result, explanation or fragmentation is built
    (the cost is phase 1 from the shape caches plus the descent). Hand the rows and taken arrays to `release_job`
    when the job ends. Raises PlacementInputError like `place`.
    """
    placer = Placer(snapshot, snapshot.keys)
    view = View(snapshot)
    fits, domain = True, ""
    if isinstance(job, CompositeRequest):
        groups, view = _place_composite(placer, view, job)
        fits = all(group.fits for group in groups if group.policy == GANG)
        first = next((group.domain for group in groups if group.domain), None)
        domain = "/".join(first["path"]) if first else ""
    else:
        for request in job:
            outcome, extras = _place_with_extras(placer, view, request, None)
            if not outcome.fits and request.policy == GANG:
                fits = False
                break
            if not domain and outcome.level not in (CLUSTER, HOST) and outcome.domain_id is not None:
                domain = "/".join(snapshot.domain_path(outcome.level, outcome.domain_id))
            view.take(outcome.shape, outcome.pods_per_row)
            for _, extra in extras:
                view.take(extra.shape, extra.pods_per_row)
    if not fits or not view.chunks:
        return Admission(fits, domain if fits else "", np.zeros(0, np.int64), np.zeros((4, 0), np.int64))
    rows, taken = view.merged()
    rows, taken = rows.copy(), taken.copy()
    admit(snapshot, rows, taken)
    return Admission(True, domain, rows, taken)


def release_job(snapshot: ClusterSnapshot, rows: np.ndarray, taken: np.ndarray) -> None:
    """Give back what `admit_job` charged (a job ended): the per-shape caches are patched, not dropped. Returns
    nothing."""
    if len(rows):
        admit(snapshot, rows, -taken)


def _check_keys(snapshot: ClusterSnapshot, keys: TopologyKeys | None) -> None:
    if keys is not None and keys != snapshot.keys:
        raise PlacementInputError(f"the snapshot was built with topology keys {snapshot.keys.to_dict()}, not "
                                  f"{keys.to_dict()}")


def _place_job(placer: Placer, view: View, job: Job,
               details: bool) -> tuple[list[GroupPlacement], View, Shape | None]:
    """Place one TrainJob's groups on `view` (modified); return the group results, the view after them (a new one
    for composite jobs) and the job's main shape."""
    if isinstance(job, CompositeRequest):
        placer.assign = True
        groups, view = _place_composite(placer, view, job)
        return groups, view, _main_shape(job.leaf_requests)
    requests = list(job)
    groups = []
    for index, request in enumerate(requests):
        last = index == len(requests) - 1
        placer.assign = details or not last or bool(request.extra)
        outcome, extras = _place_with_extras(placer, view, request, None)
        groups.append(group_result(placer.snapshot, request, outcome, extras))
        if last and not details:
            break
        if outcome.fits or request.policy == BASIC:
            view.take(outcome.shape, outcome.pods_per_row)
            for _, extra_outcome in extras:
                view.take(extra_outcome.shape, extra_outcome.pods_per_row)
    placer.assign = True
    return groups, view, _main_shape(requests)


def _main_shape(requests: Sequence[PlacementRequest]) -> Shape | None:
    best = None
    for request in requests:
        shape = shape_of(request)
        weight = (request.policy == GANG, shape.gpu * request.pod_count, request.pod_count)
        if best is None or weight > best[0]:
            best = (weight, shape)
    return best[1] if best else None


def _fragmentations(before: View, after: View, shape: Shape) -> tuple[Fragmentation, Fragmentation]:
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


def _place_with_extras(placer: Placer, view: View, request: PlacementRequest,
                       restrict: np.ndarray | None) -> tuple[Outcome, list[tuple[PlacementRequest, Outcome]]]:
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
            return Outcome(False, 0, {}, level, outcome.domain_id, {}, failed.explanation, message,
                            outcome.shape), [(extra, _skipped(extra)) for extra in request.extra]
        # Exclude the domain that could not take the extra pods and try the next best one.
        excluded = ~(view.snapshot.domain[level, : view.n] == outcome.domain_id)
        restrict = excluded if restrict is None else (restrict & excluded)
        outcome = placer.place(view, request, restrict)
        if not outcome.fits:
            return outcome, [(extra, _skipped(extra)) for extra in request.extra]


def _skipped(request: PlacementRequest) -> Outcome:
    return Outcome(False, 0, {}, CLUSTER, None, {}, None, f"{request.name}: not placed", shape_of(request))



def _place_composite(placer: Placer, view: View, job: CompositeRequest) -> tuple[list[GroupPlacement], View]:
    root = job.root
    children = [(child, child.request, list(child.leaves)) for child in job.children]
    snapshot = view.snapshot
    root_level = placer.level_of(root.topology_key, f"{root.name}.topology_key")
    candidates: list[int | None] = [None]
    if root_level not in (CLUSTER, HOST):
        # Order the root's domains by BestFit on the biggest child's slots: smallest domain that holds it first.
        main = max(children, key=lambda c: c[1].pod_count)[1]
        slots = view.slots(shape_of(main)) * view.label_ok(root_level + 1)
        counts = aggregate(view, slots, HOST, 1)
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
        topology_key=root.topology_key, pod_count=root.pod_count, min_count=root.min_count, fits=all_fit,
        placed=sum(pods_all.values()) if all_fit else 0, domain=domain_dict(snapshot, root_level, domain_id),
        pods_per_node={}, span=span_of(snapshot, pods_all), message=message, explanation=None, parent=None,
        racks=rack_list(snapshot, pods_all)))
    for _, request, leaves, outcome, extras in results:
        groups.append(group_result(snapshot, request, outcome, extras))
        if leaves:
            groups.extend(leaf_results(snapshot, request, leaves, outcome))
    return groups, trial

