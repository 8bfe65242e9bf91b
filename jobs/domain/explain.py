"""Why a TrainJob waits: the placement engine on a cluster snapshot for exactly this gang, in words.

"needs 64 nodes × 8 GPUs in one zone; the best zone, zone-a, has 63 free; 1 node cordoned" — plus what would make
it fit ("fits if the zone constraint is relaxed to block", "fits once 1 more 8-GPU node frees in zone zone-a")
and who holds that capacity: the admitted gangs whose pods sit in the best domain, biggest first.

Pure: numpy and the shared placement package only.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from trainer_portal.placement import BASIC, GANG, ClusterSnapshot, PlacementInputError, PlacementRequest, place
from trainer_portal.placement.snapshot import CORDONED, DOMAIN_LEVELS, LEVEL_NAMES, PRESENT, RACK, READY

from . import signals as sig

_NEEDS_MORE = re.compile(r"^needs (?P<count>[\d,]+) more free (?P<what>.+?) in (?P<where>.+)$")


@dataclass(frozen=True)
class JobShape:
    """The gang to explain: its PodGroups as tracked ({name, policy, minCount, members, topologyKey}) and the
    per-node resources every pod requests."""

    namespace: str
    name: str
    num_nodes: int
    resources_per_node: Mapping[str, str]
    pod_groups: Sequence[Mapping] = ()


@dataclass(frozen=True)
class Occupant:
    """An admitted TrainJob and the nodes its pods are bound to (one entry per pod)."""

    namespace: str
    name: str
    num_nodes: int
    gpus_per_node: int
    nodes: tuple[str, ...]
    running_since: dt.datetime | None = None
    creator: str = ""
    visible: bool = True


@dataclass(frozen=True)
class Holder:
    """An admitted gang occupying part of the best domain."""

    namespace: str
    name: str
    nodes: int
    gpus: int
    num_nodes: int
    running_since: dt.datetime | None
    creator: str

    def to_dict(self) -> dict:
        """Return the API form."""
        return {"namespace": self.namespace, "name": self.name, "nodes": self.nodes, "gpus": self.gpus,
                "numNodes": self.num_nodes, "runningSince": self.running_since, "creator": self.creator}


@dataclass
class WaitExplanation:
    """The answer to "why does it wait" (``available`` False when there is nothing to compute it on)."""

    available: bool
    message: str
    fits: bool | None = None
    need: str = ""
    best_domain: str | None = None
    have: int | None = None
    need_count: int | None = None
    unit: str = ""
    excluded: dict[str, int] = field(default_factory=dict)
    alternatives: list[str] = field(default_factory=list)
    holders: list[Holder] = field(default_factory=list)
    other_nodes: int = 0
    snapshot_age_seconds: float | None = None

    def to_dict(self) -> dict:
        """Return the API form."""
        return {"available": self.available, "fits": self.fits, "message": self.message, "need": self.need,
                "bestDomain": self.best_domain, "have": self.have,
                "needCount": self.need_count, "unit": self.unit, "excluded": dict(self.excluded),
                "alternatives": list(self.alternatives), "holders": [h.to_dict() for h in self.holders],
                "otherNodes": self.other_nodes, "snapshotAgeSeconds": self.snapshot_age_seconds}


def unavailable(message: str) -> WaitExplanation:
    """Return an explanation that could not be computed, saying why."""
    return WaitExplanation(False, message)


def requests_for(job: JobShape) -> list[PlacementRequest]:
    """Return the placement requests of ``job``: one per tracked PodGroup (gangs first, as the scheduler has to
    place them whole), or one gang of numNodes pods when no PodGroup is known yet."""
    resources = dict(job.resources_per_node)
    requests = []
    for group in job.pod_groups:
        policy = GANG if group.get("policy") == "gang" else BASIC
        min_count = sig.as_int(group.get("minCount")) or None
        pods = max(sig.as_int(group.get("members")), min_count or 0) or job.num_nodes
        requests.append(PlacementRequest(name=sig.as_str(group.get("name")) or job.name, pod_count=pods,
                                         resources=resources, min_count=min_count if policy == GANG else None,
                                         policy=policy, topology_key=sig.as_str(group.get("topologyKey")) or None))
    if not requests:
        requests.append(PlacementRequest(name=job.name, pod_count=max(job.num_nodes, 1), resources=resources,
                                         min_count=max(job.num_nodes, 1)))
    requests.sort(key=lambda r: r.policy != GANG)
    return requests


def _need_text(request: PlacementRequest, snapshot: ClusterSnapshot, gpus: int) -> str:
    size = f"{request.pod_count:,} nodes × {gpus} GPUs" if gpus else f"{request.pod_count:,} pods"
    if not request.topology_key:
        return f"needs {size} anywhere in the cluster"
    try:
        level = LEVEL_NAMES[snapshot.keys.level_of(request.topology_key)]
    except ValueError:
        level = request.topology_key
    return f"needs {size} in one {level}"


def _domain_rows(snapshot: ClusterSnapshot, domain: Mapping | None) -> np.ndarray:
    """Return a mask over the snapshot's rows: the nodes of ``domain`` (every node when None)."""
    n = snapshot.size
    present = (snapshot.flags[:n] & PRESENT) != 0
    level = LEVEL_NAMES.index(domain["level"]) if domain and domain.get("level") in LEVEL_NAMES else None
    if level is None:
        return present
    path = tuple(domain.get("path") or ())
    if level >= DOMAIN_LEVELS:
        mask = np.zeros(n, dtype=bool)
        row = snapshot.row_of.get(path[-1]) if path else None
        if row is not None:
            mask[row] = True
        return mask & present
    ids = snapshot.domain[level, :n]
    matching = [d for d in np.unique(ids[present]).tolist() if snapshot.domain_path(level, d) == path]
    return np.isin(ids, matching) & present


