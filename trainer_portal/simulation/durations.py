"""Run-time quantiles from history: what a job of this runtime and size usually runs for.

Jobs are grouped by (runtime, size bucket) where the bucket is the power of two at or above the job's GPUs; a group
with fewer than `min_samples` finished jobs falls back to all runtimes of that size bucket, then to every job. A
sample is drawn by inverse-transform sampling over the empirical quantiles (linear interpolation between order
statistics), conditioned on the time already run: a job that has run for an hour is drawn from the runs longer
than an hour.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

# When a running job has outlived every recorded run of its kind we still need an end: assume it is close to done
# and give it this fraction of its elapsed time again (at least a minute). Said in the basis as "history".
OUTLIVED_FRACTION = 0.1
MIN_REMAINING = 60.0


def size_bucket(gpus: int) -> int:
    """Return the power of two at or above `gpus` (0 for a job without GPUs)."""
    if gpus <= 0:
        return 0
    return 1 << max(int(gpus) - 1, 0).bit_length()


@dataclass
class Durations:
    """Sorted recorded run times (seconds) by (runtime, size bucket), by size bucket, and overall."""

    min_samples: int = 5
    by_kind: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    by_size: dict[int, list[float]] = field(default_factory=dict)
    overall: list[float] = field(default_factory=list)

    @classmethod
    def from_records(cls, records: Iterable[tuple[str, int, float]], min_samples: int = 5) -> Durations:
        """Return the quantile tables of `records` ((runtime name, total GPUs, run seconds)); non-positive or
        non-finite run times are ignored."""
        table = cls(min_samples=min_samples)
        for runtime, gpus, seconds in records:
            table.add(runtime, gpus, seconds)
        table.finish()
        return table

    def add(self, runtime: str, gpus: int, seconds: float) -> None:
        """Add one finished run (call `finish` before sampling). Returns nothing."""
        if not (seconds > 0 and math.isfinite(seconds)):
            return
        bucket = size_bucket(gpus)
        self.by_kind.setdefault((runtime, bucket), []).append(float(seconds))
        self.by_size.setdefault(bucket, []).append(float(seconds))
        self.overall.append(float(seconds))

    def finish(self) -> None:
        """Sort every table. Returns nothing."""
        for table in (*self.by_kind.values(), *self.by_size.values(), self.overall):
            table.sort()

    def __len__(self) -> int:
        return len(self.overall)

    def table_for(self, runtime: str, gpus: int) -> list[float]:
        """Return the sorted run times that describe a job of `runtime` with `gpus` GPUs ([] without history)."""
        bucket = size_bucket(gpus)
        for table in (self.by_kind.get((runtime, bucket)), self.by_size.get(bucket), self.overall):
            if table and len(table) >= self.min_samples:
                return table
        return self.overall

    def sample(self, runtime: str, gpus: int, rng: random.Random, elapsed: float = 0.0) -> float | None:
        """Return a remaining run time (seconds) for a job that has run `elapsed` seconds, or None without history."""
        table = self.table_for(runtime, gpus)
        if not table:
            return None
        start = bisect.bisect_right(table, elapsed)
        if start >= len(table):
            return max(MIN_REMAINING, OUTLIVED_FRACTION * elapsed)
        tail = table[start:] if start else table
        position = rng.random() * (len(tail) - 1)
        low = int(position)
        high = min(low + 1, len(tail) - 1)
        value = tail[low] + (tail[high] - tail[low]) * (position - low)
        return max(value - elapsed, 1.0)

    def quantile(self, runtime: str, gpus: int, q: float) -> float | None:
        """Return the `q` quantile (0..1) of the run times of this kind, or None without history."""
        table = self.table_for(runtime, gpus)
        if not table:
            return None
        position = min(max(q, 0.0), 1.0) * (len(table) - 1)
        low = int(position)
        high = min(low + 1, len(table) - 1)
        return table[low] + (table[high] - table[low]) * (position - low)
