"""A discrete-event simulator of admission over the placement engine: estimated starts, replays, what-ifs.

Pure (numpy and `trainer_portal.placement` only): no framework, no cluster client, no app. The state is a cluster
snapshot, the running jobs (the nodes they hold and when they end) and the waiting queue in cluster order; the events
are job ends and arrivals; at every event the waiting jobs are offered to the placement engine in order on the
evolving snapshot. Run times that are not known are drawn from history quantiles, so one run is one sample: the
estimate repeats it over seeded samples and reports quantiles. See docs/forecasts.md.

    durations = Durations.from_records(history)              # (runtime, GPUs, seconds) of finished jobs
    estimates = estimate_starts(snapshot, running, waiting, durations, now=t, samples=16, seed=1)
    outcome = replay(snapshot, arrivals)                     # recorded arrivals under a setting
    before, after = compare(snapshot, arrivals, candidate)   # a what-if, side by side
"""

from __future__ import annotations

from trainer_portal.simulation.backtest import BacktestReport, backtest
from trainer_portal.simulation.durations import Durations
from trainer_portal.simulation.estimate import Estimate, estimate_starts
from trainer_portal.simulation.model import RunningJob, SimJob, SimSettings, job_for
from trainer_portal.simulation.whatif import Candidate, ReplayOutcome, compare, replay

__all__ = [
    "BacktestReport",
    "Candidate",
    "Durations",
    "Estimate",
    "ReplayOutcome",
    "RunningJob",
    "SimJob",
    "SimSettings",
    "backtest",
    "compare",
    "estimate_starts",
    "job_for",
    "replay",
]
