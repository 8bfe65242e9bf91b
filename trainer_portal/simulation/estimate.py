"""Estimated starts: the simulation repeated over seeded samples of run times, reduced to p10/p50/p90 per job.

A job's estimate is unknown (with the reason) rather than a guess when it can never fit the cluster as it is, when
it does not start within the horizon in at least 90% of the runs (its start waits on jobs that have no deadline
and no run-time history), or when the run was cut short by the work bound.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from trainer_portal.placement import ClusterSnapshot
from trainer_portal.simulation.core import DEADLINE, HISTORY, REPORTED, UNKNOWN, Simulation
from trainer_portal.simulation.durations import Durations
from trainer_portal.simulation.model import INF, RunningJob, SimJob, SimSettings

MAX_SAMPLES = 16
MIN_SAMPLES = 4
# Bounded work: about this many simulated admissions per estimate (a run admits every waiting job once), so a
# long queue gets fewer runs rather than a longer computation.
ADMISSION_BUDGET = 4_000
DEFAULT_HORIZON = 14 * 86400.0


@dataclass(frozen=True)
class Estimate:
    """One waiting job's estimated start (seconds on the simulator's clock) or None with the reason in `basis`."""

    key: str
    p10: float | None
    p50: float | None
    p90: float | None
    basis: str
    rank: int
    domain: str = ""


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    if ordered[high] == INF:
        return ordered[low] if position == low else INF
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def _ends_text(sources: Counter) -> str:
    known = sources[REPORTED] + sources[HISTORY] + sources[DEADLINE]
    ways = [label for label, key in (("reported remaining time", REPORTED), ("deadlines", DEADLINE),
                                    ("history", HISTORY)) if sources[key]]
    how = " or ".join(ways) or "history"
    if known == 1:
        text = f"1 running job ends by its {how.replace('deadlines', 'deadline')}"
    else:
        text = f"{known} running jobs end by their {how}"
    if sources[UNKNOWN]:
        text += f" ({sources[UNKNOWN]} more with no deadline and no history may hold their nodes indefinitely)"
    return text


def samples_for(waiting: int) -> int:
    """Return how many runs an estimate of `waiting` jobs makes: MAX_SAMPLES for short queues, fewer (never below
    MIN_SAMPLES) as the queue grows, so the work stays near ADMISSION_BUDGET admissions."""
    return max(MIN_SAMPLES, min(MAX_SAMPLES, ADMISSION_BUDGET // max(waiting, 1)))


@dataclass(frozen=True)
class ArrivalModel:
    """Future arrivals, bootstrapped from recent history: jobs arrive as a Poisson process of `rate` per second,
    each a copy of one of `templates` (its shape, runtime, size and priority; its run time drawn from history).
    Later jobs can still start before a waiting one: higher priority jumps the queue, and best-effort admission
    lets a small job take nodes a large gang at the head cannot use yet."""

    templates: tuple[SimJob, ...]
    rate: float

    def draw(self, rng: random.Random, start: float, horizon: float, limit: int = 20_000) -> list[SimJob]:
        """Return the arrivals of one run, sorted, at most `limit`."""
        if not self.templates or self.rate <= 0:
            return []
        out: list[SimJob] = []
        t = start
        while len(out) < limit:
            t += rng.expovariate(self.rate)
            if t > start + horizon:
                break
            template = self.templates[rng.randrange(len(self.templates))]
            out.append(SimJob(f"~future-{len(out)}", template.job, template.gpus, t, template.priority,
                              template.queue, None, None, template.deadline, template.runtime))
        return out


def arrival_model(history: Sequence[SimJob], *, now: float, window: float = 7 * 86400.0) -> ArrivalModel:
    """Return the ArrivalModel of the jobs in `history` that arrived within `window` seconds before `now`."""
    recent = tuple(job for job in history if now - window <= job.arrival <= now)
    span = min(window, now - min((job.arrival for job in recent), default=now))
    return ArrivalModel(recent, len(recent) / span if span > 0 else 0.0)


def estimate_starts(snapshot: ClusterSnapshot, running: Sequence[RunningJob], waiting: Sequence[SimJob],
                    durations: Durations, *, now: float, samples: int | None = None, seed: int = 0,
                    settings: SimSettings | None = None, horizon: float = DEFAULT_HORIZON,
                    max_events: int = 200_000, arrivals: ArrivalModel | None = None) -> dict[str, Estimate]:
    """Return an Estimate per waiting job: `samples` seeded runs from `now` (the same seed gives the same answer).

    `arrivals` adds future jobs bootstrapped from recent history to every run (without it, only the jobs known now
    compete). `samples` defaults to `samples_for(len(waiting))`. Work is bounded by `samples` × (`max_events` or
    the end of `horizon` seconds, whichever comes first); a run stops as soon as every waiting job has started.
    Raises nothing for unplaceable jobs (they are 'unknown')."""
    samples = samples_for(len(waiting)) if samples is None else max(int(samples), 1)
    waiting = sorted(waiting, key=SimJob.order_key)
    wanted = {job.key for job in waiting}
    draws: dict[str, list[float]] = {job.key: [] for job in waiting}
    domains: dict[str, Counter] = {job.key: Counter() for job in waiting}
    never: set[str] = set()
    truncated = False
    sources: Counter = Counter()
    impossible: dict = {}
    for sample in range(samples):
        sim = Simulation(snapshot, durations=durations, settings=settings, rng=random.Random(seed * 1_000_003 + sample),
                         now=now, impossible_cache=impossible)
        sim.add_running(running)
        for job in waiting:
            sim.enqueue(job)
        future = arrivals.draw(sim.rng, now, horizon) if arrivals is not None else []
        result = sim.run(future, until=now + horizon, max_events=max_events, wanted=wanted)
        truncated |= result.truncated
        never |= result.never_fit
        if sample == 0:
            sources = Counter(result.end_sources.values())
        for key in wanted:
            started = result.starts.get(key)
            draws[key].append(started.at if started else INF)
            if started and started.domain:
                domains[key][started.domain] += 1
    ends = _ends_text(sources)
    queue_rank: Counter = Counter()
    estimates = {}
    for rank, job in enumerate(waiting, start=1):
        queue_rank[job.queue] += 1
        place = f"you are {_ordinal(queue_rank[job.queue])} in {job.queue}" if job.queue else \
            f"you are {_ordinal(rank)} in line"
        if job.position is not None and job.queue:
            place = f"you are {_ordinal(job.position)} in {job.queue}"
        if job.key in never:
            estimates[job.key] = Estimate(job.key, None, None, None, "unknown: it does not fit the cluster even when "
                                          "every node is free (as the nodes are now)", rank)
            continue
        values = draws[job.key]
        p10, p50, p90 = (_quantile(values, q) for q in (0.1, 0.5, 0.9))
        if p90 == INF:
            why = ("the simulation stopped at its work bound first" if truncated else
                   f"it does not start within {horizon / 86400:.0f} days in enough runs: "
                   f"{sources[UNKNOWN]} running job(s) have no deadline and no run-time history")
            estimates[job.key] = Estimate(job.key, None, None, None, f"unknown: {why}", rank)
            continue
        domain = domains[job.key].most_common(1)[0][0] if domains[job.key] else ""
        where = f" for {domain}" if domain else ""
        later = " with arrivals like the last week's" if arrivals is not None and arrivals.templates else ""
        basis = f"{ends}; {place}{where}; {samples} simulated runs{later}"
        estimates[job.key] = Estimate(job.key, p10, p50, p90, basis, rank, domain)
    return estimates
