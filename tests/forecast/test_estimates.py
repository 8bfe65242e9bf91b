"""Estimated starts computed by the worker from the stored snapshot and history, and served through the seam."""

from __future__ import annotations

import datetime as dt

import pytest

from forecast import services
from forecast.models import ForecastRun, StartEstimateRow
from trainer_portal.cluster.models import Cluster
from trainer_portal.jobfacts import JobRef, facts_for

pytestmark = pytest.mark.django_db


def _ref(job) -> JobRef:
    return JobRef(job.cluster_id, job.namespace, job.name, job.uid)


def test_a_waiting_job_gets_the_range_its_blockers_history_gives(queue_with_history):
    waiting, running = queue_with_history
    run = services.compute_estimates(Cluster.objects.get(is_default=True))
    assert run.status == "ok" and run.waiting == 1 and run.running == 1
    estimate = facts_for([_ref(waiting)])[_ref(waiting)].estimated_start
    # Every recorded run of this kind took 1 h; the holder has run 30 min, so it ends 1 h after its admission.
    expected = running.admitted_at + dt.timedelta(hours=1)
    assert abs((estimate.p50 - expected).total_seconds()) < 1
    assert estimate.p10 == estimate.p50 == estimate.p90
    assert estimate.basis.startswith("1 running job ends by its history; you are 1st in line")
    assert estimate.basis.endswith("not calibrated: no past estimates whose jobs started (at least 30 needed)")


def test_the_range_is_widened_by_how_the_backtests_estimates_missed(queue_with_history, settings):
    settings.FORECAST_CALIBRATION_MIN = 10
    waiting, _ = queue_with_history
    cluster = Cluster.objects.get(is_default=True)
    # Twenty past estimates of a 1 h wait with a zero-width range; the jobs started 0.5 h early to 1.4 h late.
    history = [[0.0, 3600.0, 3600.0, 3600.0, 3600.0 + 300.0 * (k - 6)] for k in range(20)]
    ForecastRun.objects.create(cluster=cluster, computed_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
                               backtest={"history": history})
    services.compute_estimates(cluster)
    estimate = facts_for([_ref(waiting)])[_ref(waiting)].estimated_start
    assert estimate.p10 < estimate.p50 < estimate.p90
    assert "range calibrated on the last 20 estimates whose jobs started" in estimate.basis
    assert "would have held the true start (as simulated, 5% did; median error 25 min)" in estimate.basis


def test_without_a_snapshot_the_estimate_is_unknown_with_the_reason(db):
    from tests.jobs.factories import tracked_job

    waiting = tracked_job("team-a", "waiter", state="gang-pending", num_nodes=2)
    services.compute_estimates(Cluster.objects.get(is_default=True))
    estimate = facts_for([_ref(waiting)])[_ref(waiting)].estimated_start
    assert estimate.p50 is None
    assert estimate.basis == "unknown: no topology snapshot of the cluster has been stored yet"


def test_unchanged_inputs_are_not_recomputed_until_the_estimates_age(queue_with_history):
    cluster = Cluster.objects.get(is_default=True)
    first = services.compute_estimates(cluster)
    StartEstimateRow.objects.update(basis="kept")
    again = services.compute_estimates(cluster)
    assert again.computed_at == first.computed_at
    assert StartEstimateRow.objects.get().basis == "kept"
    services.compute_estimates(cluster, force=True)
    assert StartEstimateRow.objects.get().basis != "kept"


def test_the_backtest_over_recorded_history_is_stored(queue_with_history):
    report = services.run_backtest(Cluster.objects.get(is_default=True), checkpoints=4)
    assert set(report) >= {"medianAbsErrorSeconds", "coverage", "estimates"}


def test_capacity_advice_is_stored_per_zone(queue_with_history, settings):
    settings.FORECAST_ADVICE_TARGET_SECONDS = 60
    cluster = Cluster.objects.get(is_default=True)
    services.compute_estimates(cluster)
    (advice,) = services.run_capacity_advice(cluster)
    # The holder frees its 2 nodes in 30 min; to start the 2-node waiter within a minute, add 8 nodes (one step).
    assert advice == {"domain": "zone-a", "nodes": 8, "gpusPerNode": 8, "limit": 256,
                      "latestStart": advice["latestStart"]}
    assert ForecastRun.objects.get(cluster=cluster).advice == [advice]
