"""Computing and storing forecasts: estimated starts per cluster, the backtest, what-if simulations.

Everything here runs in a worker (Celery), never in a web request: the pages and the API read what was stored.
Inputs: the cluster's live topology snapshot (`trainer_portal.cluster.snapshots`), the recorded TrainJobs through
the history seam (`trainer_portal.jobhistory`) and queue positions from the job-facts seam when a queue provider
knows them. The simulator is `trainer_portal.simulation` (docs/forecasts.md).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import time

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from trainer_portal import jobfacts, jobhistory
from trainer_portal.cluster import snapshots
from trainer_portal.cluster.models import Cluster
from trainer_portal.jobhistory import RUNNING, WAITING
from trainer_portal.simulation import Candidate, SimSettings, backtest, compare, estimate_starts
from trainer_portal.simulation.calibration import Calibration, PastEstimate, calibrate
from trainer_portal.simulation.capacity import capacity_advice
from trainer_portal.simulation.estimate import arrival_model, samples_for
from trainer_portal.simulation.whatif import NodeChange

from . import domain, tasks
from .models import ForecastRun, StartEstimateRow, WhatIf

logger = logging.getLogger(__name__)

LEVELS = ("zone", "block", "rack", "host", "none")


class Cancelled(Exception):
    """The what-if was cancelled while it ran."""


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


def history_window() -> dt.timedelta:
    """Return how far back finished jobs feed run-time history (FORECAST_HISTORY_DAYS, default 30)."""
    return dt.timedelta(days=_setting("FORECAST_HISTORY_DAYS", 30))


def _token(version: object, jobs: list[jobhistory.TrackedJob]) -> str:
    digest = hashlib.blake2b(digest_size=12)
    digest.update(str(version).encode())
    for job in sorted(jobs, key=lambda j: j.ref.uid):
        if job.phase in (WAITING, RUNNING):
            digest.update(f"{job.ref.uid}:{job.phase}:{len(job.nodes)};".encode())
    return digest.hexdigest()


def _store_unknown(cluster: Cluster, waiting: list[jobhistory.TrackedJob], reason: str, now: dt.datetime) -> None:
    rows = [StartEstimateRow(cluster=cluster, uid=job.ref.uid, namespace=job.ref.namespace, name=job.ref.name,
                             basis=f"unknown: {reason}", rank=index, computed_at=now)
            for index, job in enumerate(sorted(waiting, key=lambda j: j.submitted_at), start=1)]
    with transaction.atomic():
        StartEstimateRow.objects.filter(cluster=cluster).delete()
        StartEstimateRow.objects.bulk_create(rows)


def calibration_of(run: ForecastRun | None) -> Calibration:
    """Return the range calibration from the estimates the cluster's last backtest made of jobs that have started
    (the last FORECAST_CALIBRATION_WINDOW, default 500; inactive with fewer than FORECAST_CALIBRATION_MIN, 30)."""
    rows = (run.backtest or {}).get("history", []) if run is not None else []
    history = [PastEstimate(*map(float, row)) for row in rows if isinstance(row, list) and len(row) == 5]
    return calibrate(history, window=int(_setting("FORECAST_CALIBRATION_WINDOW", 500)),
                     min_history=int(_setting("FORECAST_CALIBRATION_MIN", 30)))


def compute_estimates(cluster: Cluster, *, force: bool = False) -> ForecastRun:
    """Recompute and store the estimated start of every waiting job of `cluster` when its inputs changed since the
    last run (or `force`); returns the cluster's ForecastRun. Raises nothing for missing inputs: the estimates then
    say 'unknown' with the reason."""
    started = time.perf_counter()
    now = timezone.now()
    jobs = jobhistory.tracked_jobs(cluster.pk, now - history_window())
    waiting = [job for job in jobs if job.phase == WAITING]
    live = snapshots.live_snapshot(cluster)
    token = _token(live.snapshot.version if live else None, jobs)
    run = ForecastRun.objects.filter(cluster=cluster).first() or ForecastRun(cluster=cluster, computed_at=now)
    min_interval = _setting("FORECAST_MAX_AGE_SECONDS", 600)
    if (not force and run.pk and run.token == token
            and (now - run.computed_at).total_seconds() < min_interval):
        return run
    run.token, run.computed_at, run.waiting = token, now, len(waiting)
    run.running = sum(1 for job in jobs if job.phase == RUNNING)
    if live is None:
        run.status, run.reason, run.samples = "unknown", "no topology snapshot of the cluster has been stored yet", 0
        _store_unknown(cluster, waiting, run.reason, now)
    else:
        refs = [job.ref for job in waiting]
        positions = {ref: facts.queue for ref, facts in jobfacts.facts_for(refs).items() if facts.queue}
        sim_waiting = sorted(domain.waiting_of(waiting, positions), key=lambda j: j.order_key())
        limit = int(_setting("FORECAST_MAX_WAITING", 2000))
        beyond = sim_waiting[limit:]
        sim_waiting = sim_waiting[:limit]
        arrivals = None
        if len(sim_waiting) <= int(_setting("FORECAST_ARRIVALS_MAX_WAITING", 0)):
            # Future arrivals like the last week's compete too (off by default: docs/forecasts.md, measured).
            history = [record.sim_job(with_duration=False) for record in domain.history_records(jobs)]
            arrivals = arrival_model(history, now=domain.seconds(now))
        estimates = estimate_starts(live.snapshot, domain.running_of(jobs), sim_waiting, domain.durations_of(jobs),
                                    now=domain.seconds(now), seed=int(_setting("FORECAST_SEED", 1)),
                                    arrivals=arrivals)
        by_uid = {job.ref.uid: job for job in waiting}
        calibration = calibration_of(run)
        rows = []
        for estimate in estimates.values():
            job = by_uid[estimate.key]
            p10, p50, p90, basis = estimate.p10, estimate.p50, estimate.p90, estimate.basis
            if p50 is not None:
                # The simulated range is far too narrow on its own: widen it by how past estimates missed.
                p10, p50, p90 = calibration.apply(domain.seconds(now), p10, p50, p90)
                basis = f"{basis}; {calibration.note}"
            rows.append(StartEstimateRow(cluster=cluster, uid=job.ref.uid, namespace=job.ref.namespace,
                                         name=job.ref.name, p10=domain.moment(p10), p50=domain.moment(p50),
                                         p90=domain.moment(p90), basis=basis, rank=estimate.rank,
                                         computed_at=now))
        for index, sim_job in enumerate(beyond, start=limit + 1):
            job = by_uid[sim_job.key]
            rows.append(StartEstimateRow(cluster=cluster, uid=job.ref.uid, namespace=job.ref.namespace,
                                         name=job.ref.name, basis=f"unknown: more than {limit:,} jobs are ahead "
                                         "of it; estimates are computed for the first ones only", rank=index,
                                         computed_at=now))
        with transaction.atomic():
            StartEstimateRow.objects.filter(cluster=cluster).delete()
            StartEstimateRow.objects.bulk_create(rows)
        run.status, run.reason, run.samples = "ok", "", samples_for(len(sim_waiting))
    run.duration_ms = int((time.perf_counter() - started) * 1000)
    run.save()
    return run


def run_backtest(cluster: Cluster, *, checkpoints: int = 24) -> dict:
    """Backtest the estimator over the cluster's recorded history and store the report on its ForecastRun; returns
    the report's API form ({} when there is no snapshot or no history)."""
    live = snapshots.live_snapshot(cluster)
    now = timezone.now()
    if live is None:
        return {}
    jobs = jobhistory.tracked_jobs(cluster.pk, now - history_window())
    records = domain.history_records(jobs)
    report = backtest(live.snapshot, records, checkpoints=checkpoints, samples=4, max_waiting=100).to_dict()
    ForecastRun.objects.update_or_create(cluster=cluster, defaults={"backtest": report, "backtest_at": now},
                                         create_defaults={"backtest": report, "backtest_at": now,
                                                          "computed_at": now, "status": "unknown",
                                                          "reason": "not computed yet"})
    return report


