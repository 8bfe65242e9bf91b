"""The simulator on hand-made histories whose answers are known, and its properties (deterministic, a candidate
equal to the current setting changes nothing)."""

from __future__ import annotations

import pytest

from trainer_portal.placement import admit_job, synthetic_cluster
from trainer_portal.placement.snapshot import next_stamp
from trainer_portal.simulation import Candidate, Durations, RunningJob, SimJob, SimSettings, estimate_starts, job_for
from trainer_portal.simulation.backtest import backtest
from trainer_portal.simulation.generate import generate_arrivals, generate_history
from trainer_portal.simulation.whatif import NodeChange, compare, idle, replay

GPU = {"nvidia.com/gpu": 8}


def seat(snapshot, key, nodes, **fields) -> RunningJob:
    """Place a running gang of `nodes` whole nodes on `snapshot` and return it as a RunningJob."""
    admission = admit_job(job_for(key, nodes, GPU), snapshot)
    assert admission.fits
    names = tuple(snapshot.names[row] for row in admission.rows.tolist())
    return RunningJob(key, names, pod_gpu=8, gpus=nodes * 8, **fields)


def gang(key, nodes, arrival=0.0, topology_key=None, **fields) -> SimJob:
    return SimJob(key, job_for(key, nodes, GPU, topology_key), nodes * 8, arrival, **fields)


def test_one_gang_waits_for_one_running_jobs_deadline():
    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=1, nodes_per_rack=4)
    running = seat(snapshot, "holder", 4, started=0.0, deadline=3600.0)
    estimates = estimate_starts(snapshot, [running], [gang("waiter", 2, arrival=10.0)], Durations(), now=600.0)
    estimate = estimates["waiter"]
    assert (estimate.p10, estimate.p50, estimate.p90) == (3600.0, 3600.0, 3600.0)
    assert estimate.basis.startswith("1 running job ends by its deadline; you are 1st in line")


def test_priority_jumps_the_fifo_order():
    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=1, nodes_per_rack=4)
    running = seat(snapshot, "holder", 4, started=0.0, deadline=1000.0)
    old = gang("old", 4, arrival=1.0, duration=500.0)
    urgent = gang("urgent", 4, arrival=2.0, priority=100, duration=500.0)
    fifo = estimate_starts(snapshot, [running], [old, gang("young", 4, arrival=2.0, duration=500.0)], Durations(),
                           now=10.0)
    assert fifo["old"].p50 == 1000.0 and fifo["young"].p50 == 1500.0
    ranked = estimate_starts(snapshot, [running], [old, urgent], Durations(), now=10.0)
    assert ranked["urgent"].p50 == 1000.0 and ranked["old"].p50 == 1500.0


def test_running_job_without_deadline_or_history_makes_the_start_unknown():
    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=1, nodes_per_rack=2)
    running = seat(snapshot, "forever", 2, started=0.0)
    estimate = estimate_starts(snapshot, [running], [gang("waiter", 1)], Durations(), now=5.0)["waiter"]
    assert estimate.p50 is None and estimate.basis.startswith("unknown:")
    assert "no deadline and no run-time history" in estimate.basis


def test_a_job_larger_than_the_cluster_is_unknown_not_guessed():
    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=1, nodes_per_rack=2)
    estimate = estimate_starts(snapshot, [], [gang("huge", 3)], Durations(), now=0.0)["huge"]
    assert estimate.p50 is None and "does not fit the cluster even when every node is free" in estimate.basis


def test_history_quantiles_give_a_range_and_the_same_seed_the_same_range():
    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=1, nodes_per_rack=2)
    running = seat(snapshot, "holder", 2, started=0.0, runtime="torch")
    durations = Durations.from_records(("torch", 16, float(s)) for s in range(1000, 2001, 100))
    first = estimate_starts(snapshot, [running], [gang("waiter", 2)], durations, now=0.0, samples=32, seed=7)
    again = estimate_starts(snapshot, [running], [gang("waiter", 2)], durations, now=0.0, samples=32, seed=7)
    estimate = first["waiter"]
    assert first == again
    assert 1000.0 <= estimate.p10 < estimate.p50 < estimate.p90 <= 2000.0
    assert "ends by its history" in estimate.basis


