"""From a runtime's expansion to the placement engine's requests (the engine knows no expansion).

`job_requests` is what a preview passes to `trainer_portal.placement.place`: the PlacementRequests of a flat
expansion in creation order, or one CompositeRequest for a composite one.
"""

from __future__ import annotations

from collections.abc import Mapping

from runtimes.domain.expansion import BASIC, COMPOSITE_POD_GROUP, GANG, Expansion, PodGroupPlan, PodSet
from trainer_portal.placement.quantities import GPU, parse_resource
from trainer_portal.placement.requests import CompositeChild, CompositeRequest, PlacementRequest


def job_requests(expansion: Expansion,
                 tolerations: tuple[Mapping, ...] = ()) -> list[PlacementRequest] | CompositeRequest:
    """Return what `place` needs for `expansion`: a CompositeRequest when it is composite, else its requests."""
    if expansion.composite:
        return composite_requests(expansion, tolerations)
    return requests_from_expansion(expansion, tolerations)


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


# The name suffix of the request for a ReplicatedJob in no PodGroup (its pods are scheduled one by one).
NO_POD_GROUP = " (no PodGroup)"


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
            requests.append(_requests_for_pod_sets(f"{pod_set.replicated_job}{NO_POD_GROUP}", [pod_set],
                                                   [pod_set.count], None, BASIC, tolerations))
    return requests


def composite_requests(expansion: Expansion, tolerations: tuple[Mapping, ...] = ()) -> CompositeRequest:
    """Return the CompositeRequest of a composite expansion: the root CompositePodGroup and, per child, its request
    (a child CompositePodGroup of level-3 Jobs becomes one sliced request: slice = one Job, at the leaves' topology
    level) with its leaf PodGroups."""
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
            children.append(CompositeChild(request, tuple(_described(leaf) for leaf in leaves)))
        else:
            request = _requests_for_pod_sets(child.name, pod_sets, [p.count for p in pod_sets], child, child.policy,
                                             tolerations)
            children.append(CompositeChild(request))
    return CompositeRequest(_described(root, min_count=root.min_group_count), tuple(children),
                            tuple(requests_from_expansion(expansion, tolerations)))


def _described(group: PodGroupPlan, *, min_count: int | None = None) -> PlacementRequest:
    """A group that is reported on but not placed by itself (the composite root, a level-3 leaf)."""
    return PlacementRequest(name=group.name, pod_count=group.pod_count, kind=group.kind, policy=group.policy,
                            level=group.level, topology_key=group.topology_key, parent=group.parent,
                            min_count=group.min_count if min_count is None else min_count)
