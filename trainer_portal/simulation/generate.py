"""Generated history for benchmarks and tests: Poisson arrivals of gangs of mixed sizes and runtimes, replayed
on a cluster so every record has the start the placement engine gave it."""

from __future__ import annotations

import math
import random

from trainer_portal.placement import ClusterSnapshot
from trainer_portal.simulation.model import HistoryRecord, SimJob, job_for
from trainer_portal.simulation.whatif import replay

# (nodes, weight): many small jobs, a tail of large gangs.
SIZES = ((1, 30), (2, 18), (4, 16), (8, 14), (16, 10), (32, 6), (64, 4), (128, 2))
# runtime name → median run time (seconds) and the spread of its log-normal run times.
RUNTIMES = {"torch-distributed": (4 * 3600.0, 0.6), "deepspeed": (8 * 3600.0, 0.5), "mlx": (1 * 3600.0, 0.8),
            "jax": (3 * 3600.0, 0.7)}


def topology_for(snapshot: ClusterSnapshot, nodes: int) -> str | None:
    """Return the topology key a runtime of that size would ask for: rack up to 16 nodes, block up to 128, else
    zone."""
    keys = snapshot.keys
    return keys.rack if nodes <= 16 else keys.block if nodes <= 128 else keys.zone


def generate_arrivals(snapshot: ClusterSnapshot, *, jobs: int, days: float, seed: int = 0,
                      scale: float = 1.0) -> list[SimJob]:
    """Return `jobs` SimJobs arriving as a Poisson process over `days`, sizes from SIZES (× `scale`, at least one
    node, at most a quarter of the cluster so every job fits somewhere), run times log-normal per runtime, a
    priority of 0 or (one in ten) 100. Deterministic for `seed`."""
    rng = random.Random(seed)
    span = days * 86400.0
    names = list(RUNTIMES)
    sizes, weights = zip(*SIZES, strict=True)
    t = 0.0
    out = []
    for index in range(jobs):
        t += rng.expovariate(jobs / span)
        runtime = rng.choice(names)
        median, sigma = RUNTIMES[runtime]
        nodes = min(max(1, round(rng.choices(sizes, weights)[0] * scale)), max(snapshot.size // 4, 1))
        duration = median * math.exp(rng.gauss(0.0, sigma))
        priority = 100 if rng.random() < 0.1 else 0
        key = f"job-{index:06d}"
        out.append(SimJob(key, job_for(key, nodes, {"nvidia.com/gpu": 8}, topology_for(snapshot, nodes)),
                          nodes * 8, t, priority, "", None, duration, None, runtime))
    return out


def generate_history(snapshot: ClusterSnapshot, *, jobs: int, days: float, seed: int = 0,
                     scale: float = 1.0) -> list[HistoryRecord]:
    """Return the HistoryRecords of `generate_arrivals` replayed on an idle `snapshot` (start from the engine)."""
    arrivals = generate_arrivals(snapshot, jobs=jobs, days=days, seed=seed, scale=scale)
    outcome = replay(snapshot, arrivals, until=float("inf"))
    records = []
    for job in arrivals:
        start = outcome.starts.get(job.key)
        request = job.job[0]
        records.append(HistoryRecord(job.key, job.runtime, request.pod_count, 8, request.topology_key, job.arrival,
                                     start, start + job.duration if start is not None else None, job.priority))
    return records
