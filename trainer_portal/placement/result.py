"""Placement results: `GroupPlacement` and `PlacementResult` with their JSON form (`to_dict`), and the helpers that
turn an `Outcome` into them (domain, span, racks, pods per node, level-3 leaf results of a sliced group)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from trainer_portal.placement.explain import CLUSTER, Explanation, Fragmentation
from trainer_portal.placement.placer import Outcome
from trainer_portal.placement.requests import COMPOSITE_POD_GROUP, GANG, PlacementRequest
from trainer_portal.placement.snapshot import BLOCK, HOST, LEVEL_NAMES, RACK, ZONE, ClusterSnapshot

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



def span_of(snapshot: ClusterSnapshot, rows: Iterable[int]) -> dict[str, int]:
    rows = np.fromiter(rows, np.int64)
    if not len(rows):
        return {"zones": 0, "blocks": 0, "racks": 0, "nodes": 0}
    return {
        "zones": len(set(snapshot.domain[ZONE, rows].tolist())),
        "blocks": len(set(snapshot.domain[BLOCK, rows].tolist())),
        "racks": len(set(snapshot.domain[RACK, rows].tolist())),
        "nodes": len(rows),
    }


def rack_list(snapshot: ClusterSnapshot, pods_per_row: Mapping[int, int]) -> list[dict]:
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


def domain_dict(snapshot: ClusterSnapshot, level: int, domain_id: int | None) -> dict | None:
    if domain_id is None or level == CLUSTER:
        return None
    key = snapshot.keys.levels()[level]
    if level == HOST:
        return {"level": "host", "key": key, "value": snapshot.names[domain_id], "path": [snapshot.names[domain_id]]}
    path = snapshot.domain_path(level, domain_id)
    return {"level": LEVEL_NAMES[level], "key": key, "value": path[-1], "path": list(path)}


def group_result(snapshot: ClusterSnapshot, request: PlacementRequest, outcome: Outcome,
                  extras: list[tuple[PlacementRequest, Outcome]] = ()) -> GroupPlacement:
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
        domain=domain_dict(snapshot, outcome.level, outcome.domain_id),
        pods_per_node=_pods_per_node(snapshot, pods_per_row),
        span=span_of(snapshot, pods_per_row),
        message=outcome.message,
        explanation=outcome.explanation,
        parent=request.parent,
        racks=rack_list(snapshot, pods_per_row),
    )



def leaf_results(snapshot: ClusterSnapshot, request: PlacementRequest, leaves: list[PlacementRequest],
                  outcome: Outcome) -> list[GroupPlacement]:
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
            domain = domain_dict(snapshot, slice_level, first if slice_level == HOST else
                                  int(snapshot.domain[slice_level, first]))
        names = snapshot.names
        results.append(GroupPlacement(
            name=leaf.name, kind=leaf.kind, policy=leaf.policy, level=leaf.level, topology_key=leaf.topology_key,
            pod_count=leaf.pod_count, min_count=leaf.min_count, fits=bool(chunk), placed=sum(chunk.values()),
            domain=domain, pods_per_node={names[r]: p for r, p in sorted(chunk.items(), key=lambda i: names[i[0]])},
            span=span_of(snapshot, chunk),
            message=(f"{leaf.name}: {leaf.pod_count:,} pods in "
                     f"{domain['level'] + ' ' + domain['value'] if domain else 'its slice'}") if chunk else
            f"{leaf.name}: not placed ({outcome.message})",
            explanation=None if chunk else outcome.explanation, parent=leaf.parent,
            racks=rack_list(snapshot, chunk)))
    return results
