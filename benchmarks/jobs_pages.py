"""TrainJob pages benchmark: list/detail server time, the conditional live poll, and event → viewer latency.

Scenarios (sizes: full / --quick)
- pages: 10,000 (1,000) tracked TrainJobs in 20 namespaces. Server time p50/p95 and query count of the HTML list
  (page of 50), a data scientist's list (one namespace), a detail page, the live poll answered 304 (nothing
  changed) and the live poll after one row changed (only that row is sent). Baseline, same run: the bare ORM
  slice of the same page → ratio.
- live: a real gunicorn (sync workers, as deployed) and 200 (50) viewers polling the list's live partial every
  second with If-None-Match, as the pages do. A job changes state every 2 s; event → viewer latency p50/p95
  (target p95 ≤ 1.5 s) and the server's CPU per viewer (CPU seconds per second of wall time, per viewer).
  Baseline: the same viewers polling the static /healthz probe (what any request costs) → ratio.

Database: a throwaway SQLite file, or a throwaway PostgreSQL database when DATABASE_URL points at PostgreSQL.
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.sync import _drop_database, _pct, _setup_django

TARGET_PAGE_P95_MS = 100.0
TARGET_LATENCY_P95_S = 1.5
POLLER = re.compile(r'<div id="jobs-poll"[^>]*hx-get="([^"]+)"[^>]*hx-headers="([^"]+)"')


def _seed(jobs: int) -> None:
    from django.utils import timezone

    from jobs.models import TrackerStatus, TrainJob

    now = timezone.now()
    states = ["gang-pending", "running", "admitted", "queued", "unschedulable", "succeeded"]
    rows = []
    for i in range(jobs):
        submitted = now - dt.timedelta(seconds=jobs - i)
        rows.append(TrainJob(
            uid=f"uid-{i:06d}", namespace=f"team-{i % 20}", name=f"job-{i:06d}", runtime_name=f"runtime-{i % 7}",
            num_nodes=8, gpus_per_node=8, level="trainjob", state=states[i % len(states)], reason="GangPending",
            message="waiting for 8 nodes in one zone", since=submitted, submitted_at=submitted, change_seq=i + 1,
            pod_groups=[{"name": f"pg-{i}", "policy": "gang", "minCount": 8, "bound": 3, "condition": "",
                         "reason": "", "message": ""}],
            pods=[{"name": f"job-{i:06d}-node-{p}", "phase": "Pending", "node": "", "podGroup": f"pg-{i}"}
                  for p in range(8)]))
    TrainJob.objects.bulk_create(rows, batch_size=1000)
    TrackerStatus.objects.update_or_create(pk=1, defaults={"holder": "bench", "heartbeat_at": now + dt.timedelta(
        days=1), "connected": True, "synced": True, "leader_since": now})


def _users():
    from django.contrib.auth.models import Group, User

    from jobs.models import NamespaceGrant

    viewer = User.objects.create_user("bench-viewer", password="x")
    viewer.groups.add(Group.objects.get_or_create(name="viewer")[0])
    scientist = User.objects.create_user("bench-scientist", password="x")
    scientist.groups.add(Group.objects.get_or_create(name="data-scientist")[0])
    team = Group.objects.get_or_create(name="team-3-ml")[0]
    scientist.groups.add(team)
    NamespaceGrant.objects.get_or_create(group=team, namespace="team-3")
    return viewer, scientist


def _timed(client, url: str, rounds: int, *, expect: int = 200, headers: dict | None = None,
           before=None) -> tuple[list[float], set[int]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times, queries = [], set()
    for _ in range(rounds):
        if before is not None:
            before()
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(url, headers=headers or {})
            times.append(time.perf_counter() - started)
        assert response.status_code == expect, (url, response.status_code, response.content[:300])
        queries.add(len(captured.captured_queries))
    return times, queries


def _poller(body: str) -> tuple[str, str]:
    match = POLLER.search(body)
    return html.unescape(match.group(1)), json.loads(html.unescape(match.group(2)))["If-None-Match"]


def bench_pages(rounds: int) -> dict:
    from django.db.models import F
    from django.test import Client

    from jobs.models import TrainJob

    viewer, scientist = _users()
    client = Client()
    client.force_login(viewer)
    scientist_client = Client()
    scientist_client.force_login(scientist)
    results = {}
    results["list"] = _timed(client, "/jobs/", rounds)
    results["list (data scientist)"] = _timed(scientist_client, "/jobs/", rounds)
    newest = TrainJob.objects.order_by("-submitted_at", "-id").first()
    results["detail"] = _timed(client, f"/jobs/{newest.namespace}/{newest.name}/", rounds)
    url, etag = _poller(client.get("/jobs/").content.decode())
    results["live poll, unchanged (304)"] = _timed(client, url, rounds, expect=304, headers={"If-None-Match": etag})

    def change_one_row():
        TrainJob.objects.filter(pk=newest.pk).update(change_seq=F("change_seq") + 100_000)

    results["live poll, one row changed"] = _timed(client, url, rounds, headers={"If-None-Match": etag},
                                                   before=change_one_row)
    baseline = []
    for _ in range(rounds):
        started = time.perf_counter()
        list(TrainJob.objects.defer("pods", "events", "workload", "kueue").order_by("-submitted_at", "-id")[:51])
        baseline.append(time.perf_counter() - started)
    return {"rows": TrainJob.objects.count(), "results": results, "baseline_p50_ms": _pct(baseline, 0.5) * 1000}


# -- live: real server, many viewers ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    """Return the CPU seconds used by ``pid`` and its children (gunicorn's master and workers)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def wait_ready(port: int, server: subprocess.Popen, timeout: float = 120.0) -> None:
    """Return once the server on ``port`` answers ``/healthz`` with 200 (its workers are up, not just its socket).

    Raises RuntimeError when the server exits or does not answer within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server on port {port} exited with {server.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                conn.close()
                return
            conn.close()
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server on port {port} did not answer /healthz within {timeout:.0f} s")


class Viewer(threading.Thread):
    """Polls a URL every second (random phase) with If-None-Match, as an open page does; records when it first
    saw each change (a 200 after a 304)."""

    def __init__(self, port: int, path: str, etag: str, cookie: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.port, self.path, self.etag, self.cookie, self.stop = port, path, etag, cookie, stop
        self.seen: list[float] = []
        self.round_trips: list[float] = []
        self.errors = 0

    def run(self) -> None:
        time.sleep(random.random())
        next_at = time.monotonic()
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                headers = {"Cookie": self.cookie, "HX-Request": "true"}
                if self.etag:
                    headers["If-None-Match"] = self.etag
                conn.request("GET", self.path, headers=headers)
                response = conn.getresponse()
                body = response.read().decode()
                conn.close()
                self.round_trips.append(time.monotonic() - started)
                if response.status == 200:
                    self.seen.append(time.monotonic())
                    if "jobs-poll" in body:
                        self.path, self.etag = _poller(body)
                elif response.status != 304:
                    self.errors += 1
            except OSError:
                self.errors += 1
            next_at += 1.0
            time.sleep(max(0.0, next_at - time.monotonic()))


def bench_live(viewers: int, seconds: float, workers: int) -> dict:
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db.models import F
    from django.test import Client

    from jobs.models import TrainJob

    port = _free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "trainer_portal.settings"}
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "trainer_portal.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--log-level", "warning"], env=env, cwd=str(settings.BASE_DIR))
    try:
        wait_ready(port, server)
        client = Client()
        client.force_login(User.objects.get(username="bench-viewer"))
        cookie = f"sessionid={client.cookies['sessionid'].value}"
        url, etag = _poller(client.get("/jobs/").content.decode())

        def run(path: str, tag: str, changes: bool) -> dict:
            stop = threading.Event()
            crowd = [Viewer(port, path, tag, cookie, stop) for _ in range(viewers)]
            for viewer in crowd:
                viewer.start()
            time.sleep(2.0)  # every viewer has polled once: now all hold the current ETag
            for viewer in crowd:
                viewer.seen.clear()
                viewer.round_trips.clear()
            cpu_start, wall_start = _cpu_seconds(server.pid), time.monotonic()
            writes: list[float] = []
            newest = TrainJob.objects.order_by("-submitted_at", "-id").first()
            while time.monotonic() - wall_start < seconds:
                if changes:
                    TrainJob.objects.filter(pk=newest.pk).update(change_seq=F("change_seq") + 1_000_000)
                    writes.append(time.monotonic())
                time.sleep(2.0)
            stop.set()
            wall = time.monotonic() - wall_start
            cpu = _cpu_seconds(server.pid) - cpu_start
            for viewer in crowd:
                viewer.join(timeout=15)
            latencies = []
            for viewer in crowd:
                for write in writes:
                    after = [t for t in viewer.seen if t >= write]
                    if after and after[0] - write < 2.0:
                        latencies.append(after[0] - write)
            return {"latencies": latencies, "expected": len(writes) * viewers, "cpu_per_viewer": cpu / wall / viewers,
                    "errors": sum(v.errors for v in crowd),
                    "round_trips": [t for v in crowd for t in v.round_trips]}

        live = run(url, etag, True)
        url, etag = _poller(client.get("/jobs/").content.decode())
        idle = run(url, etag, False)
        baseline = run("/healthz", "", False)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=20)
    return {"viewers": viewers, "workers": workers, "live": live, "idle": idle, "baseline": baseline}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.jobs_pages", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 jobs, 50 viewers for 6 s")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers (as docker-compose runs)")
    args = parser.parse_args(argv)
    jobs, rounds, viewers, seconds = (1_000, 20, 50, 6.0) if args.quick else (10_000, 50, 200, 12.0)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        url = _setup_django(Path(tmp))
        try:
            _seed(jobs)
            pages = bench_pages(rounds)
            print(f"pages over {pages['rows']:,} jobs ({rounds} rounds; baseline bare ORM page p50 "
                  f"{pages['baseline_p50_ms']:.1f} ms)")
            for name, (times, queries) in pages["results"].items():
                p50, p95 = _pct(times, 0.5) * 1000, _pct(times, 0.95) * 1000
                ratio = p50 / pages["baseline_p50_ms"] if pages["baseline_p50_ms"] else 0.0
                print(f"  {name:<28} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  queries {sorted(queries)}  "
                      f"×{ratio:.1f} baseline")
                ok &= p95 <= TARGET_PAGE_P95_MS
            result = bench_live(viewers, seconds, args.workers)
            live, base = result["live"], result["baseline"]
            lat = live["latencies"]
            p50, p95 = _pct(lat, 0.5), _pct(lat, 0.95)
            print(f"live: {result['viewers']} viewers polling every 1 s, gunicorn {result['workers']} sync workers")
            print(f"  event → viewer latency p50 {p50:.2f} s, p95 {p95:.2f} s (target ≤ {TARGET_LATENCY_P95_S} s); "
                  f"{len(lat)}/{live['expected']} changes seen, {live['errors']} errors")
            trips, base_trips = live["round_trips"], base["round_trips"]
            print(f"  request round trip p50 {_pct(trips, 0.5) * 1000:.0f} ms, p95 {_pct(trips, 0.95) * 1000:.0f} ms "
                  f"(baseline /healthz p50 {_pct(base_trips, 0.5) * 1000:.0f} ms, p95 "
                  f"{_pct(base_trips, 0.95) * 1000:.0f} ms); 1 s poll interval + round trip = latency")
            ratio = live["cpu_per_viewer"] / base["cpu_per_viewer"] if base["cpu_per_viewer"] else 0.0
            print(f"  server CPU per viewer {live['cpu_per_viewer'] * 1000:.1f} ms/s with a change every 2 s, "
                  f"{result['idle']['cpu_per_viewer'] * 1000:.1f} ms/s idle (304s only); baseline /healthz polls "
                  f"{base['cpu_per_viewer'] * 1000:.1f} ms/s → ×{ratio:.1f}")
            ok &= p95 <= TARGET_LATENCY_P95_S and len(lat) >= 0.95 * live["expected"]
        finally:
            _drop_database(url)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
