"""One run of the discrete-event simulation: ends and arrivals on a clock, admission by the placement engine.

State: a private copy of the snapshot (the engine charges admitted jobs to it and gives their capacity back when
they end), the jobs holding nodes with their end times (a heap), and the waiting jobs in cluster order. Waiting
jobs are grouped by shape (and by queue where quota or StrictFIFO makes the queue matter): within a group the
first job in order that does not fit means none of the others fits either, so a pass over the queue costs one
placement per group, not one per job. A GPU count per zone/block/rack (kept current on every admit and end) rejects
jobs that cannot fit before the engine is asked. Everything random comes from the one `random.Random` handed in,
so a run is a function of its seed.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from trainer_portal.placement import ClusterSnapshot, PlacementInputError, admit_job, place, release_job
from trainer_portal.placement.snapshot import CORDONED, DOMAIN_LEVELS, HOST, PRESENT, READY, next_stamp
from trainer_portal.simulation.durations import Durations
from trainer_portal.simulation.model import (
    INF,
    RunningJob,
    SimJob,
    SimSettings,
    required_level,
    retarget,
    shape_signature,
)

# End sources, as the basis names them.
REPORTED, HISTORY, DEADLINE, UNKNOWN = "reported", "history", "deadline", "unknown"


@dataclass
class Started:
    """When a job started in this run and in which domain its main gang landed."""

    at: float
    domain: str = ""


@dataclass
class RunResult:
    """What one run produced: starts by job key, the jobs that can never fit (even on an empty cluster), how the
    running jobs' ends were modelled, and time-weighted GPU utilisation and fragmentation."""

    starts: dict[str, Started] = field(default_factory=dict)
    never_fit: set[str] = field(default_factory=set)
    end_sources: dict[str, str] = field(default_factory=dict)
    busy_gpu_seconds: float = 0.0
    span_seconds: float = 0.0
    total_gpus: int = 0
    stranded_integral: float = 0.0
    events: int = 0
    truncated: bool = False

    @property
    def utilization(self) -> float:
        """Return the fraction of schedulable GPU time in use over the run (0 when the run was empty)."""
        denominator = self.total_gpus * self.span_seconds
        return self.busy_gpu_seconds / denominator if denominator > 0 else 0.0

    @property
    def fragmentation(self) -> float:
        """Return the time-weighted fraction of free GPUs that sit on partly used nodes (not whole free nodes)."""
        return self.stranded_integral / self.span_seconds if self.span_seconds > 0 else 0.0


