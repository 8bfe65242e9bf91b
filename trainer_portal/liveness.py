"""Proof of life for a container's liveness probe: a long-running process touches its own file, the probe checks age.

The worker, beat and ``cluster_watch`` call :func:`touch` while their main loop makes progress (a heartbeat, a
publication, a watch event/bookmark/relist); ``manage.py process_alive NAME --max-age S`` exits non-zero when the
file is older than ``S`` seconds, and Kubernetes restarts the container. The file is local to the container (an
``emptyDir`` at ``/tmp``): another replica's progress never masks a wedged one, and a database outage does not make
every process look dead.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

PROCESSES = ("worker", "beat", "cluster-watch")


def alive_path(process: str) -> Path:
    """Return the file ``process`` touches (``$TRAINER_PORTAL_ALIVE_DIR`` or the temp dir, ``<process>.alive``).

    Raises ValueError for a process name not in :data:`PROCESSES`.
    """
    if process not in PROCESSES:
        raise ValueError(f"unknown process {process!r}; one of {', '.join(PROCESSES)}")
    folder = os.environ.get("TRAINER_PORTAL_ALIVE_DIR") or os.path.join(tempfile.gettempdir(), "trainer-portal")
    return Path(folder) / f"{process}.alive"


def touch(process: str) -> None:
    """Record that ``process`` made progress now. Never raises: a probe file must not take its process down."""
    try:
        path = alive_path(process)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    except (OSError, ValueError):
        pass


def age_seconds(process: str, *, now: float | None = None) -> float | None:
    """Return seconds since ``process`` last touched its file, or None when it never did."""
    try:
        modified = alive_path(process).stat().st_mtime
    except FileNotFoundError:
        return None
    return max(0.0, (time.time() if now is None else now) - modified)