def run_capacity_advice(cluster: Cluster) -> list[dict]:
    """Compute and store, per zone, the smallest node addition that would start every waiting gang within
    FORECAST_ADVICE_TARGET_SECONDS (default 1 h); returns it ([] without a snapshot, with no waiting job, or with
    more than FORECAST_ADVICE_MAX_WAITING (200) waiting: the search runs many estimates)."""
    live = snapshots.live_snapshot(cluster)
    now = timezone.now()
    jobs = jobhistory.tracked_jobs(cluster.pk, now - history_window())
    waiting = [job for job in jobs if job.phase == WAITING]
    advice: list[dict] = []
    if live is not None and 0 < len(waiting) <= int(_setting("FORECAST_ADVICE_MAX_WAITING", 200)):
        refs = [job.ref for job in waiting]
        positions = {ref: facts.queue for ref, facts in jobfacts.facts_for(refs).items() if facts.queue}
        found = capacity_advice(live.snapshot, domain.running_of(jobs), domain.waiting_of(waiting, positions),
                                domain.durations_of(jobs), now=domain.seconds(now),
                                target_seconds=_setting("FORECAST_ADVICE_TARGET_SECONDS", 3600))
        advice = [item.to_dict() for item in found]
    ForecastRun.objects.filter(cluster=cluster).update(advice=advice)
    return advice


def refresh_all() -> str:
    """Recompute the estimates of every enabled cluster whose inputs changed (bounded by FORECAST_MAX_WAITING and
    the estimator's work budget), and its backtest when older than FORECAST_BACKTEST_SECONDS. Returns a summary."""
    results = []
    every = _setting("FORECAST_BACKTEST_SECONDS", 3600)
    for cluster in Cluster.objects.filter(enabled=True):
        try:
            run = compute_estimates(cluster)
            if run.backtest_at is None or (timezone.now() - run.backtest_at).total_seconds() > every:
                run_backtest(cluster)
                run_capacity_advice(cluster)
            results.append(f"{cluster.name}: {run.status} ({run.waiting} waiting)")
        except Exception as exc:  # one cluster's failure must not stop the others
            logger.exception("forecast of cluster %s failed", cluster.name)
            results.append(f"{cluster.name}: {exc.__class__.__name__}")
    return "; ".join(results)


