"""Benchmarks run by `make bench` (`python -m benchmarks`); never timed inside the test-suite."""
