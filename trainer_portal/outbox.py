"""The seam through which apps offer their append-only event logs to notifications without being imported.

`jobs` (TrainJob transitions), `runtimes` (sync failures, drift) and the cluster app (unreachable, watcher stale)
each keep an append-only log with a growing sequence. Each registers a :class:`Source` here from its
``AppConfig.ready()``; the notifications app reads every registered source from a cursor it stores, and asks the
source whether a given user may see an event before telling them about it. Neither side imports the other.

Plain data only: no framework import.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# Event kinds. Job kinds reach anyone who may see the job; platform kinds reach platform admins only.
ADMITTED = "admitted"
WAITING = "waiting"  # derived on a schedule (waiting longer than N minutes), not read from a log
PREEMPTED = "preempted"
FAILED = "failed"
SUCCEEDED = "succeeded"
SYNC_FAILED = "sync_failed"
DRIFT = "drift"
WATCHER_STALE = "watcher_stale"
CLUSTER_UNREACHABLE = "cluster_unreachable"
JOB_KINDS = (ADMITTED, WAITING, PREEMPTED, FAILED, SUCCEEDED)
PLATFORM_KINDS = (SYNC_FAILED, DRIFT, WATCHER_STALE, CLUSTER_UNREACHABLE)
ALL_KINDS = JOB_KINDS + PLATFORM_KINDS


@dataclass(frozen=True)
class Event:
    """One event of a source's log, in neutral terms.

    ``source`` and ``sequence`` identify it (``key``); ``cluster_id``/``cluster`` say where it happened;
    ``namespace`` is empty for cluster-wide events; ``subject`` is what it is about in words ("team-a/bert",
    a policy name, a cluster name); ``job`` is ``{"cluster", "namespace", "name", "uid"}`` for job events;
    ``creator``, ``runtime`` and ``queue`` are what subscriptions match on; ``path`` is the portal page about it.
    """

    source: str
    sequence: int
    kind: str
    cluster_id: int
    cluster: str
    at: dt.datetime
    subject: str
    namespace: str = ""
    job: dict[str, str] | None = None
    creator: str = ""
    runtime: str = ""
    queue: str = ""
    reason: str = ""
    message: str = ""
    path: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Return the event's identity across sources ("jobs:42")."""
        return f"{self.source}:{self.sequence}"

    def as_dict(self) -> dict[str, Any]:
        """Return the event as JSON-ready plain data (``at`` as ISO 8601)."""
        data = asdict(self)
        data["at"] = self.at.isoformat()
        data["key"] = self.key
        return data


@dataclass(frozen=True)
class Source:
    """An append-only log offered to notifications.

    ``events_after(cursor, limit)`` returns up to ``limit`` events with ``sequence > cursor`` in ascending order;
    ``head()`` returns the highest sequence written so far (where a new reader starts); ``visible(user, event)``
    says whether ``user`` may be told about ``event``; ``waiting(before, limit)`` (job sources only) returns the
    jobs waiting for admission since before ``before`` as ``WAITING`` events (``sequence``: the job row's id).
    """

    name: str
    kinds: tuple[str, ...]
    events_after: Callable[[int, int], Sequence[Event]]
    head: Callable[[], int]
    visible: Callable[[Any, Event], bool]
    waiting: Callable[[dt.datetime, int], Sequence[Event]] | None = None


_SOURCES: dict[str, Source] = {}


def register_source(source: Source) -> None:
    """Register ``source`` (replacing one of the same name: ``ready()`` may run twice in tests)."""
    _SOURCES[source.name] = source


def sources() -> list[Source]:
    """Return the registered sources in name order."""
    return [_SOURCES[name] for name in sorted(_SOURCES)]


def source_named(name: str) -> Source | None:
    """Return the source called ``name``, or None."""
    return _SOURCES.get(name)