def request_refresh(cluster: Cluster) -> bool:
    """Ask a worker to recompute `cluster`'s estimates soon (debounced: one request per FORECAST_DEBOUNCE_SECONDS).
    Returns whether a task was enqueued."""
    debounce = _setting("FORECAST_DEBOUNCE_SECONDS", 10)
    if not cache.add(f"forecast:refresh:{cluster.pk}", 1, timeout=max(int(debounce), 1)):
        return False
    transaction.on_commit(lambda: tasks.forecast_cluster_task.apply_async((cluster.pk,), countdown=debounce))
    return True


# -- what-if --------------------------------------------------------------------------------------------------------


def candidate_from(spec: dict, keys) -> Candidate:
    """Return the simulator's Candidate for the API's candidate object (already validated for shape). Raises
    ValueError naming the field for a level that is not one of LEVELS."""
    topology = {}
    for item in spec.get("topology", []):
        level = item["topologyLevel"]
        if level not in LEVELS:
            raise ValueError(f"candidate.topology: level must be one of {', '.join(LEVELS)}")
        topology[item["runtime"]] = "" if level == "none" else getattr(keys, level)
    nodes = []
    for item in spec.get("nodes", []):
        path = tuple(part for part in item["domain"].split("/") if part)
        count = int(item.get("count", 0))
        change = item["change"]
        nodes.append(NodeChange(path, count if change == "add" else (-count if count else 0),
                                int(item.get("gpusPerNode", 8))))
    strict = frozenset(spec.get("strictFifo", []))
    return Candidate(SimSettings(strict_fifo=strict, topology=topology), tuple(nodes))


def whatif_create(*, cluster: Cluster, title: str, candidate: dict, days: int, seed: int, user) -> WhatIf:
    """Store a what-if and enqueue its simulation (after commit); returns it."""
    whatif = WhatIf.objects.create(cluster=cluster, title=title[:200], candidate=candidate, days=days, seed=seed,
                                   created_by=user if getattr(user, "is_authenticated", False) else None)
    transaction.on_commit(lambda: tasks.forecast_whatif_task.delay(whatif.pk))
    return whatif


def whatif_cancel(whatif: WhatIf) -> WhatIf:
    """Cancel a queued or running what-if (a finished one stays as it is); returns it."""
    WhatIf.objects.filter(pk=whatif.pk, status__in=(WhatIf.Status.QUEUED, WhatIf.Status.RUNNING)).update(
        status=WhatIf.Status.CANCELLED, updated_at=timezone.now())
    whatif.refresh_from_db()
    return whatif


def whatif_run(pk: int) -> str:
    """Run the what-if `pk`: replay the cluster's recorded arrivals of its last `days` under the current and the
    candidate setting; store progress, the result or the error. Returns the final status."""
    whatif = WhatIf.objects.select_related("cluster").filter(pk=pk).first()
    if whatif is None or whatif.status != WhatIf.Status.QUEUED:
        return "skipped"
    WhatIf.objects.filter(pk=pk).update(status=WhatIf.Status.RUNNING, progress=0.0)
    live = snapshots.live_snapshot(whatif.cluster)
    if live is None:
        return _finish(pk, WhatIf.Status.FAILED, error="no topology snapshot of the cluster has been stored yet")
    now = timezone.now()
    jobs = jobhistory.tracked_jobs(whatif.cluster.pk, now - dt.timedelta(days=whatif.days))
    since = domain.seconds(now - dt.timedelta(days=whatif.days))
    records = [r for r in domain.history_records(jobs) if r.arrival >= since]
    arrivals = [r.sim_job(with_duration=True) for r in records]
    durations = domain.durations_of(jobs)
    last_check = [0.0]

    def progress(fraction: float) -> None:
        if time.monotonic() - last_check[0] < 0.5 and fraction < 1.0:
            return
        last_check[0] = time.monotonic()
        if WhatIf.objects.filter(pk=pk, status=WhatIf.Status.CANCELLED).exists():
            raise Cancelled
        WhatIf.objects.filter(pk=pk).update(progress=round(fraction, 3))

    try:
        candidate = candidate_from(whatif.candidate, live.snapshot.keys)
        before, after = compare(live.snapshot, arrivals, candidate, durations=durations, seed=whatif.seed,
                                progress=progress)
    except Cancelled:
        return WhatIf.Status.CANCELLED
    except ValueError as exc:
        return _finish(pk, WhatIf.Status.FAILED, error=str(exc))
    result = {"current": before.to_dict(), "candidate": after.to_dict()}
    return _finish(pk, WhatIf.Status.DONE, result=result, jobs=len(arrivals))


def _finish(pk: int, status: str, *, error: str = "", result: dict | None = None, jobs: int = 0) -> str:
    updated = WhatIf.objects.filter(pk=pk).exclude(status=WhatIf.Status.CANCELLED).update(
        status=status, error=error, result=result or {}, jobs=jobs, progress=1.0 if status == "done" else 0.0,
        updated_at=timezone.now())
    return status if updated else WhatIf.Status.CANCELLED
