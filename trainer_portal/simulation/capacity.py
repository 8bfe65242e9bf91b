"""Capacity advice: the smallest number of nodes to add to one domain so today's waiting gangs all start within a
target time, found by bisection over the estimate (more nodes never make the simulated starts later in practice;
the search assumes it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainer_portal.placement import ClusterSnapshot
from trainer_portal.simulation.durations import Durations
from trainer_portal.simulation.estimate import estimate_starts
from trainer_portal.simulation.model import RunningJob, SimJob
from trainer_portal.simulation.whatif import NodeChange, apply_nodes


@dataclass(frozen=True)
class Advice:
    """For `domain` (a zone's label path): add `nodes` nodes of `gpus_per_node` GPUs (0: none needed), or None when
    even `limit` nodes would not do; `latest` is the last simulated p50 start (seconds) with that addition."""

    domain: str
    nodes: int | None
    gpus_per_node: int
    limit: int
    latest: float | None

    def to_dict(self) -> dict:
        """Return the stored / API form."""
        return {"domain": self.domain, "nodes": self.nodes, "gpusPerNode": self.gpus_per_node, "limit": self.limit,
                "latestStart": self.latest}


def _latest(snapshot: ClusterSnapshot, running: Sequence[RunningJob], waiting: Sequence[SimJob],
            durations: Durations, now: float, samples: int, seed: int) -> float | None:
    estimates = estimate_starts(snapshot, running, waiting, durations, now=now, samples=samples, seed=seed)
    if any(e.p50 is None for e in estimates.values()):
        return None
    return max((e.p50 for e in estimates.values()), default=now)


def capacity_advice(snapshot: ClusterSnapshot, running: Sequence[RunningJob], waiting: Sequence[SimJob],
                    durations: Durations, *, now: float, target_seconds: float, step: int = 8, limit: int = 256,
                    gpus_per_node: int = 8, samples: int = 4, seed: int = 0) -> list[Advice]:
    """Return one Advice per zone: the smallest multiple of `step` nodes (up to `limit`) that, added to that zone
    alone, lets every waiting job start (p50) within `target_seconds` of `now`. Work: zones × log2(limit/step) + 1
    estimates of `samples` runs."""
    advice = []
    for zone_id in range(len(snapshot.domain_value[0])):
        path = snapshot.domain_path(0, zone_id)

        def latest_with(nodes: int, path: tuple[str, ...] = path) -> float | None:
            snap = apply_nodes(snapshot, [NodeChange(path, nodes, gpus_per_node)]) if nodes else snapshot
            return _latest(snap, running, waiting, durations, now, samples, seed)

        def good(value: float | None) -> bool:
            return value is not None and value - now <= target_seconds

        base = latest_with(0)
        if good(base):
            advice.append(Advice("/".join(path), 0, gpus_per_node, limit, base))
            continue
        top = latest_with(limit)
        if not good(top):
            advice.append(Advice("/".join(path), None, gpus_per_node, limit, top))
            continue
        low, high, best = 0, limit // step, top
        while high - low > 1:
            middle = (low + high) // 2
            value = latest_with(middle * step)
            if good(value):
                high, best = middle, value
            else:
                low = middle
        advice.append(Advice("/".join(path), high * step, gpus_per_node, limit, best))
    return advice
