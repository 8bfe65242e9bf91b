"""Run every benchmark module's ``main`` in turn: ``python -m benchmarks [--quick] [--only NAME ...]``.

Each module in this package exposing ``main(argv) -> int`` prints its own p50/p95 table and the ratio
against a baseline measured in the same run. Each runs in its own Python process (its own Django set-up and
throwaway database), so one module's end — or crash — cannot break the next; the run always reaches the last
module. The exit code is non-zero when any benchmark failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

# One name per line, so that modules added in parallel merge without conflicts.
BENCHMARKS = [
    "answer",
    "broker",
    "forecast",
    "jobs_pages",
    "live_pages",
    "metrics",
    "notifications",
    "placement",
    "queues",
    "sandbox_api",
    "snapshot_store",
    "sync",
    "tracking",
]


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks; return 0 when all succeeded, 1 otherwise."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", nargs="*", default=None, help="module names to run (default: all)")
    args, rest = parser.parse_known_args(argv)
    names = args.only or BENCHMARKS
    results: list[tuple[str, int, float]] = []
    for name in names:
        print(f"\n=== benchmarks.{name} ===", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", f"benchmarks.{name}",
                                *(["--quick"] if args.quick else []), *rest])
        elapsed = time.perf_counter() - started
        print(f"=== benchmarks.{name}: exit {code} in {elapsed:.1f} s ===", flush=True)
        results.append((name, code, elapsed))
    print("\n=== summary ===")
    for name, code, elapsed in results:
        print(f"  {name:<16} {'ok' if code == 0 else f'FAILED (exit {code})':<18} {elapsed:7.1f} s")
    return 1 if any(code for _, code, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
