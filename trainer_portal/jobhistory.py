"""The seam through which the forecast reads TrainJobs' recorded history without importing the app that owns them.

`jobs` records every TrainJob's arrival, size, state, admission and end; `forecast` needs them to simulate (the
live queue, what runs where, how long jobs of a kind run). Apps may not import each other, so a *history source*
is registered here — by the owner of the records, or (until it registers one) by the forecast app's own reader of
the jobs tables — and the forecast asks this module. Plain data only, no framework import.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from trainer_portal.jobfacts import JobRef

logger = logging.getLogger(__name__)

WAITING, RUNNING, FINISHED, OTHER = "waiting", "running", "finished", "other"


@dataclass(frozen=True)
class TrackedJob:
    """One TrainJob as recorded: ``phase`` is WAITING (not admitted yet), RUNNING (holding nodes), FINISHED
    (succeeded or failed after running) or OTHER (suspended, unknown). ``nodes`` names the node of every bound pod.
    ``priority`` is the numeric priority when known; ``active_deadline_seconds`` and ``remaining_seconds`` when
    the TrainJob or its trainer say them."""

    ref: JobRef
    phase: str
    runtime: str
    num_nodes: int
    gpus_per_node: int
    submitted_at: dt.datetime
    resources_per_node: Mapping[str, str] = field(default_factory=dict)
    pod_groups: tuple[Mapping, ...] = ()
    queue: str = ""
    priority: int | None = None
    admitted_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    nodes: tuple[str, ...] = ()
    active_deadline_seconds: int | None = None
    remaining_seconds: float | None = None


# A source returns the jobs of one cluster (the Cluster row's primary key) that are live now or finished since
# ``since``. It answers from stored state, never from a cluster.
HistorySource = Callable[[int, dt.datetime], Sequence[TrackedJob]]

_sources: dict[str, HistorySource] = {}


def register_history_source(name: str, source: HistorySource) -> None:
    """Register (or replace) the history source called ``name``. Returns nothing."""
    _sources[name] = source


def has_source(name: str) -> bool:
    """Return whether a source called ``name`` is registered."""
    return name in _sources


def tracked_jobs(cluster_id: int, since: dt.datetime) -> list[TrackedJob]:
    """Return the jobs every registered source knows for ``cluster_id`` (live, or finished since ``since``), one per
    UID (the first source to name a UID wins). A source that raises is logged and skipped. Raises nothing."""
    seen: dict[str, TrackedJob] = {}
    for name, source in list(_sources.items()):
        try:
            jobs = source(cluster_id, since) or ()
        except Exception:  # another app's code: its failure costs its records, never the forecast
            logger.exception("job history source %s failed", name)
            continue
        for job in jobs:
            seen.setdefault(job.ref.uid, job)
    return list(seen.values())