def _unavailable_text(snapshot: ClusterSnapshot, domain: Mapping | None) -> str:
    """Return "1 node cordoned, 2 not ready" for the nodes of ``domain`` the scheduler cannot use ("" when none)."""
    rows = _domain_rows(snapshot, domain)
    flags = snapshot.flags[: snapshot.size][rows]
    not_ready = int(np.count_nonzero((flags & READY) == 0))
    cordoned = int(np.count_nonzero(((flags & CORDONED) != 0) & ((flags & READY) != 0)))
    parts = []
    if cordoned:
        parts.append(f"{cordoned:,} node{'' if cordoned == 1 else 's'} cordoned")
    if not_ready:
        parts.append(f"{not_ready:,} node{'' if not_ready == 1 else 's'} not ready")
    return ", ".join(parts)


def _advice(alternatives: Iterable[str]) -> list[str]:
    advice = []
    for text in alternatives:
        match = _NEEDS_MORE.match(text)
        if match:
            count = match["count"]
            verb = "frees" if count == "1" else "free"
            where = match["where"]
            level, _, value = where.partition(" ")
            if level in LEVEL_NAMES and value:
                where = value  # "zone zone-a" reads as "zone-a"
            text = f"fits once {count} more {match['what']} {verb} in {where}"
        advice.append(text)
    return advice


