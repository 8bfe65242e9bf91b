"""Backtest: what the estimator would have said at past moments against when each job actually started.

At each checkpoint the state is rebuilt from the records alone: the jobs running then (placed on the idle
snapshot in the order they started, since records do not say which nodes they held), the jobs waiting then, and
run-time history made only of the jobs that had finished by then (no look-ahead). The estimate's p50 is compared
with the true start (absolute error) and the p10–p90 range is checked for the true start (coverage). Jobs that
arrive after a checkpoint are not known to it, which is the main source of error when they have higher priority.
The baseline is the naive answer "now + the median wait of the jobs admitted so far".

Calibration is evaluated without peeking: the estimates of a checkpoint are calibrated (`calibration.calibrate`)
on the estimates of earlier checkpoints whose jobs had started by then, and scored against the true start like the
raw range. The report keeps the estimates it made (`history`) so the portal can calibrate today's estimates on
them.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from trainer_portal.placement import ClusterSnapshot, admit_job
from trainer_portal.simulation.calibration import DEFAULT_MIN_HISTORY, DEFAULT_WINDOW, PastEstimate, calibrate
from trainer_portal.simulation.durations import Durations
from trainer_portal.simulation.estimate import arrival_model, estimate_starts
from trainer_portal.simulation.model import HistoryRecord, RunningJob
from trainer_portal.simulation.whatif import idle


@dataclass
class BacktestReport:
    """Accuracy over every (checkpoint, waiting job) pair whose true start is known: median and p90 absolute error
    of p50 (seconds), coverage of p10–p90 (0..1), how many estimates were unknown, and the naive baseline's
    median absolute error."""

    checkpoints: int = 0
    estimates: int = 0
    unknown: int = 0
    median_abs_error: float | None = None
    p90_abs_error: float | None = None
    coverage: float | None = None
    baseline_median_abs_error: float | None = None
    held_out: int = 0
    raw_coverage_held_out: float | None = None
    calibrated_coverage: float | None = None
    calibrated_median_width: float | None = None
    raw_median_width: float | None = None
    errors: list[float] = field(default_factory=list, repr=False)
    history: list[PastEstimate] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        """Return the stored form: the API's keys, the calibration's evaluation, and the last DEFAULT_WINDOW
        estimates as [now, p10, p50, p90, actual start] (what production calibrates on)."""
        return {"checkpoints": self.checkpoints, "estimates": self.estimates, "unknown": self.unknown,
                "medianAbsErrorSeconds": self.median_abs_error, "p90AbsErrorSeconds": self.p90_abs_error,
                "coverage": self.coverage, "baselineMedianAbsErrorSeconds": self.baseline_median_abs_error,
                "heldOut": self.held_out, "rawCoverageHeldOut": self.raw_coverage_held_out,
                "calibratedCoverage": self.calibrated_coverage,
                "history": [[e.now, e.p10, e.p50, e.p90, e.actual] for e in self.history[-DEFAULT_WINDOW:]]}


def running_at(snapshot: ClusterSnapshot, records: Sequence[HistoryRecord], t: float) -> tuple[
        ClusterSnapshot, list[RunningJob]]:
    """Return an idle copy of `snapshot` with the jobs running at `t` placed on it (start order), and those jobs."""
    snap = idle(snapshot)
    running = []
    live = sorted((r for r in records if r.start is not None and r.start <= t and (r.end is None or r.end > t)),
                  key=lambda r: (r.start, r.key))
    for record in live:
        admission = admit_job(record.sim_job().job, snap)
        if not admission.fits:
            continue
        rows, taken = admission.rows, admission.taken
        nodes = tuple(name for row, pods in zip(rows.tolist(), taken[3].tolist(), strict=True)
                      for name in [snap.names[row]] * int(pods))
        running.append(RunningJob(record.key, nodes, record.gpus_per_node, 0, 0, record.gpus, record.start,
                                  record.runtime, record.deadline))
    # The CPU/memory of a seated job is charged by the engine but released by the simulator from pod_cpu/pod_mem;
    # give them back in full so only GPUs (what history records) decide.
    n = snap.size
    snap.used_cpu[:n] = 0
    snap.used_mem[:n] = 0
    return snap, running


def backtest(snapshot: ClusterSnapshot, records: Sequence[HistoryRecord], *, checkpoints: int = 24,
             samples: int = 8, seed: int = 0, max_waiting: int = 200, with_arrivals: bool = False,
             progress: Callable[[float], None] | None = None, window: int = DEFAULT_WINDOW,
             min_history: int = DEFAULT_MIN_HISTORY) -> BacktestReport:
    """Return the BacktestReport of `records` on `snapshot` at `checkpoints` evenly spaced moments (bounded work:
    at most `max_waiting` waiting jobs per checkpoint, the oldest first). Each checkpoint's estimates are also
    calibrated on the earlier checkpoints' estimates whose jobs had started by then (`window`, `min_history` as
    in `calibration.calibrate`); the held-out coverage compares raw and calibrated ranges on the same estimates."""
    report = BacktestReport()
    if not records:
        return report
    first = min(r.arrival for r in records)
    last = max(r.start if r.start is not None else r.arrival for r in records)
    errors, baseline, inside = [], [], 0
    made: list[PastEstimate] = []
    held_raw, held_calibrated, raw_widths, calibrated_widths = 0, 0, [], []
    for index in range(checkpoints):
        t = first + (last - first) * (index + 1) / (checkpoints + 1)
        finished = [r for r in records if r.end is not None and r.end <= t]
        durations = Durations.from_records((r.runtime, r.gpus, r.end - r.start) for r in finished)
        admitted = [r.start - r.arrival for r in records if r.start is not None and r.start <= t]
        naive = statistics.median(admitted) if admitted else 0.0
        waiting = [r for r in records if r.arrival <= t and (r.start is None or r.start > t)]
        waiting = sorted(waiting, key=lambda r: r.arrival)[:max_waiting]
        if not waiting:
            continue
        snap, running = running_at(snapshot, records, t)
        jobs = [r.sim_job(with_duration=False) for r in waiting]
        model = arrival_model([r.sim_job(with_duration=False) for r in records if r.arrival <= t], now=t) \
            if with_arrivals else None
        estimates = estimate_starts(snap, running, jobs, durations, now=t, samples=samples, seed=seed + index,
                                    arrivals=model)
        report.checkpoints += 1
        # Only what was known at t: earlier estimates whose jobs had started by t (start order, oldest last).
        known = sorted((e for e in made if e.actual <= t), key=lambda e: (e.actual, e.now))
        calibration = calibrate(known, window=window, min_history=min_history)
        for record in waiting:
            if record.start is None:
                continue
            estimate = estimates[record.key]
            report.estimates += 1
            if estimate.p50 is None:
                report.unknown += 1
                continue
            errors.append(abs(estimate.p50 - record.start))
            baseline.append(abs(max(t, record.arrival + naive) - record.start))
            inside += estimate.p10 <= record.start <= estimate.p90
            made.append(PastEstimate(t, estimate.p10, estimate.p50, estimate.p90, record.start))
            if calibration.active:
                low, _, high = calibration.apply(t, estimate.p10, estimate.p50, estimate.p90)
                report.held_out += 1
                held_raw += estimate.p10 <= record.start <= estimate.p90
                held_calibrated += low <= record.start <= high
                raw_widths.append(estimate.p90 - estimate.p10)
                calibrated_widths.append(high - low)
        if progress is not None:
            progress((index + 1) / checkpoints)
    if errors:
        report.errors = errors
        report.median_abs_error = float(np.median(errors))
        report.p90_abs_error = float(np.quantile(errors, 0.9))
        report.coverage = inside / len(errors)
        report.baseline_median_abs_error = float(np.median(baseline))
        report.history = sorted(made, key=lambda e: (e.actual, e.now))
    if report.held_out:
        report.raw_coverage_held_out = held_raw / report.held_out
        report.calibrated_coverage = held_calibrated / report.held_out
        report.raw_median_width = float(np.median(raw_widths))
        report.calibrated_median_width = float(np.median(calibrated_widths))
    return report