def test_a_runtime_moved_from_zone_to_rack_waits_longer():
    # Two racks of 4 nodes in one zone, each half busy: a 4-node gang fits the zone now, a single rack only once one
    # of the running jobs ends.
    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=2, nodes_per_rack=4)
    keys = snapshot.keys
    racks = snapshot.domain[2, : snapshot.size]
    holders = []
    for key, rack, deadline in (("a", 0, 1000.0), ("b", 1, 2000.0)):
        rows = [int(row) for row in (racks == rack).nonzero()[0][:2]]
        snapshot.used_gpu[rows] += 8
        snapshot.used_pods[rows] += 1
        holders.append(RunningJob(key, tuple(snapshot.names[r] for r in rows), pod_gpu=8, gpus=16, deadline=deadline))
    snapshot.version = next_stamp()
    first, second = holders
    arrivals = [gang("w", 4, arrival=0.0, topology_key=keys.zone, runtime="torch", duration=100.0)]
    zone = estimate_starts(snapshot, [first, second], arrivals, Durations(), now=0.0)["w"]
    rack = estimate_starts(snapshot, [first, second], arrivals, Durations(), now=0.0,
                           settings=SimSettings(topology={"torch": keys.rack}))["w"]
    assert zone.p50 == 0.0
    assert rack.p50 == 1000.0


def test_strict_fifo_blocks_behind_the_head_best_effort_does_not():
    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=1, nodes_per_rack=4)
    running = seat(snapshot, "holder", 2, started=0.0, deadline=1000.0)
    head = gang("head", 4, arrival=1.0, queue="team", duration=100.0)
    small = gang("small", 1, arrival=2.0, queue="team", duration=100.0)
    best_effort = estimate_starts(snapshot, [running], [head, small], Durations(), now=0.0)
    strict = estimate_starts(snapshot, [running], [head, small], Durations(), now=0.0,
                             settings=SimSettings(strict_fifo=frozenset({"team"})))
    assert best_effort["small"].p50 == 0.0
    assert strict["small"].p50 == 1100.0


def test_quota_holds_a_queue_back():
    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=1, nodes_per_rack=4)
    jobs = [gang("one", 2, queue="q", duration=100.0), gang("two", 2, arrival=1.0, queue="q", duration=100.0)]
    free = estimate_starts(snapshot, [], jobs, Durations(), now=0.0)
    capped = estimate_starts(snapshot, [], jobs, Durations(), now=0.0, settings=SimSettings(quotas={"q": 16}))
    assert free["two"].p50 == 0.0 and capped["two"].p50 == 100.0


@pytest.mark.parametrize("seed", [1, 2, 3], ids=["seed-1", "seed-2", "seed-3"])
def test_a_candidate_equal_to_the_current_setting_changes_nothing(seed):
    snapshot = synthetic_cluster(zones=2, blocks_per_zone=2, racks=8, nodes_per_rack=4)
    arrivals = generate_arrivals(snapshot, jobs=120, days=1, seed=seed, scale=0.6)
    same = Candidate(SimSettings(topology={}))
    before, after = compare(snapshot, arrivals, same, seed=seed)
    assert before == after
    assert before.started > 0


def test_added_nodes_shorten_the_waits_and_a_cordoned_zone_lengthens_them():
    snapshot = synthetic_cluster(zones=2, blocks_per_zone=2, racks=8, nodes_per_rack=4)
    arrivals = generate_arrivals(snapshot, jobs=200, days=1, seed=5, scale=0.8)
    zone = snapshot.domain_path(0, 0)
    before, bigger = compare(snapshot, arrivals, Candidate(nodes=(NodeChange((*zone, "block-new"), 32),)))
    _, smaller = compare(snapshot, arrivals, Candidate(nodes=(NodeChange(zone, 0),)))
    assert bigger.wait_p95 < before.wait_p95 < smaller.wait_p95


