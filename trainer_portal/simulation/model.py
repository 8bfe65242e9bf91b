"""The simulator's inputs: jobs (waiting or arriving), running jobs, and the setting they are simulated under."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from trainer_portal.placement import GANG, CompositeRequest, Job, PlacementRequest
from trainer_portal.placement.snapshot import LEVEL_NAMES, ClusterSnapshot

INF = math.inf


@dataclass(frozen=True)
class SimJob:
    """A TrainJob that waits now or arrives during a replay.

    `job` is what the placement engine places (its PodGroups). `arrival` is the submission time in seconds (the
    simulator's clock is plain seconds; callers pick the epoch). Cluster order is `priority` (higher first), then
    the Kueue `position` when known, then `arrival`. `queue` names the ClusterQueue ('' for a native gang; quota
    and StrictFIFO apply per queue). `duration` is the run time when known (replays of recorded history);
    otherwise it is drawn from the history of `runtime` and `gpus`, capped by `deadline` (activeDeadlineSeconds).
    """

    key: str
    job: Job
    gpus: int
    arrival: float = 0.0
    priority: int = 0
    queue: str = ""
    position: int | None = None
    duration: float | None = None
    deadline: float | None = None
    runtime: str = ""

    def order_key(self) -> tuple:
        """Return the sort key of cluster order."""
        return (-self.priority, self.position if self.position is not None else INF, self.arrival, self.key)


@dataclass(frozen=True)
class RunningJob:
    """A job that holds nodes now: its pods' nodes (one name per pod) and what each pod requests.

    The snapshot already counts these pods; the simulator frees them when the job ends. The end is, in this order:
    `remaining` seconds reported by the trainer, a run time drawn from history (given `started`), `deadline`
    (activeDeadlineSeconds after `started`), or unknown (the nodes never free within the simulation)."""

    key: str
    nodes: tuple[str, ...]
    pod_gpu: int = 0
    pod_cpu_milli: int = 0
    pod_mem: int = 0
    gpus: int = 0
    started: float = 0.0
    runtime: str = ""
    deadline: float | None = None
    remaining: float | None = None


@dataclass(frozen=True)
class SimSettings:
    """How admission behaves: `strict_fifo` queues block behind their head (Kueue StrictFIFO); `quotas` caps the
    GPUs a ClusterQueue may hold (nominal + borrowable); `topology` re-targets the gangs of a runtime to another
    topology level key (a policy what-if; '' means unconstrained)."""

    strict_fifo: frozenset[str] = frozenset()
    quotas: Mapping[str, float] = field(default_factory=dict)
    topology: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HistoryRecord:
    """One recorded TrainJob: when it arrived, started and ended (seconds), its size and kind. `start` is None for
    a job that never started."""

    key: str
    runtime: str
    nodes: int
    gpus_per_node: int
    topology_key: str | None
    arrival: float
    start: float | None
    end: float | None
    priority: int = 0
    queue: str = ""
    deadline: float | None = None

    @property
    def gpus(self) -> int:
        """Return the job's total GPUs."""
        return self.nodes * self.gpus_per_node

    def sim_job(self, *, with_duration: bool = True) -> SimJob:
        """Return the SimJob of this record (with its recorded run time when `with_duration`)."""
        duration = (self.end - self.start) if with_duration and self.start is not None and self.end is not None \
            else None
        return SimJob(self.key, job_for(self.key, self.nodes, {"nvidia.com/gpu": self.gpus_per_node},
                                        self.topology_key), self.gpus, self.arrival, self.priority, self.queue,
                      None, duration, self.deadline, self.runtime)


def job_for(name: str, nodes: int, resources: Mapping[str, object], topology_key: str | None = None) -> list[
        PlacementRequest]:
    """Return the placement requests of a one-gang TrainJob: `nodes` pods of `resources`, all in one domain of
    `topology_key` (None: anywhere)."""
    count = max(int(nodes), 1)
    return [PlacementRequest(name=name, pod_count=count, resources=dict(resources), min_count=count,
                             topology_key=topology_key or None)]


def retarget(job: Job, topology_key: str) -> Job:
    """Return `job` with its gangs' required topology set to `topology_key` ('' or None: unconstrained).
    Composite jobs are returned unchanged (their structure is the policy's own)."""
    if isinstance(job, CompositeRequest):
        return job
    out = []
    for request in job:
        if request.policy == GANG:
            request = PlacementRequest(**{**request.__dict__, "topology_key": topology_key or None})
        out.append(request)
    return out


def shape_signature(job: Job) -> tuple:
    """Return a hashable key equal for jobs the engine would place alike (names left out)."""
    if isinstance(job, CompositeRequest):
        return ("composite", repr(job.root.topology_key), tuple(repr(c.request) for c in job.children))
    return tuple((r.pod_count, tuple(sorted((k, str(v)) for k, v in r.resources.items())), r.min_count, r.policy,
                  r.topology_key, r.slice_size, r.slice_topology_key,
                  tuple(sorted(str(t) for t in r.tolerations)), len(r.extra)) for r in job)


def required_level(job: Job, snapshot: ClusterSnapshot) -> int | None:
    """Return the topology level index (0 zone … 3 host) the main gang must fit in, or None (anywhere / unknown)."""
    if isinstance(job, CompositeRequest):
        key = job.root.topology_key
    else:
        gangs = [r for r in job if r.policy == GANG and not r.preferred]
        key = gangs[0].topology_key if len(gangs) == 1 else None
    if not key:
        return None
    try:
        return snapshot.keys.level_of(key)
    except ValueError:
        return None


def level_name(level: int | None) -> str:
    """Return 'zone', 'block', 'rack', 'host' or 'cluster'."""
    return "cluster" if level is None else LEVEL_NAMES[level]
