"""The seam through which other apps add facts to a TrainJob's page and API without `jobs` importing them.

`jobs` owns TrainJobs; `queues` knows Kueue's queues, quota and positions; `forecast` knows when a waiting job is
likely to start. Neither may import the other (import-linter independence contract), so an app that knows something
about jobs registers a *provider* here from its ``AppConfig.ready()``, and `jobs` asks this module for the facts of
the jobs it is about to show. No provider registered (the app not installed, or it knows nothing yet) means the
job simply has no such facts: the API answers ``null`` and the page leaves the line out.

Plain data only: no framework import, so the types can be shared by pure code and by every app.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobRef:
    """Which TrainJob: its cluster (the ``Cluster`` row's primary key), namespace, name and UID."""

    cluster_id: int
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class QuotaLine:
    """One (flavor, resource) of a ClusterQueue as it bears on one job: what the job asks and what the queue has.

    Quantities are in the resource's natural unit (GPUs and CPUs as counts, memory in bytes). ``borrowable`` is
    what the cohort could lend on top of ``nominal`` right now (0 without a cohort); ``free`` is
    ``nominal - used`` (never negative)."""

    resource: str
    flavor: str
    requested: float
    nominal: float
    used: float
    borrowable: float = 0.0

    @property
    def free(self) -> float:
        """Return the unused part of the nominal quota (never negative)."""
        return max(self.nominal - self.used, 0.0)


@dataclass(frozen=True)
class QueueFacts:
    """A job's place in Kueue: its LocalQueue and ClusterQueue, its position and the quota that bears on it.

    ``position`` is 1-based within ``position_in`` ("LocalQueue" or "ClusterQueue"), out of ``pending_in_queue``;
    ``position_source`` says where it came from ("visibility-api", or "unknown" with ``position`` None when the
    visibility API is missing or refused us). ``as_of`` is when the facts were read from the cluster."""

    local_queue: str
    cluster_queue: str = ""
    position: int | None = None
    position_in: str = ""
    pending_in_queue: int | None = None
    position_source: str = "unknown"
    quota: tuple[QuotaLine, ...] = ()
    as_of: dt.datetime | None = None


@dataclass(frozen=True)
class StartEstimate:
    """When a waiting job is likely to start: quantiles of the simulated start, or unknown with the reason.

    ``p10``/``p50``/``p90`` are None together when ``basis`` says why no estimate can be given."""

    p10: dt.datetime | None
    p50: dt.datetime | None
    p90: dt.datetime | None
    basis: str
    computed_at: dt.datetime


@dataclass
class JobFacts:
    """Everything the registered providers know about one job (None where a provider knows nothing)."""

    queue: QueueFacts | None = None
    estimated_start: StartEstimate | None = None
    extra: dict[str, object] = field(default_factory=dict)


# A provider takes the jobs about to be shown and returns what it knows about some of them. It must answer from
# stored state (the database, a cache), never from a cluster: pages and the API call it on every request.
QueueProvider = Callable[[Sequence[JobRef]], Mapping[JobRef, QueueFacts]]
StartProvider = Callable[[Sequence[JobRef]], Mapping[JobRef, StartEstimate]]

_queue_providers: dict[str, QueueProvider] = {}
_start_providers: dict[str, StartProvider] = {}


def register_queue_provider(name: str, provider: QueueProvider) -> None:
    """Register (or replace) the provider of queue facts called ``name``. Returns nothing."""
    _queue_providers[name] = provider


def register_start_provider(name: str, provider: StartProvider) -> None:
    """Register (or replace) the provider of start estimates called ``name``. Returns nothing."""
    _start_providers[name] = provider


def facts_for(jobs: Sequence[JobRef]) -> dict[JobRef, JobFacts]:
    """Return the facts every registered provider knows about ``jobs`` (a JobFacts for each job, possibly empty).

    A provider that raises is logged and skipped: a broken provider costs its facts, never the page. Raises
    nothing."""
    facts = {job: JobFacts() for job in jobs}
    if not jobs:
        return facts
    for name, provider in list(_queue_providers.items()):
        for job, value in _ask(name, provider, jobs).items():
            if job in facts:
                facts[job].queue = value
    for name, provider in list(_start_providers.items()):
        for job, value in _ask(name, provider, jobs).items():
            if job in facts:
                facts[job].estimated_start = value
    return facts


def _ask(name: str, provider: Callable, jobs: Sequence[JobRef]) -> Mapping:
    try:
        return provider(jobs) or {}
    except Exception:  # a provider is another app's code: its failure must not take the jobs pages down
        logger.exception("job facts provider %s failed", name)
        return {}