def test_replay_respects_recorded_run_times():
    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=1, nodes_per_rack=2)
    arrivals = [gang("a", 2, arrival=0.0, duration=50.0), gang("b", 2, arrival=10.0, duration=50.0)]
    outcome = replay(idle(snapshot), arrivals, until=float("inf"))
    assert outcome.starts == {"a": 0.0, "b": 50.0}
    assert outcome.wait_p50 == 20.0 and outcome.utilization == pytest.approx(1.0)


def test_backtest_reports_error_and_coverage_on_generated_history():
    snapshot = synthetic_cluster(zones=2, blocks_per_zone=2, racks=8, nodes_per_rack=4)
    records = generate_history(snapshot, jobs=150, days=1, seed=3, scale=1.0)
    report = backtest(snapshot, records, checkpoints=6, samples=4, seed=1, min_history=5)
    assert report.estimates > 0
    assert report.median_abs_error is not None and 0.0 <= report.coverage <= 1.0
    assert report.baseline_median_abs_error is not None
    # Later moments are calibrated on earlier ones only, and the calibrated range holds the start at least as often.
    assert 0 < report.held_out < report.estimates - report.unknown
    assert report.calibrated_coverage >= report.raw_coverage_held_out


def test_capacity_advice_finds_the_smallest_addition_that_meets_the_target():
    from trainer_portal.simulation.capacity import capacity_advice

    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=1, nodes_per_rack=4)
    running = seat(snapshot, "holder", 4, started=0.0, deadline=10_000.0)
    waiting = [gang("a", 2, arrival=1.0, duration=100.0), gang("b", 3, arrival=2.0, duration=100.0)]
    # Nothing frees for 10,000 s. Within an hour: 3 new nodes (a runs first, b after it, at 100 s); within 50 s
    # both must run at once: 2 + 3 nodes.
    (hour,) = capacity_advice(snapshot, [running], waiting, Durations(), now=0.0, target_seconds=3600.0, step=1,
                              limit=16)
    (now,) = capacity_advice(snapshot, [running], waiting, Durations(), now=0.0, target_seconds=50.0, step=1,
                             limit=16)
    assert (hour.nodes, hour.latest) == (3, 100.0)
    assert (now.nodes, now.latest) == (5, 0.0)
    (none_needed,) = capacity_advice(snapshot, [running], waiting, Durations(), now=0.0, target_seconds=20_000.0,
                                     step=1, limit=16)
    assert none_needed.nodes == 0


def test_future_higher_priority_arrivals_push_a_waiting_job_later():
    from trainer_portal.simulation.estimate import ArrivalModel

    snapshot = synthetic_cluster(zones=1, blocks_per_zone=1, racks=1, nodes_per_rack=2)
    running = seat(snapshot, "holder", 2, started=0.0, deadline=1000.0)
    waiting = [gang("low", 2, arrival=0.0, runtime="torch")]
    durations = Durations.from_records(("torch", 16, 500.0) for _ in range(5))
    alone = estimate_starts(snapshot, [running], waiting, durations, now=0.0, samples=8)["low"]
    urgent = ArrivalModel((gang("urgent", 2, priority=100, runtime="torch"),), rate=1 / 1000.0)
    crowded = estimate_starts(snapshot, [running], waiting, durations, now=0.0, samples=8, arrivals=urgent)["low"]
    assert alone.p50 == 500.0  # the holder ends by history (500 s), before its deadline
    assert crowded.p10 == alone.p10 and crowded.p90 > alone.p90  # in some runs an urgent job arrives first
    assert crowded.basis.endswith("with arrivals like the last week's")
