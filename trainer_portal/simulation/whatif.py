"""Replays and what-ifs: recorded arrivals, sizes and run times replayed under the current and a candidate setting.

A candidate changes the policy (a runtime's required topology level), the queueing (StrictFIFO, quotas) or the
nodes (add nodes to a domain, cordon or remove the nodes of a domain). Both sides start from the same snapshot and
replay the same arrivals with their recorded run times, so the only difference is the candidate. A replay knows
every run time, so it is deterministic without a seed; a seed only matters for jobs without one.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from trainer_portal.placement import ClusterSnapshot
from trainer_portal.placement.snapshot import ADDED, CORDONED, PRESENT, next_stamp
from trainer_portal.simulation.core import Simulation
from trainer_portal.simulation.durations import Durations
from trainer_portal.simulation.model import SimJob, SimSettings


@dataclass(frozen=True)
class NodeChange:
    """Add `count` nodes of `gpus_per_node` GPUs to the domain at `path` (zone, block, rack — the rack is created
    when new), or (`count` < 0) cordon that many nodes of the domain, or (`count` == 0) cordon all of it."""

    path: tuple[str, ...]
    count: int
    gpus_per_node: int = 8
    cpu: str = "192"
    memory: str = "2Ti"


@dataclass(frozen=True)
class Candidate:
    """A setting to compare against the current one: scheduling settings and node changes."""

    settings: SimSettings = field(default_factory=SimSettings)
    nodes: tuple[NodeChange, ...] = ()


@dataclass
class ReplayOutcome:
    """Aggregates of one replay: time to admission (seconds) p50/p95 over the jobs that started, the jobs that would
    never fit, the jobs still waiting at the end, GPU utilisation and fragmentation (0..1, time-weighted)."""

    jobs: int
    started: int
    wait_p50: float | None
    wait_p95: float | None
    never_fit: int
    still_waiting: int
    utilization: float
    fragmentation: float
    starts: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Return the API form (no per-job starts)."""
        return {"jobs": self.jobs, "started": self.started, "waitP50Seconds": self.wait_p50,
                "waitP95Seconds": self.wait_p95, "neverFit": self.never_fit, "stillWaiting": self.still_waiting,
                "gpuUtilization": round(self.utilization, 4), "fragmentation": round(self.fragmentation, 4)}


def apply_nodes(snapshot: ClusterSnapshot, changes: Sequence[NodeChange]) -> ClusterSnapshot:
    """Return a copy of `snapshot` with `changes` applied (the original is never modified). Raises ValueError for a
    path that is not zone/block[/rack] or names no existing domain when nodes are cordoned."""
    if not changes:
        return snapshot
    snap = snapshot.copy()
    keys = snap.keys
    for number, change in enumerate(changes):
        if not 1 <= len(change.path) <= 3:
            raise ValueError("a node change names a zone, a zone/block or a zone/block/rack")
        if change.count > 0:
            zone, block, rack = (*change.path, "", "")[:3]
            block = block or "whatif-block"
            rack = rack or f"whatif-rack-{number}"
            for index in range(change.count):
                name = f"whatif-{number}-{index}"
                labels = {keys.zone: zone, keys.block: block, keys.rack: rack, keys.host: name}
                node = {"metadata": {"name": name, "labels": labels},
                        "status": {"allocatable": {"nvidia.com/gpu": str(change.gpus_per_node), "cpu": change.cpu,
                                                   "memory": change.memory, "pods": "110"},
                                   "conditions": [{"type": "Ready", "status": "True"}]}}
                snap.apply_node_event(ADDED, node)
            continue
        level = len(change.path) - 1
        matches = [d for d in range(len(snap.domain_value[level])) if snap.domain_path(level, d) == change.path]
        if not matches:
            raise ValueError(f"no domain {'/'.join(change.path)} in the cluster")
        rows = np.flatnonzero((snap.domain[level, : snap.size] == matches[0]) & (snap.flags[: snap.size] & PRESENT > 0))
        if change.count < 0:
            rows = rows[: -change.count]
        snap.flags[rows] |= CORDONED
        snap.version = next_stamp()
        snap.topology_version = next_stamp()
        snap.clear_caches()
    return snap


def idle(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """Return a copy of `snapshot` with nothing running (the start of a replay)."""
    snap = snapshot.copy()
    for name in ("used_gpu", "used_cpu", "used_mem", "used_pods"):
        getattr(snap, name)[: snap.size] = 0
    snap.version = next_stamp()
    return snap


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not len(values):
        return None
    return float(np.quantile(np.asarray(values, float), q))


def replay(snapshot: ClusterSnapshot, arrivals: Sequence[SimJob], *, candidate: Candidate | None = None,
           durations: Durations | None = None, seed: int = 0, until: float | None = None,
           max_events: int = 2_000_000, progress: Callable[[float], None] | None = None) -> ReplayOutcome:
    """Replay `arrivals` (sorted by arrival) from an idle `snapshot` under `candidate` (default: as it is) and
    return the ReplayOutcome. `progress(fraction)` is called as the replay advances (it may raise to cancel).
    Raises ValueError for a bad node change."""
    candidate = candidate or Candidate()
    arrivals = sorted(arrivals, key=lambda job: (job.arrival, job.key))
    snap = apply_nodes(idle(snapshot), candidate.nodes)
    start = arrivals[0].arrival if arrivals else 0.0
    end = until if until is not None else (arrivals[-1].arrival if arrivals else 0.0)
    sim = Simulation(snap, durations=durations, settings=candidate.settings, rng=random.Random(seed), now=start)
    chunks = max(1, min(20, len(arrivals) // 250 or 1))
    bounds = [len(arrivals) * (i + 1) // chunks for i in range(chunks)]
    done = 0
    for number, bound in enumerate(bounds):
        part = arrivals[done:bound]
        horizon = part[-1].arrival if number < chunks - 1 and part else end
        sim.run(part, until=horizon, max_events=max_events)
        done = bound
        if progress is not None:
            progress((number + 1) / chunks)
    result = sim.result
    waits = [result.starts[job.key].at - job.arrival for job in arrivals if job.key in result.starts]
    started = {job.key: result.starts[job.key].at for job in arrivals if job.key in result.starts}
    still = sum(1 for job in arrivals if job.key not in result.starts and job.key not in result.never_fit)
    return ReplayOutcome(len(arrivals), len(started), _quantile(waits, 0.5), _quantile(waits, 0.95),
                         len(result.never_fit), still, result.utilization, result.fragmentation, started)


def compare(snapshot: ClusterSnapshot, arrivals: Sequence[SimJob], candidate: Candidate, *,
            current: Candidate | None = None, durations: Durations | None = None, seed: int = 0,
            until: float | None = None, progress: Callable[[float], None] | None = None) -> tuple[
        ReplayOutcome, ReplayOutcome]:
    """Return (current, candidate) replays of the same arrivals, side by side. Raises ValueError like `replay`."""
    def half(offset: float) -> Callable[[float], None] | None:
        return None if progress is None else (lambda fraction: progress(offset + fraction / 2))

    before = replay(snapshot, arrivals, candidate=current, durations=durations, seed=seed, until=until,
                    progress=half(0.0))
    after = replay(snapshot, arrivals, candidate=candidate, durations=durations, seed=seed, until=until,
                   progress=half(0.5))
    return before, after


def topology_candidate(runtime_levels: Mapping[str, str]) -> Candidate:
    """Return a candidate that re-targets the gangs of each runtime to a topology level key."""
    return Candidate(SimSettings(topology=dict(runtime_levels)))
