"""Live pages at a team's scale: event → browser latency with many open TrainJobs lists, streams against polling.

Scenarios (sizes: full / --quick), over 10,000 (1,000) tracked TrainJobs, one job changing every second (a new
message, which every open list shows), a real gunicorn (3 sync workers, as deployed) serving pages, and while the
viewers run, one page load (/jobs/) every 0.5 s:
- baseline, polling (today's fallback): 200 (50) viewers poll the list's live partial every second with
  If-None-Match, as the pages do without streams.
- streams: the same viewers hold a server-sent event stream each to one uvicorn process (``trainer_portal.asgi``),
  as the pages do with TRAINER_PORTAL_LIVE_STREAM on.
Per scenario: event → viewer latency p50/p95 (target p95 ≤ 1 s), page load p50/p95 (target p95 ≤ 300 ms), the
servers' CPU, errors; ratio streams/baseline. Viewers share --sessions sessions (20: a team's worth of people,
several tabs each); the hub asks the fragment once per distinct session and page state.
- capacity: 1,000 (200) streams open on one uvicorn process for 10 s (5 s) of changes: every stream opens, none
  errs, and the share that saw every change.

Database: a throwaway SQLite file, or a throwaway PostgreSQL database when DATABASE_URL points at PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import itertools
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

from benchmarks.jobs_pages import _cpu_seconds, _free_port, _poller, _seed, _users, wait_ready
from benchmarks.sync import _drop_database, _pct, _setup_django

TARGET_LATENCY_P95_S = 1.0
TARGET_PAGE_P95_MS = 300.0
MARKER = re.compile(r"bench-change-(\d+)")
_NUMBERS = itertools.count(1)  # one numbering across the scenarios: no marker means two changes


def _sessions(count: int) -> list[str]:
    from django.contrib.auth.models import User
    from django.test import Client

    viewer = User.objects.get(username="bench-viewer")
    cookies = []
    for _ in range(count):
        client = Client()
        client.force_login(viewer)
        cookies.append(f"sessionid={client.cookies['sessionid'].value}")
    return cookies


def _start(argv: list[str], port: int, env: dict) -> subprocess.Popen:
    from django.conf import settings

    server = subprocess.Popen(argv, env=env, cwd=str(settings.BASE_DIR))
    wait_ready(port, server)
    return server


def _stop(server: subprocess.Popen) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


class Changes(threading.Thread):
    """Writes one visible change per second (the newest job's message), recording when each was committed."""

    def __init__(self, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.stop, self.writes = stop, {}

    def run(self) -> None:
        from django.db import connection
        from django.db.models import F

        from jobs.models import TrainJob

        newest = TrainJob.objects.order_by("-submitted_at", "-id").first()
        while not self.stop.wait(1.0):
            number = next(_NUMBERS)
            TrainJob.objects.filter(pk=newest.pk).update(message=f"bench-change-{number}",
                                                         change_seq=F("change_seq") + 1_000_000)
            self.writes[number] = time.monotonic()
        connection.close()


class PageLoads(threading.Thread):
    """Loads the full list page every 0.5 s, as people opening pages do; records each round trip."""

    def __init__(self, port: int, cookie: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.port, self.cookie, self.stop = port, cookie, stop
        self.times: list[float] = []
        self.errors = 0

    def run(self) -> None:
        while not self.stop.wait(0.5):
            started = time.monotonic()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request("GET", "/jobs/", headers={"Cookie": self.cookie})
                response = conn.getresponse()
                response.read()
                conn.close()
                self.times.append(time.monotonic() - started)
                self.errors += response.status != 200
            except OSError:
                self.errors += 1


class Poller(threading.Thread):
    """Polls the list's live partial every second with If-None-Match (today's pages); records when each change's
    marker first arrived."""

    def __init__(self, port: int, path: str, etag: str, cookie: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.port, self.path, self.etag, self.cookie, self.stop = port, path, etag, cookie, stop
        self.seen: dict[int, float] = {}
        self.errors = 0

    def run(self) -> None:
        time.sleep(random.random())
        next_at = time.monotonic()
        while not self.stop.is_set():
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request("GET", self.path, headers={"Cookie": self.cookie, "HX-Request": "true",
                                                        "If-None-Match": self.etag})
                response = conn.getresponse()
                body = response.read().decode()
                conn.close()
                if response.status == 200:
                    now = time.monotonic()
                    for number in MARKER.findall(body):
                        self.seen.setdefault(int(number), now)
                    self.path, self.etag = _poller(body)
                elif response.status != 304:
                    self.errors += 1
            except (OSError, AttributeError):
                self.errors += 1
            next_at += 1.0
            time.sleep(max(0.0, next_at - time.monotonic()))


class StreamCrowd(threading.Thread):
    """Holds ``count`` event streams open from one asyncio loop (a browser each); records, per stream, when each
    change's marker first arrived, and how many failed to open or dropped."""

    def __init__(self, port: int, query: str, cookies: list[str], count: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.port, self.query, self.cookies, self.count, self.stop = port, query, cookies, count, stop
        self.seen: list[dict[int, float]] = [{} for _ in range(count)]
        self.opened = 0
        self.errors = 0

    def run(self) -> None:
        asyncio.run(self._main())

    async def _one(self, index: int) -> None:
        await asyncio.sleep(random.random() * 2.0)  # pages open over two seconds, not in one instant
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        except OSError:
            self.errors += 1
            return
        cookie = self.cookies[index % len(self.cookies)]
        writer.write(f"GET /live/stream?{self.query} HTTP/1.0\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\n"
                     "Accept: text/event-stream\r\n\r\n".encode())
        try:
            status = await asyncio.wait_for(reader.readline(), 60)
            if b" 200 " not in status:
                self.errors += 1
                return
            self.opened += 1
            while not self.stop.is_set():
                try:
                    line = await asyncio.wait_for(reader.readline(), 0.5)
                except TimeoutError:
                    continue
                if not line:
                    if not self.stop.is_set():
                        self.errors += 1  # dropped
                    return
                if line.startswith(b"data: "):
                    now = time.monotonic()
                    for number in MARKER.findall(line.decode()):
                        self.seen[index].setdefault(int(number), now)
        except (OSError, TimeoutError):
            self.errors += 1
        finally:
            writer.close()

    async def _main(self) -> None:
        await asyncio.gather(*(self._one(i) for i in range(self.count)))


def _latencies(writes: dict[int, float], seen: list[dict[int, float]]) -> tuple[list[float], int]:
    """Return every (viewer, change) latency and how many pairs were expected. A change is on a viewer's page from
    the first moment the page shows it or a later one (a poll that skipped it still caught up past it)."""
    latencies = []
    for views in seen:
        for number, at in writes.items():
            shown = [when for seen_number, when in views.items() if seen_number >= number]
            if shown:
                latencies.append(min(shown) - at)
    return latencies, len(writes) * len(seen)


def _run(viewers: list, seconds: float, port: int, cookie: str, pids: list[int]) -> dict:
    stop = threading.Event()
    for viewer in viewers:
        viewer.start()
    time.sleep(3.0)  # every viewer polled or opened its stream once
    crowds = [viewer for viewer in viewers if isinstance(viewer, StreamCrowd)]
    deadline = time.monotonic() + 120
    while any(c.opened + c.errors < c.count for c in crowds) and time.monotonic() < deadline:
        time.sleep(0.2)  # a thousand pages take a while to open: measure once they are all open
    time.sleep(1.0)
    cpu_start = [_cpu_seconds(pid) for pid in pids]
    wall_start = time.monotonic()
    changes, loads = Changes(stop), PageLoads(port, cookie, stop)
    changes.start()
    loads.start()
    time.sleep(seconds)
    stop.set()
    changes.join(timeout=10)
    loads.join(timeout=40)
    time.sleep(1.5)  # the last change reaches everybody
    cpu = [_cpu_seconds(pid) - start for pid, start in zip(pids, cpu_start, strict=True)]
    wall = time.monotonic() - wall_start
    for viewer in viewers:
        viewer.stop.set()
        viewer.join(timeout=30)
    return {"writes": changes.writes, "page_loads": loads.times, "page_errors": loads.errors,
            "cpu_per_s": sum(cpu) / wall, "stream_cpu_per_s": sum(cpu[1:]) / wall}


def bench(viewers: int, seconds: float, sessions: int, capacity: int, capacity_seconds: float) -> dict:
    from django.contrib.auth.models import User
    from django.test import Client

    cookies = _sessions(sessions)
    page_port, stream_port = _free_port(), _free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "trainer_portal.settings",
           "TRAINER_PORTAL_LIVE_STREAM": "/live/stream"}
    gunicorn = _start([sys.executable, "-m", "gunicorn", "trainer_portal.wsgi:application", "--bind",
                       f"127.0.0.1:{page_port}", "--workers", "3", "--log-level", "warning"], page_port, env)
    uvicorn = None
    try:
        client = Client()
        client.force_login(User.objects.get(username="bench-viewer"))
        results = {}
        # Baseline: polling.
        url, etag = _poller(client.get("/jobs/").content.decode())
        stop = threading.Event()
        pollers = [Poller(page_port, url, etag, cookies[i % len(cookies)], stop) for i in range(viewers)]
        run = _run(pollers, seconds, page_port, cookies[0], [gunicorn.pid])
        run["latencies"], run["expected"] = _latencies(run["writes"], [p.seen for p in pollers])
        run["errors"] = sum(p.errors for p in pollers)
        results["polling"] = run
        # Streams.
        uvicorn = _start([sys.executable, "-m", "uvicorn", "trainer_portal.asgi:application", "--host", "127.0.0.1",
                          "--port", str(stream_port), "--log-level", "warning", "--no-access-log"], stream_port, env)
        url, etag = _poller(client.get("/jobs/").content.decode())
        query = urllib.parse.urlencode({"page": url, "etag": etag})
        crowd = StreamCrowd(stream_port, query, cookies, viewers, threading.Event())
        run = _run([crowd], seconds, page_port, cookies[0], [gunicorn.pid, uvicorn.pid])
        run["latencies"], run["expected"] = _latencies(run["writes"], crowd.seen)
        run["errors"], run["opened"] = crowd.errors, crowd.opened
        results["streams"] = run
        # Capacity: many streams on one process.
        url, etag = _poller(client.get("/jobs/").content.decode())
        query = urllib.parse.urlencode({"page": url, "etag": etag})
        crowd = StreamCrowd(stream_port, query, cookies, capacity, threading.Event())
        run = _run([crowd], capacity_seconds, page_port, cookies[0], [gunicorn.pid, uvicorn.pid])
        run["latencies"], run["expected"] = _latencies(run["writes"], crowd.seen)
        run["errors"], run["opened"] = crowd.errors, crowd.opened
        last = max(run["writes"], default=0)
        run["complete"] = sum(1 for views in crowd.seen if last in views)
        results["capacity"] = run
    finally:
        for server in (uvicorn, gunicorn):
            if server is not None:
                _stop(server)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.live_pages", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 jobs, 50 viewers, 200 streams")
    parser.add_argument("--viewers", type=int, default=None, help="open list pages (200)")
    parser.add_argument("--sessions", type=int, default=20, help="distinct signed-in sessions among the viewers")
    args = parser.parse_args(argv)
    jobs, viewers, seconds, capacity, capacity_seconds = (
        (1_000, 50, 6.0, 200, 5.0) if args.quick else (10_000, 200, 15.0, 1_000, 10.0))
    viewers = args.viewers or viewers
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        url = _setup_django(Path(tmp))
        try:
            _seed(jobs)
            _users()
            results = bench(viewers, seconds, args.sessions, capacity, capacity_seconds)
        finally:
            _drop_database(url)
    print(f"{viewers} open TrainJobs lists ({args.sessions} sessions) over {jobs:,} jobs, a change every second, "
          f"a page load every 0.5 s; gunicorn 3 sync workers for pages")
    p95s = {}
    for name in ("polling", "streams"):
        run = results[name]
        lat, loads = run["latencies"], run["page_loads"]
        p95s[name] = (_pct(lat, 0.95), run["cpu_per_s"])
        print(f"  {name:<8} event → viewer p50 {_pct(lat, 0.5):.2f} s, p95 {_pct(lat, 0.95):.2f} s "
              f"({len(lat)}/{run['expected']} seen, {run['errors']} errors); page load p50 "
              f"{_pct(loads, 0.5) * 1000:.0f} ms, p95 {_pct(loads, 0.95) * 1000:.0f} ms ({run['page_errors']} "
              f"errors); servers' CPU {run['cpu_per_s'] * 1000:.0f} ms/s (stream server "
              f"{run['stream_cpu_per_s'] * 1000:.0f} ms/s)")
    (base_p95, base_cpu), (p95, cpu) = p95s["polling"], p95s["streams"]
    print(f"  streams / polling (baseline, same run): latency p95 ×{p95 / base_p95 if base_p95 else 0:.2f}, "
          f"server CPU ×{cpu / base_cpu if base_cpu else 0:.2f}; targets p95 ≤ {TARGET_LATENCY_P95_S} s, "
          f"page load p95 ≤ {TARGET_PAGE_P95_MS:.0f} ms")
    streams = results["streams"]
    ok &= p95 <= TARGET_LATENCY_P95_S and len(streams["latencies"]) >= 0.95 * streams["expected"]
    ok &= _pct(streams["page_loads"], 0.95) * 1000 <= TARGET_PAGE_P95_MS and streams["errors"] == 0
    cap = results["capacity"]
    lat = cap["latencies"]
    print(f"  capacity: {cap['opened']}/{capacity} streams opened on one uvicorn process, {cap['errors']} errors, "
          f"{cap['complete']} show the last of {len(cap['writes'])} changes; event → viewer p50 "
          f"{_pct(lat, 0.5):.2f} s, p95 {_pct(lat, 0.95):.2f} s; stream server CPU "
          f"{cap['stream_cpu_per_s'] * 1000:.0f} ms/s")
    ok &= cap["opened"] == capacity and cap["errors"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
