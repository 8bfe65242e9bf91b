"""Placement requests: `PlacementRequest` (one group to place), `CompositeRequest` (groups placed together inside
one domain), `PlacementInputError`, and the parsed per-pod resource `Shape` (memoised by `shape_of`).

The engine knows only these types; turning a runtime's expansion into them is the caller's job."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from trainer_portal.placement.quantities import CPU, GPU, MEMORY, QuantityError, parse_resource, to_base_units

GANG = "gang"  # all pods or none (minCount)
BASIC = "basic"  # pod by pod, may be partial
POD_GROUP = "PodGroup"
COMPOSITE_POD_GROUP = "CompositePodGroup"


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
    kind: str = POD_GROUP
    preferred: bool = False  # Kueue preferred mode: try the level, then each coarser one, then spread


@dataclass(frozen=True)
class CompositeChild:
    """One child of a CompositePodGroup: its request and, for a child CompositePodGroup of level-3 Jobs placed as
    slices, the leaf PodGroups in slice order (each leaf's result is cut from the child's outcome)."""

    request: PlacementRequest
    leaves: tuple[PlacementRequest, ...] = ()


@dataclass(frozen=True)
class CompositeRequest:
    """A CompositePodGroup job: every child placed inside one domain of the root's `topology_key` level.

    `root` describes the CompositePodGroup itself (`min_count` is its minGroupCount; it is not placed).
    `leaf_requests` are the requests of the job's leaf PodGroups; the largest of them sets the pod shape the
    fragmentation summary is computed for.
    """

    root: PlacementRequest
    children: tuple[CompositeChild, ...]
    leaf_requests: tuple[PlacementRequest, ...] = ()


@dataclass(frozen=True)
class Shape:
    """One pod's requests in snapshot units (GPUs, milli-CPU, bytes) plus its normalised tolerations."""

    gpu: int
    cpu: int
    mem: int
    tolerations: tuple

    @property
    def request(self) -> tuple[int, int, int]:
        return (self.gpu, self.cpu, self.mem)


_SHAPES: dict[tuple, Shape] = {}


def shape_of(request: PlacementRequest) -> Shape:
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


def _parse_shape(request: PlacementRequest) -> Shape:
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
    return Shape(amounts[GPU], amounts[CPU], amounts[MEMORY], tolerations)
