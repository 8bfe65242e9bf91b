"""Run every benchmark module's ``main`` in turn: ``python -m benchmarks [--quick] [--only NAME ...]``.

Each module in this package exposing ``main(argv) -> int`` prints its own p50/p95 table and the ratio
against a baseline measured in the same run. The exit code is non-zero when any benchmark failed.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
from pathlib import Path


def _benchmark_modules() -> list[str]:
    package_dir = Path(__file__).resolve().parent
    return sorted(
        info.name for info in pkgutil.iter_modules([str(package_dir)]) if not info.name.startswith("_")
    )


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks; return 0 when all succeeded, 1 otherwise."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", nargs="*", default=None, help="module names to run (default: all)")
    args, rest = parser.parse_known_args(argv)
    names = args.only or _benchmark_modules()
    failures = 0
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        if not hasattr(module, "main"):
            continue
        print(f"\n=== benchmarks.{name} ===", flush=True)
        started = time.perf_counter()
        code = module.main((["--quick"] if args.quick else []) + rest)
        print(f"=== benchmarks.{name}: exit {code} in {time.perf_counter() - started:.1f} s ===", flush=True)
        failures += bool(code)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
