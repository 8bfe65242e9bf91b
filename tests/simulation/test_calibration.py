"""Calibration of the estimated-start range on hand-made error distributions: a too-narrow range is widened to the
target coverage on estimates it was not fitted on; with too little history the raw range stays and says so."""

from __future__ import annotations

import random

from trainer_portal.simulation.calibration import PastEstimate, calibrate


def narrow_estimates(count: int, seed: int) -> list[PastEstimate]:
    """Estimates whose p10–p90 is ±5% of the predicted wait while the true start is off by a normal error of 40%
    of it, late-skewed (+20%): the raw range holds the true start about 10% of the time."""
    rng = random.Random(seed)
    out = []
    for index in range(count):
        now = index * 100.0
        wait = rng.choice((1_800.0, 7_200.0, 36_000.0))
        p50 = now + wait
        actual = max(now, p50 + wait * rng.gauss(0.2, 0.4))
        out.append(PastEstimate(now, p50 - 0.05 * wait, p50, p50 + 0.05 * wait, actual))
    return out


def coverage(estimates: list[PastEstimate], calibration) -> float:
    inside = 0
    for e in estimates:
        low, _, high = calibration.apply(e.now, e.p10, e.p50, e.p90)
        inside += low <= e.actual <= high
    return inside / len(estimates)


def test_a_too_narrow_range_is_widened_to_the_target_coverage_on_held_out_estimates():
    calibration = calibrate(narrow_estimates(400, seed=1))
    held_out = narrow_estimates(2_000, seed=2)
    raw = sum(e.p10 <= e.actual <= e.p90 for e in held_out) / len(held_out)
    assert raw < 0.2
    assert calibration.active and calibration.history == 400
    assert 0.77 <= coverage(held_out, calibration) <= 0.86
    # Late-skewed errors widen the upper side more than the lower one.
    assert calibration.high > calibration.low
    assert "calibrated on the last 400 estimates" in calibration.note


def test_with_too_little_history_the_raw_range_stays_and_the_note_says_so():
    calibration = calibrate(narrow_estimates(10, seed=1), min_history=30)
    assert not calibration.active
    assert calibration.apply(0.0, 90.0, 100.0, 110.0) == (90.0, 100.0, 110.0)
    assert calibration.note.startswith("range from the simulated runs only, not calibrated: only 10 past estimates")


def test_the_calibrated_range_keeps_its_order_and_never_starts_before_now():
    # Every past job started inside a wide range: the quantiles are negative and narrow it, but never past p50.
    history = [PastEstimate(0.0, 0.0, 5_000.0, 20_000.0, 5_000.0) for _ in range(50)]
    calibration = calibrate(history)
    low, p50, high = calibration.apply(1_000.0, 900.0, 3_000.0, 9_000.0)
    assert 1_000.0 <= low <= p50 <= high
