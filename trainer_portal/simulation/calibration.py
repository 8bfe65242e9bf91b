"""Calibrating the estimated-start range from the recorded errors of past estimates (split conformal).

The simulated p10–p90 range reflects only run-time sampling over a handful of runs, so it is far too narrow: the
true start falls outside it much more often than 20% of the time (arrivals of higher priority, the real placement of
running jobs, cancellations — nothing the runs sample). Calibration measures how far outside it past estimates
missed and widens new ranges by that much.

Each past estimate whose job has since started gives two scores in units that grow with the square root of its
predicted wait (`scale = √(max(p50 − now, MIN_WAIT) · 1 h)`: a 1-hour estimate's misses count in hours, a 16-hour
one's in 4-hour units), since a long estimate misses by more seconds than a short one but — measured on the
generated month — not in proportion (scaling by the wait itself held the same 80% with ranges half as wide again,
an absolute scale let long waits escape on the short history):

    low  = (p10 − actual) / scale      (> 0: it started before the range)
    high = (actual − p90) / scale      (> 0: it started after the range)

The calibrated range is `[p10 − q_low·scale, p90 + q_high·scale]` where q_low / q_high are the conformal
quantiles (the ⌈(n+1)(1−α)⌉-th smallest score, α = 10% per side) of the last `window` scores: on exchangeable data
each side misses at most 10% of the time, so the range holds the true start at least 80% of the time. A negative
quantile narrows a side (never past p50). The lower end is never before `now`. With fewer than `min_history`
scores the raw simulation range is kept and `Calibration.note` says so.

Pure and deterministic: the same history gives the same calibration.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MIN_WAIT = 600.0
UNIT = 3600.0
DEFAULT_WINDOW = 500
DEFAULT_MIN_HISTORY = 30
MISS_PER_SIDE = 0.10


@dataclass(frozen=True)
class PastEstimate:
    """One past estimate and what happened: the moment it was made, its p10/p50/p90 and the job's actual start
    (all seconds on one clock)."""

    now: float
    p10: float
    p50: float
    p90: float
    actual: float

    @property
    def scale(self) -> float:
        """Return the unit of the scores (seconds): see the module docstring."""
        return wait_scale(self.p50 - self.now)

    @property
    def scores(self) -> tuple[float, float]:
        """Return (low, high): how far before p10 / after p90 the job started, in units of `scale`."""
        return (self.p10 - self.actual) / self.scale, (self.actual - self.p90) / self.scale


def wait_scale(wait: float) -> float:
    """Return the unit (seconds) in which the misses of an estimate of a `wait`-second wait are measured."""
    return math.sqrt(max(wait, MIN_WAIT) * UNIT)


def _conformal_quantile(scores: Sequence[float], miss: float) -> float:
    """Return the ⌈(n+1)(1−miss)⌉-th smallest of `scores` (the largest when that rank exceeds n)."""
    ordered = sorted(scores)
    rank = min(math.ceil((len(ordered) + 1) * (1 - miss)), len(ordered))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Calibration:
    """How to widen a simulated range: `low` and `high` (in units of `wait_scale`) or, when `active` is
    false, nothing (too little history). `history` is how many past estimates it rests on, `coverage` and
    `median_abs_error` how good those were as simulated (None without history)."""

    active: bool
    low: float = 0.0
    high: float = 0.0
    history: int = 0
    min_history: int = DEFAULT_MIN_HISTORY
    coverage: float | None = None
    median_abs_error: float | None = None

    def apply(self, now: float, p10: float, p50: float, p90: float) -> tuple[float, float, float]:
        """Return the calibrated (p10, p50, p90) of one estimate made at `now` (unchanged when not active)."""
        if not self.active:
            return p10, p50, p90
        scale = wait_scale(p50 - now)
        low = min(max(p10 - self.low * scale, now), p50)
        high = max(p90 + self.high * scale, p50)
        return low, p50, high

    @property
    def note(self) -> str:
        """Return the basis's sentence about the range: what it is calibrated on and how good recent estimates
        were, or that it is the raw simulation range and why."""
        if not self.active:
            have = f"only {self.history}" if self.history else "no"
            return (f"range from the simulated runs only, not calibrated: {have} past estimates whose jobs started "
                    f"(at least {self.min_history} needed)")
        return (f"range calibrated on the last {self.history} estimates whose jobs started: widened so that "
                f"{1 - 2 * MISS_PER_SIDE:.0%} of them would have held the true start (as simulated, "
                f"{self.coverage:.0%} did; median error {_duration(self.median_abs_error or 0.0)})")


def _duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def calibrate(history: Iterable[PastEstimate], *, window: int = DEFAULT_WINDOW,
              min_history: int = DEFAULT_MIN_HISTORY, miss_per_side: float = MISS_PER_SIDE) -> Calibration:
    """Return the Calibration from the last `window` of `history` (oldest first: later items are more recent);
    inactive (the raw range stays) with fewer than `min_history` past estimates."""
    recent = list(history)[-window:] if window > 0 else []
    if len(recent) < max(min_history, 1):
        return Calibration(False, history=len(recent), min_history=min_history)
    lows, highs = zip(*(item.scores for item in recent), strict=True)
    inside = sum(1 for item in recent if item.p10 <= item.actual <= item.p90)
    error = statistics.median(abs(item.actual - item.p50) for item in recent)
    return Calibration(True, _conformal_quantile(lows, miss_per_side), _conformal_quantile(highs, miss_per_side),
                       len(recent), min_history, inside / len(recent), float(error))
