"""`make bench` runs every benchmark module: each is listed in benchmarks.__main__.BENCHMARKS and runs as a script."""

from __future__ import annotations

from pathlib import Path

from benchmarks.__main__ import BENCHMARKS

BENCHMARKS_DIR = Path(__file__).resolve().parent.parent / "benchmarks"


def test_every_benchmark_module_is_run_by_make_bench():
    modules = sorted(path.stem for path in BENCHMARKS_DIR.glob("*.py") if not path.stem.startswith("_"))
    assert sorted(BENCHMARKS) == modules
    for name in modules:
        assert 'if __name__ == "__main__":' in (BENCHMARKS_DIR / f"{name}.py").read_text(encoding="utf-8"), name
