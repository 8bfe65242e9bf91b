"""Broker hammer: N deliveries from P concurrent producer processes into one real Celery worker.

The embedded broker (``atomicfs://``, trainer_portal/broker.py) must deliver everything and never kill the worker.
Counted per run: deliveries sent, delivered (distinct), lost, duplicated, worker crashes ("Unrecoverable error" in
its log, or the process exiting), throughput (deliveries per second, first publish to last delivery) and the
publish-to-run latency p50/p95. Baseline, same run and same load: kombu's stock ``filesystem://`` transport (the
one that made messages visible before they were written), so the table shows what the change buys.

    python -m benchmarks --only broker [--quick] [--deliveries 5000] [--producers 8] [--no-baseline]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STALL_SECONDS = 30.0


@dataclass
class HammerResult:
    transport: str
    sent: int
    delivered: int
    duplicated: int
    crashes: int
    seconds: float
    latencies: list[float]
    log_tail: str

    @property
    def lost(self) -> int:
        return self.sent - self.delivered

    @property
    def throughput(self) -> float:
        return self.delivered / self.seconds if self.seconds else 0.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def _environment(url: str, var_dir: Path, queue: str, record_file: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "trainer_portal.settings",
        "TRAINER_PORTAL_MODE": "embedded",
        "DATABASE_URL": f"sqlite:///{var_dir / 'unused.sqlite3'}",
        "TRAINER_PORTAL_VAR_DIR": str(var_dir),
        "CELERY_BROKER_URL": url,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "HAMMER_RECORD_FILE": str(record_file),
        "LOG_LEVEL": "WARNING",
    }


def _produce(env: dict[str, str], producer: int, count: int, start_at: float) -> None:
    os.environ.update(env)
    from benchmarks._broker_worker import app

    while time.time() < start_at:  # all producers start together
        time.sleep(0.001)
    with app.producer_or_acquire() as publisher:
        for index in range(count):
            app.send_task("hammer.record", args=[producer, index, time.time()], producer=publisher)


def hammer(*, url: str, deliveries: int, producers: int, concurrency: int = 2) -> HammerResult:
    """Publish ``deliveries`` tasks from ``producers`` processes to a fresh worker on ``url``; return the counts.

    Raises RuntimeError when the worker does not start.
    """
    with tempfile.TemporaryDirectory(prefix="broker-hammer-") as tmp:
        var_dir = Path(tmp) / "var"
        for folder in ("broker", "broker-processed", "broker-control"):
            (var_dir / folder).mkdir(parents=True)
        record_file = Path(tmp) / "record.txt"
        record_file.touch()
        queue = f"hammer-{uuid.uuid4().hex[:8]}"
        env = _environment(url, var_dir, queue, record_file)
        log_path = Path(tmp) / "worker.log"
        with log_path.open("w") as log:
            worker = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "benchmarks._broker_worker", "worker", "--pool=prefork",
                 f"--concurrency={concurrency}", "--loglevel=INFO", "-n", f"{queue}@%h"],
                cwd=var_dir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        try:
            deadline = time.monotonic() + 60
            while " ready." not in log_path.read_text(errors="replace"):
                if worker.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the hammer worker did not start:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.1)
            share = [deliveries // producers + (n < deliveries % producers) for n in range(producers)]
            spawn = multiprocessing.get_context("spawn")
            start_at = time.time() + 2.0
            processes = [spawn.Process(target=_produce, args=(env, n, share[n], start_at)) for n in range(producers)]
            for process in processes:
                process.start()
            seen: dict[tuple[int, int], float] = {}
            lines = 0
            last_progress = time.monotonic()
            finished_at = time.time()
            while len(seen) < deliveries and time.monotonic() - last_progress < STALL_SECONDS:
                time.sleep(0.2)
                rows = record_file.read_text().splitlines()
                if len(rows) > lines:
                    for row in rows[lines:]:
                        producer, index, latency = row.split()
                        seen.setdefault((int(producer), int(index)), float(latency))
                    lines = len(rows)
                    last_progress = time.monotonic()
                    finished_at = time.time()
            for process in processes:
                process.join(60)
            log_text = log_path.read_text(errors="replace")
            crashes = log_text.count("Unrecoverable error") or int(worker.poll() is not None)
            return HammerResult(
                transport=url.split("://")[0], sent=deliveries, delivered=len(seen), duplicated=lines - len(seen),
                crashes=crashes, seconds=finished_at - start_at, latencies=list(seen.values()),
                log_tail=log_text[-2000:],
            )
        finally:
            if worker.poll() is None:
                os.killpg(worker.pid, 15)
                try:
                    worker.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, 9)
                    worker.wait(10)


def main(argv: list[str] | None = None) -> int:
    """Run the hammer (and the stock-transport baseline); return 1 when the portal's broker crashed or lost any."""
    parser = argparse.ArgumentParser(prog="benchmarks.broker")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--deliveries", type=int, default=None)
    parser.add_argument("--producers", type=int, default=8)
    parser.add_argument("--no-baseline", action="store_true", help="skip the stock filesystem:// run")
    args = parser.parse_args(argv)
    deliveries = args.deliveries or (500 if args.quick else 5000)
    runs = [hammer(url="atomicfs://", deliveries=deliveries, producers=args.producers)]
    if not args.no_baseline:
        runs.append(hammer(url="filesystem://", deliveries=deliveries, producers=args.producers))
    print(f"{deliveries} deliveries from {args.producers} producer processes into one worker (2 pool processes)")
    print(f"{'transport':<12} {'delivered':>9} {'lost':>6} {'dup':>5} {'crashes':>7} {'per s':>8} "
          f"{'p50 ms':>8} {'p95 ms':>8}")
    for run in runs:
        p50, p95 = _pct(run.latencies, 0.5) * 1000, _pct(run.latencies, 0.95) * 1000
        print(f"{run.transport:<12} {run.delivered:>9} {run.lost:>6} {run.duplicated:>5} {run.crashes:>7} "
              f"{run.throughput:>8.0f} {p50:>8.1f} {p95:>8.1f}")
    if len(runs) == 2 and runs[1].throughput:
        print(f"throughput ratio atomicfs / filesystem: {runs[0].throughput / runs[1].throughput:.2f} "
              f"(the baseline stops counting when its worker dies)")
    ours = runs[0]
    if ours.crashes or ours.lost or ours.duplicated:
        print(ours.log_tail, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