class Simulation:
    """One seeded run; see the module docstring. Not reusable: build one per run."""

    def __init__(self, snapshot: ClusterSnapshot, *, durations: Durations | None = None,
                 settings: SimSettings | None = None, rng: random.Random | None = None, now: float = 0.0,
                 impossible_cache: dict | None = None) -> None:
        """Copy `snapshot` (never modified) and prepare the capacity counts; `impossible_cache` may be shared
        between runs on the same snapshot and setting (which shapes never fit)."""
        self.snapshot = snapshot.copy()
        self.durations = durations or Durations()
        self.settings = settings or SimSettings()
        self.rng = rng or random.Random(0)
        self.now = now
        self.result = RunResult()
        self._seq = itertools.count()
        self._ends: list[tuple[float, int, str]] = []
        self._holding: dict[str, tuple[np.ndarray, np.ndarray, str, int]] = {}
        self._queue_used: dict[str, float] = {}
        self._groups: dict[tuple, list[tuple[tuple, int, SimJob]]] = {}
        self._impossible = impossible_cache if impossible_cache is not None else {}
        self._empty: ClusterSnapshot | None = None
        self._fresh: list[str] = []  # keys started since the run loop last looked (cheaper than diffing all starts)
        snap = self.snapshot
        n = snap.size
        flags = snap.flags[:n]
        self._schedulable = ((flags & (PRESENT | READY | CORDONED)) == (PRESENT | READY)).astype(np.int64)
        self._alloc = snap.alloc_gpu[:n].astype(np.int64) * self._schedulable
        self._gfree = np.maximum(snap.alloc_gpu[:n].astype(np.int64) - snap.used_gpu[:n], 0) * self._schedulable
        self._domains = [snap.domain[level, :n] for level in range(DOMAIN_LEVELS)]
        sizes = [len(snap.domain_value[level]) for level in range(DOMAIN_LEVELS)]
        self._dom_free = [np.bincount(self._domains[level], weights=self._gfree, minlength=sizes[level]).astype(
            np.int64) for level in range(DOMAIN_LEVELS)]
        self._total_free = int(self._gfree.sum())
        self.result.total_gpus = int(self._alloc.sum())
        self._last_t = now
        self._whole = self._alloc > 0

    # -- capacity bookkeeping ----------------------------------------------------------------------------------

    def _touch(self, rows: np.ndarray) -> None:
        snap = self.snapshot
        new = np.maximum(snap.alloc_gpu[rows].astype(np.int64) - snap.used_gpu[rows], 0) * self._schedulable[rows]
        delta = new - self._gfree[rows]
        for level in range(DOMAIN_LEVELS):
            np.add.at(self._dom_free[level], self._domains[level][rows], delta)
        self._gfree[rows] = new
        self._total_free += int(delta.sum())

    def _may_fit(self, job: SimJob, level: int | None) -> bool:
        need = job.gpus
        if need <= 0:
            return True
        if need > self._total_free:
            return False
        if level is None:
            return True
        if level == HOST:
            return int(self._gfree.max(initial=0)) >= need
        return int(self._dom_free[level].max(initial=0)) >= need

    def _advance(self, t: float) -> None:
        """Integrate utilisation and fragmentation up to `t`."""
        dt = t - self._last_t
        if dt > 0:
            used = self.result.total_gpus - self._total_free
            self.result.busy_gpu_seconds += used * dt
            if self._total_free > 0:
                whole_free = int(self._gfree[self._whole & (self._gfree == self._alloc)].sum())
                self.result.stranded_integral += dt * (1.0 - whole_free / self._total_free)
            self.result.span_seconds += dt
            self._last_t = t

    # -- jobs ---------------------------------------------------------------------------------------------------

    def add_running(self, jobs: Iterable[RunningJob]) -> None:
        """Register the jobs that hold nodes at the start (already counted in the snapshot). Returns nothing."""
        snap = self.snapshot
        for job in jobs:
            counts: dict[int, int] = {}
            for node in job.nodes:
                row = snap.row_of.get(node)
                if row is not None:
                    counts[row] = counts.get(row, 0) + 1
            rows = np.fromiter(counts, np.int64, len(counts))
            pods = np.fromiter(counts.values(), np.int64, len(counts))
            taken = np.vstack((pods * job.pod_gpu, pods * job.pod_cpu_milli, pods * job.pod_mem, pods))
            self._holding[job.key] = (rows, taken, "", 0)
            end, source = self._running_end(job)
            self.result.end_sources[job.key] = source
            if end < INF:
                heapq.heappush(self._ends, (end, next(self._seq), job.key))

    def _running_end(self, job: RunningJob) -> tuple[float, str]:
        elapsed = max(self.now - job.started, 0.0)
        deadline_end = job.started + job.deadline if job.deadline else INF
        if deadline_end < self.now:
            deadline_end = self.now  # past its deadline: the Trainer is about to stop it
        if job.remaining is not None and job.remaining >= 0:
            return min(self.now + job.remaining, deadline_end), REPORTED
        drawn = self.durations.sample(job.runtime, job.gpus, self.rng, elapsed)
        if drawn is not None:
            end = self.now + drawn
            return (end, HISTORY) if end <= deadline_end else (deadline_end, DEADLINE)
        if deadline_end < INF:
            return deadline_end, DEADLINE
        return INF, UNKNOWN

    def _effective(self, job: SimJob) -> SimJob:
        topology = self.settings.topology
        if job.runtime in topology:
            return SimJob(**{**job.__dict__, "job": retarget(job.job, topology[job.runtime])})
        return job

    def enqueue(self, job: SimJob) -> None:
        """Add a waiting job to the queue (cluster order). Returns nothing."""
        job = self._effective(job)
        queue_matters = job.queue and (job.queue in self.settings.strict_fifo or job.queue in self.settings.quotas)
        signature = (shape_signature(job.job), job.queue if queue_matters else "")
        if self._never_fits(signature[0], job):
            self.result.never_fit.add(job.key)
            return
        heapq.heappush(self._groups.setdefault(signature, []), (job.order_key(), next(self._seq), job))

    def _never_fits(self, shape: tuple, job: SimJob) -> bool:
        known = self._impossible.get(shape)
        if known is None:
            if self._empty is None:
                empty = self.snapshot.copy()
                n = empty.size
                for name in ("used_gpu", "used_cpu", "used_mem", "used_pods"):
                    getattr(empty, name)[:n] = 0
                empty.version = next_stamp()
                self._empty = empty
            try:
                known = not place(job.job, self._empty, with_fragmentation=False, details=False).fits
            except PlacementInputError:
                known = True
            self._impossible[shape] = known
        return known

    def _start(self, job: SimJob, t: float) -> bool:
        quotas = self.settings.quotas
        if job.queue in quotas and self._queue_used.get(job.queue, 0.0) + job.gpus > quotas[job.queue]:
            return False
        level = required_level(job.job, self.snapshot)
        if not self._may_fit(job, level):
            return False
        try:
            admission = admit_job(job.job, self.snapshot)
        except PlacementInputError:
            return False
        if not admission.fits:
            return False
        rows, taken = admission.rows, admission.taken
        self._touch(rows)
        self._holding[job.key] = (rows, taken, job.queue, job.gpus)
        if job.queue:
            self._queue_used[job.queue] = self._queue_used.get(job.queue, 0.0) + job.gpus
        self.result.starts[job.key] = Started(t, admission.domain)
        self._fresh.append(job.key)
        duration = job.duration
        if duration is None:
            drawn = self.durations.sample(job.runtime, job.gpus, self.rng)
            duration = drawn if drawn is not None else INF
        if job.deadline:
            duration = min(duration, job.deadline)
        if duration < INF:
            heapq.heappush(self._ends, (t + max(duration, 0.0), next(self._seq), job.key))
        return True

    def _end(self, key: str) -> None:
        rows, taken, queue, gpus = self._holding.pop(key)
        if len(rows):
            release_job(self.snapshot, rows, taken)
            self._touch(rows)
        if queue:
            self._queue_used[queue] = self._queue_used.get(queue, 0.0) - gpus

    def _pass(self, t: float) -> None:
        """Offer the waiting jobs to the engine in cluster order (one failed placement per group and pass)."""
        heads = [(group[0][0], group[0][1], signature) for signature, group in self._groups.items() if group]
        heapq.heapify(heads)
        blocked: set[str] = set()
        while heads:
            _, _, signature = heapq.heappop(heads)
            group = self._groups[signature]
            job = group[0][2]
            if job.queue in blocked:
                continue
            if self._start(job, t):
                heapq.heappop(group)
                if group:
                    heapq.heappush(heads, (group[0][0], group[0][1], signature))
                else:
                    del self._groups[signature]
            elif job.queue and job.queue in self.settings.strict_fifo:
                blocked.add(job.queue)

    # -- the clock ------------------------------------------------------------------------------------------------

    def _take_fresh(self, remaining: set[str] | None) -> None:
        if remaining is not None:
            remaining.difference_update(self._fresh)
        self._fresh.clear()

    def run(self, arrivals: Sequence[SimJob] = (), *, until: float = INF, max_events: int = 1_000_000,
            wanted: set[str] | None = None) -> RunResult:
        """Run from `now` until no event is left, `until` is passed, `max_events` were processed, or every job in
        `wanted` has started (or can never fit). `arrivals` must be sorted by arrival time. Returns the RunResult."""
        arrivals = list(arrivals)
        index = 0
        t = self.now
        remaining = set(wanted) - self.result.never_fit if wanted is not None else None
        self._pass(t)
        self._take_fresh(remaining)
        events = 0
        while True:
            if remaining is not None and not remaining:
                break
            next_end = self._ends[0][0] if self._ends else INF
            next_arrival = arrivals[index].arrival if index < len(arrivals) else INF
            t = min(next_end, next_arrival)
            if t == INF or t > until:
                break
            if events >= max_events:
                self.result.truncated = True
                break
            self._advance(t)
            while self._ends and self._ends[0][0] <= t:
                self._end(heapq.heappop(self._ends)[2])
                events += 1
            while index < len(arrivals) and arrivals[index].arrival <= t:
                self.enqueue(arrivals[index])
                index += 1
                events += 1
            self._pass(t)
            self._take_fresh(remaining)
        if until < INF and math.isfinite(until):
            self._advance(until)
        self.result.events = events
        return self.result