def explain_wait(job: JobShape, snapshot: ClusterSnapshot, *, occupants: Iterable[Occupant] = (),
                 snapshot_age_seconds: float | None = None, max_holders: int = 10) -> WaitExplanation:
    """Return why ``job`` does not run on ``snapshot`` (or that it fits now), with who holds the best domain.

    ``occupants`` are the admitted jobs; invisible ones (``visible=False``) only add to ``other_nodes``. Never
    raises for bad input: an unusable request is an unavailable explanation naming the problem.
    """
    requests = requests_for(job)
    gpus = sig.as_int(dict(job.resources_per_node).get(sig.GPU))
    try:
        result = place(requests, snapshot, with_fragmentation=False, details=False)
    except PlacementInputError as error:
        return WaitExplanation(False, f"cannot be explained: {error}", snapshot_age_seconds=snapshot_age_seconds)
    failing = next((g for g in result.groups if not g.fits and g.policy == GANG), None)
    if failing is None:
        failing = next((g for g in result.groups if not g.fits), None)
    main = next(r for r in requests if failing is None or r.name == failing.name)
    need = _need_text(main, snapshot, gpus)
    if failing is None:
        return WaitExplanation(True, f"{need}; it fits on the cluster now: the scheduler should place it shortly",
                               fits=True, need=need, snapshot_age_seconds=snapshot_age_seconds)
    explanation = failing.explanation
    have = explanation.have if explanation else None
    best = explanation.best_domain if explanation else None
    excluded = dict(explanation.excluded) if explanation else {}
    if best and have is not None:
        level = explanation.binding_level
        # The engine's own measure (pods, or slices), the same numbers the scheduler's "fits N" and the advice use.
        measure = f"fits {have:,} of {explanation.need:,} {explanation.unit}"
        head = (f"{need}; the cluster {measure}" if level == "cluster" else
                f"{need}; the best {level}, {best.split(' ', 1)[-1]}, {measure}")
    else:
        head = f"{need}; {failing.message}"
    extra = _unavailable_text(snapshot, failing.domain if best else None)
    holders, other = _holders(snapshot, failing.domain, occupants, max_holders)
    return WaitExplanation(True, f"{head}; {extra}" if extra else head, fits=False, need=need, best_domain=best,
                           have=have, need_count=explanation.need if explanation else None,
                           unit=explanation.unit if explanation else "", excluded=excluded,
                           alternatives=_advice(explanation.alternatives if explanation else []),
                           holders=holders, other_nodes=other, snapshot_age_seconds=snapshot_age_seconds)


def _holders(snapshot: ClusterSnapshot, domain: Mapping | None, occupants: Iterable[Occupant],
             limit: int) -> tuple[list[Holder], int]:
    """Admitted jobs with pods in ``domain`` (the whole cluster when None), most GPUs first; plus the nodes held
    there by jobs the caller may not see. Vectorised: one dict lookup per pod, the rest in numpy."""
    occupants = list(occupants)
    row_of = snapshot.row_of
    lookup = row_of.get
    rows = [lookup(node, -1) for occupant in occupants for node in occupant.nodes]
    if not rows:
        return [], 0
    row_array = np.asarray(rows, dtype=np.int64)
    owners = np.repeat(np.arange(len(occupants), dtype=np.int64), [len(o.nodes) for o in occupants])
    known = row_array >= 0
    row_array, owners = row_array[known], owners[known]
    if not len(row_array):
        return [], 0
    level = LEVEL_NAMES.index(domain["level"]) if domain and domain.get("level") in LEVEL_NAMES else None
    path = tuple(domain.get("path") or ()) if domain else ()
    if level is None:
        inside = np.ones(len(row_array), dtype=bool)
    elif level >= DOMAIN_LEVELS:  # host level: the node itself
        target = row_of.get(path[-1]) if path else None
        inside = row_array == (target if target is not None else -1)
    else:
        ids = snapshot.domain[level, row_array]
        matching = [d for d in np.unique(ids).tolist() if snapshot.domain_path(level, d) == path]
        inside = np.isin(ids, matching)
    pods = np.bincount(owners[inside], minlength=len(occupants))
    # Distinct (occupant, node) pairs give the nodes each occupant holds in the domain.
    pairs = np.unique(owners[inside] * (int(row_array.max()) + 1) + row_array[inside])
    nodes_of = np.bincount(pairs // (int(row_array.max()) + 1), minlength=len(occupants))
    holders, other = [], 0
    for index in np.flatnonzero(pods).tolist():
        occupant = occupants[index]
        nodes = int(nodes_of[index])
        if not occupant.visible:
            other += nodes
            continue
        holders.append(Holder(occupant.namespace, occupant.name, nodes, int(pods[index]) * occupant.gpus_per_node,
                              occupant.num_nodes, occupant.running_since, occupant.creator))
    holders.sort(key=lambda h: (-h.gpus, -h.nodes, h.namespace, h.name))
    return holders[:limit], other


def pod_locations(snapshot: ClusterSnapshot, nodes: Iterable[str]) -> dict[str, tuple[str, str, str]]:
    """Return {node: (zone, block, rack)} for the nodes the snapshot knows."""
    paths = snapshot.rack_paths()
    result = {}
    for node in nodes:
        row = snapshot.row_of.get(node)
        if row is not None:
            result[node] = paths[int(snapshot.domain[RACK, row])]
    return result
