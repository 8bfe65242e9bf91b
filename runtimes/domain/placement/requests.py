"""Placement requests: `PlacementRequest` (one group to place), `PlacementInputError`, the parsed per-pod
resource `_Shape` (cached by request), and the conversion from an Expansion (`requests_from_expansion`,
`composite_requests`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runtimes.domain.expansion import BASIC, COMPOSITE_POD_GROUP, GANG, Expansion, PodGroupPlan, PodSet
from runtimes.domain.placement.quantities import CPU, GPU, MEMORY, QuantityError, parse_resource, to_base_units


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

