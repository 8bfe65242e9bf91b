"""Metrics benchmark: what one Prometheus scrape of /metrics costs at 30,000 TrainJobs, and the CSV export.

Scenario (full / --quick): 30,000 (3,000) tracked TrainJobs in 60 namespaces (more than the namespace cap),
12 runtimes, 20 queues, in every state; an admission transition for each admitted or running job, a third of them
inside the one-hour window; 50 runtime policies on 2 clusters; a tracker status per cluster. Measured:
- scrape: server time p50/p95 of GET /metrics with the bearer token through Django's test client (every figure
  computed from the database), its query count, the exposition's size and number of series; and a scrape that
  another one computed within TRAINER_PORTAL_METRICS_CACHE_SECONDS (the shared cache);
- export: GET /jobs/export.csv of every job, streamed (time to the last byte, rows per second).
Baseline, same run: ``SELECT COUNT(*)`` of the TrainJobs (the cheapest aggregate over the same table) → ratio.
Target: scrape p95 ≤ 300 ms at 30,000 jobs on PostgreSQL, ≤ 1 s on SQLite (embedded mode); Prometheus scrapes
every 30 s per replica and its default scrape timeout is 10 s.

Database: a throwaway SQLite file, or a throwaway PostgreSQL database when DATABASE_URL points at PostgreSQL.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.sync import _drop_database, _pct, _setup_django

# PostgreSQL is the production database; SQLite serves embedded mode (one machine, trials) and is slower at the
# grouped counts.
TARGET_SCRAPE_P95_MS = {"postgresql": 300.0, "sqlite": 1000.0}
TOKEN = "bench-token"


def _seed(jobs: int) -> None:
    from django.contrib.auth.models import User
    from django.utils import timezone

    from jobs.models import TrackerStatus, TrainJob, TrainJobTransition
    from runtimes.models import PolicySync, RuntimePolicy
    from trainer_portal.cluster.models import Cluster

    now = timezone.now()
    default = Cluster.objects.get(is_default=True)
    other = Cluster.objects.create(name="gpu-east")
    clusters = [default, other]
    states = ["queued", "gang-pending", "running", "admitted", "unschedulable", "succeeded", "failed", "running"]
    rows = []
    for i in range(jobs):
        state = states[i % len(states)]
        submitted = now - dt.timedelta(seconds=3 * (jobs - i))
        admitted = submitted + dt.timedelta(seconds=30 + (i % 50) * 40) if state in ("running", "admitted") else None
        rows.append(TrainJob(
            cluster=clusters[i % 2], uid=f"uid-{i:06d}", namespace=f"team-{i % 60}", name=f"job-{i:06d}",
            runtime_name=f"runtime-{i % 12}", queue_name=f"queue-{i % 20}", num_nodes=4, gpus_per_node=8,
            level="trainjob", state=state, reason="GangPending", message="waiting", since=submitted,
            submitted_at=submitted, admitted_at=admitted, change_seq=i + 1,
            pod_groups=[{"name": f"pg-{i}", "policy": "gang", "minCount": 4, "bound": 2 if state == "gang-pending"
                         else 0}]))
    created = TrainJob.objects.bulk_create(rows, batch_size=1000)
    transitions = []
    for seq, job in enumerate(created):
        transitions.append(TrainJobTransition(job=job, cluster_id=job.cluster_id, to_state="queued",
                                              at=job.submitted_at, seq=2 * seq))
        if job.admitted_at:
            transitions.append(TrainJobTransition(job=job, cluster_id=job.cluster_id, from_state="queued",
                                                  to_state=job.state, at=job.admitted_at, seq=2 * seq + 1))
    TrainJobTransition.objects.bulk_create(transitions, batch_size=2000)
    author = User.objects.create_user("bench-admin", password="x", is_superuser=True)
    for p in range(50):
        policy = RuntimePolicy.objects.create(name=f"policy-{p}", manifest={"metadata": {"name": f"policy-{p}"}})
        for cluster in clusters:
            PolicySync.objects.create(policy=policy, cluster=cluster, sync_state="synced" if p % 10 else "failed",
                                      last_synced_at=now)
    for cluster in clusters:
        TrackerStatus.objects.update_or_create(cluster=cluster, defaults={
            "holder": f"watch-{cluster.name}", "heartbeat_at": now, "connected": True, "synced": True,
            "tracked": jobs // 2})
    del author


def _timed(function, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return times


def bench(rounds: int) -> dict:
    """Return the scrape, export and baseline timings (seconds) with the scrape's queries and size."""
    from django.conf import settings
    from django.contrib.auth.models import Group, User
    from django.db import connection
    from django.test import Client

    from jobs.models import TrainJob

    settings.TRAINER_PORTAL_METRICS_TOKEN = TOKEN
    settings.TRAINER_PORTAL_METRICS_CACHE_SECONDS = 0  # measure the computation, not the cache
    settings.ALLOWED_HOSTS = ["*"]
    client = Client()
    header = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    first = client.get("/metrics", **header)
    assert first.status_code == 200, first.content[:200]
    body = first.content.decode()
    series = sum(1 for line in body.splitlines() if line and not line.startswith("#"))
    queries: list[str] = []

    def count(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        client.get("/metrics", **header)
    scrape = _timed(lambda: client.get("/metrics", **header), rounds)
    settings.TRAINER_PORTAL_METRICS_CACHE_SECONDS = 5
    client.get("/metrics", **header)
    cached = _timed(lambda: client.get("/metrics", **header), rounds)
    settings.TRAINER_PORTAL_METRICS_CACHE_SECONDS = 0
    baseline = _timed(lambda: TrainJob.objects.count(), rounds)

    viewer = User.objects.create_user("bench-viewer", password="x")
    viewer.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client.force_login(viewer)

    def export() -> None:
        response = client.get("/jobs/export.csv")
        assert response.status_code == 200
        for _ in response.streaming_content:
            pass

    export_times = _timed(export, max(3, rounds // 10))
    return {"vendor": connection.vendor, "scrape": scrape, "cached": cached, "baseline": baseline,
            "export": export_times, "queries": len(queries), "bytes": len(body), "series": series,
            "jobs": TrainJob.objects.count()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.metrics", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3,000 jobs, 10 rounds")
    args = parser.parse_args(argv)
    jobs, rounds = (3_000, 10) if args.quick else (30_000, 30)
    with tempfile.TemporaryDirectory() as tmp:
        url = _setup_django(Path(tmp))
        try:
            _seed(jobs)
            result = bench(rounds)
        finally:
            _drop_database(url)
    scrape, base, export = result["scrape"], result["baseline"], result["export"]
    p50, p95 = _pct(scrape, 0.5) * 1000, _pct(scrape, 0.95) * 1000
    b50 = _pct(base, 0.5) * 1000
    print(f"scrape of /metrics over {result['jobs']:,} jobs ({rounds} rounds, {result['queries']} queries, "
          f"{result['series']:,} series, {result['bytes'] / 1024:.0f} KiB)")
    target = TARGET_SCRAPE_P95_MS.get(result["vendor"], TARGET_SCRAPE_P95_MS["postgresql"])
    print(f"  GET /metrics                 p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  ×{p50 / b50 if b50 else 0:.1f} "
          f"baseline (COUNT(*) p50 {b50:.1f} ms); target p95 ≤ {target:.0f} ms on {result['vendor']}")
    cached = result["cached"]
    c50, c95 = _pct(cached, 0.5) * 1000, _pct(cached, 0.95) * 1000
    print(f"  GET /metrics, shared (cache) p50 {c50:7.1f} ms  p95 {c95:7.1f} ms  (another scrape within "
          "TRAINER_PORTAL_METRICS_CACHE_SECONDS)")
    e50, e95 = _pct(export, 0.5), _pct(export, 0.95)
    print(f"  GET /jobs/export.csv (all)   p50 {e50 * 1000:7.1f} ms  p95 {e95 * 1000:7.1f} ms  "
          f"({result['jobs'] / e50 if e50 else 0:,.0f} rows/s)")
    return 0 if p95 <= target else 1


if __name__ == "__main__":
    sys.exit(main())
