"""Helpers for gateway tests; the sandbox fixtures (``sandbox``, ``cluster``, ``gateway``) are in tests/conftest.py."""

from __future__ import annotations

from runtimes.domain.manifest import new_runtime


def runtime(name: str, *, num_nodes: int = 1, image: str = "busybox") -> dict:
    """Return a small valid ClusterTrainingRuntime manifest."""
    return new_runtime(name, num_nodes=num_nodes, image=image)
