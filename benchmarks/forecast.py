"""Forecasts: estimated starts, replays and the backtest's accuracy (trainer_portal.simulation).

Scenarios (full / --quick):
- estimate: 1,000 (200) waiting gangs behind a full 10,000 (2,000)-node cluster (jobs seated from generated
  arrivals, run times from their history): `estimate_starts` with its default, work-bounded number of runs.
  Target ≤ 2 s. Baseline, same run: one sequential admission pass of the engine over the same queue
  (`explain_queue(sequential=True)`, what a single simulated moment costs) → ratio.
- replay: 7 (1.4) days of 5,000 (1,000) generated jobs on 10,000 (2,000) nodes (offered load ≈ 0.9). Target ≤ 60 s.
  Baseline, same run: placing every one of those jobs once on the idle cluster (`place`, the floor of any replay).
- backtest: a generated month of 12,000 jobs on 1,024 nodes (--quick: a week of 1,500 on 512), estimates at 120 (30)
  moments against the recorded starts:
  median and p90 absolute error, coverage of p10–p90; baseline: "now + the median wait so far".
Wall and process CPU time are both printed (the machine may be shared).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from trainer_portal.placement import admit_job, explain_queue, place, racks_for, synthetic_cluster
from trainer_portal.simulation import Durations, RunningJob, SimJob, estimate_starts, replay
from trainer_portal.simulation.backtest import backtest
from trainer_portal.simulation.estimate import samples_for
from trainer_portal.simulation.generate import generate_arrivals, generate_history
from trainer_portal.simulation.whatif import idle

TARGET_ESTIMATE_S = 2.0
TARGET_REPLAY_S = 60.0
# Offered load as jobs × size scale per (day × node): 0.54 keeps a 10k-node cluster about 90% busy with queues.
LOAD = 0.536


def _scale(jobs: int, days: float, nodes: int) -> float:
    return LOAD * days * nodes / jobs


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def _busy_queue(nodes: int, waiting: int):
    """Return (snapshot, running, waiting jobs, durations, now): a cluster filled by generated jobs in arrival
    order, the next `waiting` jobs queued behind it."""
    cluster = synthetic_cluster(racks=racks_for(nodes))
    arrivals = generate_arrivals(cluster, jobs=waiting * 4, days=7, seed=2, scale=_scale(5_000, 7, nodes))
    snap = idle(cluster)
    total = int(snap.alloc_gpu[: snap.size].sum())
    running, queue = [], []
    for job in arrivals:
        if len(queue) >= waiting:
            break
        full = int(snap.used_gpu[: snap.size].sum()) > 0.9 * total
        admission = None if full else admit_job(job.job, snap)
        if admission is None or not admission.fits:
            queue.append(SimJob(job.key, job.job, job.gpus, job.arrival, job.priority, runtime=job.runtime))
            continue
        names = tuple(snap.names[row] for row, pods in zip(admission.rows.tolist(), admission.taken[3].tolist(),
                                                            strict=True) for _ in range(int(pods)))
        running.append(RunningJob(job.key, names, pod_gpu=8, gpus=job.gpus, started=job.arrival, runtime=job.runtime))
    n = snap.size
    snap.used_cpu[:n] = 0
    snap.used_mem[:n] = 0
    durations = Durations.from_records((job.runtime, job.gpus, job.duration) for job in arrivals)
    now = max(job.arrival for job in queue)
    return snap, running, queue, durations, now


def bench_estimate(nodes: int, waiting: int, rounds: int) -> bool:
    snap, running, queue, durations, now = _busy_queue(nodes, waiting)
    walls, cpus, base = [], [], []
    estimates = {}
    for round_ in range(rounds):
        estimates, wall, cpu = _timed(lambda: estimate_starts(snap, running, queue, durations, now=now, seed=1))
        walls.append(wall)
        cpus.append(cpu)
        _, wall, _ = _timed(lambda: explain_queue([job.job for job in queue], snap.copy(), sequential=True))
        base.append(wall)
        del round_
    known = [e for e in estimates.values() if e.p50 is not None]
    spread = np.median([e.p90 - e.p10 for e in known]) / 3600 if known else float("nan")
    p50 = float(np.median(walls))
    ratio = p50 / float(np.median(base))
    ok = p50 <= TARGET_ESTIMATE_S
    print(f"estimate: {len(queue):,} waiting gangs, {len(running):,} running, {nodes:,} nodes, "
          f"{samples_for(len(queue))} runs: wall p50 {p50:.2f} s / max {max(walls):.2f} s, cpu p50 "
          f"{np.median(cpus):.2f} s (target ≤ {TARGET_ESTIMATE_S:.0f} s: {'ok' if ok else 'MISSED'}); "
          f"baseline one sequential admission pass {np.median(base):.3f} s → ratio {ratio:.1f}×; "
          f"{len(known):,} known, median p10–p90 width {spread:.1f} h")
    return ok


def bench_replay(nodes: int, jobs: int, days: float) -> bool:
    cluster = synthetic_cluster(racks=racks_for(nodes))
    arrivals = generate_arrivals(cluster, jobs=jobs, days=days, seed=1, scale=_scale(jobs, days, nodes))
    outcome, wall, cpu = _timed(lambda: replay(cluster, arrivals))
    empty = idle(cluster)
    _, base, _ = _timed(lambda: [place(job.job, empty, with_fragmentation=False, details=False) for job in arrivals])
    ok = wall <= TARGET_REPLAY_S
    result = outcome.to_dict()
    print(f"replay: {days:g} days, {jobs:,} jobs, {nodes:,} nodes: wall {wall:.1f} s, cpu {cpu:.1f} s (target ≤ "
          f"{TARGET_REPLAY_S:.0f} s: {'ok' if ok else 'MISSED'}); baseline place each job once {base:.2f} s → "
          f"ratio {wall / base:.1f}×; wait p50/p95 {_h(result['waitP50Seconds'])}/{_h(result['waitP95Seconds'])}, "
          f"utilization {result['gpuUtilization']:.2f}, fragmentation {result['fragmentation']:.2f}")
    return ok


def _h(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds / 3600:.2f} h"


def bench_backtest(nodes: int, jobs: int, days: float, checkpoints: int) -> bool:
    cluster = synthetic_cluster(racks=racks_for(nodes))
    records, _, _ = _timed(lambda: generate_history(cluster, jobs=jobs, days=days, seed=4,
                                                    scale=1.4 * _scale(jobs, days, nodes)))
    report, wall, _ = _timed(lambda: backtest(cluster, records, checkpoints=checkpoints, seed=1))
    if report.median_abs_error is None:
        print("backtest: no waiting job at any checkpoint (history too light)")
        return False
    ratio = report.median_abs_error / max(report.baseline_median_abs_error, 1e-9)
    print(f"backtest: {days:g} generated days, {jobs:,} jobs on {nodes:,} nodes, {report.checkpoints} moments, "
          f"{report.estimates:,} estimates ({report.unknown} unknown) in {wall:.1f} s: median |error| "
          f"{_h(report.median_abs_error)}, p90 |error| {_h(report.p90_abs_error)}, coverage of p10–p90 "
          f"{report.coverage:.0%}; baseline (now + median wait so far) median |error| "
          f"{_h(report.baseline_median_abs_error)} → ratio {ratio:.2f}×")
    if report.held_out:
        print(f"backtest calibration (each moment calibrated on earlier moments' estimates whose jobs had started; "
              f"{report.held_out:,} held-out estimates): coverage of p10–p90 raw {report.raw_coverage_held_out:.0%} "
              f"→ calibrated {report.calibrated_coverage:.0%} (target 80%); median width "
              f"{_h(report.raw_median_width)} → {_h(report.calibrated_median_width)}; median |error| of p50 "
              f"unchanged {_h(report.median_abs_error)}")
    else:
        print("backtest calibration: too few estimates whose jobs had started before the later moments")
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the three scenarios; return 0 when the timing targets were met, 1 otherwise."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.forecast", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--only", choices=("estimate", "replay", "backtest"), default=None)
    args = parser.parse_args(argv)
    quick = args.quick
    ok = True
    if args.only in (None, "estimate"):
        ok &= bench_estimate(2_000 if quick else 10_000, 200 if quick else 1_000, 1 if quick else 3)
    if args.only in (None, "replay"):
        ok &= bench_replay(2_000 if quick else 10_000, 1_000 if quick else 5_000, 1.4 if quick else 7)
    if args.only in (None, "backtest"):
        bench_backtest(512 if quick else 1_024, 1_500 if quick else 12_000, 7 if quick else 30, 30 if quick else 120)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
