"""From recorded TrainJobs to the simulator's inputs, and from its answers to what the portal shows. Pure.

Times: the simulator's clock is Unix seconds (UTC). A waiting job's placement requests are built as the jobs
app explains a wait: one request per tracked PodGroup (gangs first), else one gang of numNodes pods.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from trainer_portal.jobfacts import JobRef, QueueFacts, StartEstimate
from trainer_portal.jobhistory import FINISHED, RUNNING, WAITING, TrackedJob
from trainer_portal.placement import BASIC, GANG, PlacementRequest
from trainer_portal.placement.quantities import CPU, GPU, MEMORY, QuantityError, parse_resource, to_base_units
from trainer_portal.simulation import Durations, RunningJob, SimJob
from trainer_portal.simulation.model import HistoryRecord


def seconds(moment: dt.datetime) -> float:
    """Return `moment` as Unix seconds."""
    return moment.timestamp()


def moment(value: float | None) -> dt.datetime | None:
    """Return Unix seconds as an aware UTC datetime (None stays None)."""
    return None if value is None else dt.datetime.fromtimestamp(value, dt.UTC)


def _int(value: object) -> int:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0


def requests_for(job: TrackedJob) -> list[PlacementRequest]:
    """Return the placement requests of `job` (see the module docstring)."""
    resources = dict(job.resources_per_node)
    if GPU not in resources and job.gpus_per_node:
        resources[GPU] = str(job.gpus_per_node)
    requests = []
    for group in job.pod_groups:
        policy = GANG if group.get("policy") == "gang" else BASIC
        min_count = _int(group.get("minCount")) or None
        pods = max(_int(group.get("members")), min_count or 0) or job.num_nodes
        requests.append(PlacementRequest(name=str(group.get("name") or job.ref.name), pod_count=max(pods, 1),
                                         resources=resources, min_count=min_count if policy == GANG else None,
                                         policy=policy, topology_key=str(group.get("topologyKey") or "") or None))
    if not requests:
        count = max(job.num_nodes, 1)
        requests.append(PlacementRequest(name=job.ref.name, pod_count=count, resources=resources, min_count=count))
    requests.sort(key=lambda r: r.policy != GANG)
    return requests


def pod_units(job: TrackedJob) -> tuple[int, int, int]:
    """Return one pod's (GPUs, milli-CPU, memory bytes); malformed quantities count as 0."""
    units = []
    for resource in (GPU, CPU, MEMORY):
        value = job.resources_per_node.get(resource)
        if value is None and resource == GPU:
            value = job.gpus_per_node
        try:
            units.append(to_base_units(resource, parse_resource(resource, value)) if value is not None else 0)
        except QuantityError:
            units.append(0)
    return units[0], units[1], units[2]


def durations_of(jobs: Sequence[TrackedJob]) -> Durations:
    """Return the run-time history of the finished jobs (admitted → finished)."""
    return Durations.from_records(
        (job.runtime, job.num_nodes * job.gpus_per_node, seconds(job.finished_at) - seconds(job.admitted_at))
        for job in jobs if job.phase == FINISHED and job.admitted_at and job.finished_at)


def running_of(jobs: Sequence[TrackedJob]) -> list[RunningJob]:
    """Return the jobs holding nodes as the simulator's RunningJobs."""
    out = []
    for job in jobs:
        if job.phase != RUNNING:
            continue
        gpu, cpu, mem = pod_units(job)
        out.append(RunningJob(job.ref.uid, tuple(job.nodes), gpu, cpu, mem, job.num_nodes * job.gpus_per_node,
                              seconds(job.admitted_at or job.submitted_at), job.runtime,
                              float(job.active_deadline_seconds) if job.active_deadline_seconds else None,
                              job.remaining_seconds))
    return out


def waiting_of(jobs: Sequence[TrackedJob], queue_facts: Mapping[JobRef, QueueFacts]) -> list[SimJob]:
    """Return the waiting jobs as SimJobs in the order the cluster would take them: the stored priority (0 when
    unknown), the Kueue position when a queue provider knows it, then age."""
    out = []
    for job in jobs:
        if job.phase != WAITING:
            continue
        facts = queue_facts.get(job.ref)
        queue = (facts.cluster_queue or facts.local_queue) if facts else job.queue
        position = facts.position if facts else None
        out.append(SimJob(job.ref.uid, requests_for(job), job.num_nodes * job.gpus_per_node,
                          seconds(job.submitted_at), job.priority or 0, queue or "", position, None,
                          float(job.active_deadline_seconds) if job.active_deadline_seconds else None, job.runtime))
    return out


def history_records(jobs: Sequence[TrackedJob]) -> list[HistoryRecord]:
    """Return the backtest's records: every job that has started (arrival, start, end) or still waits."""
    out = []
    for job in jobs:
        if job.phase == WAITING or (job.admitted_at and job.phase in (RUNNING, FINISHED)):
            out.append(HistoryRecord(job.ref.uid, job.runtime, max(job.num_nodes, 1), job.gpus_per_node,
                                     next((str(g.get("topologyKey")) for g in job.pod_groups
                                           if g.get("topologyKey")), None),
                                     seconds(job.submitted_at),
                                     seconds(job.admitted_at) if job.admitted_at else None,
                                     seconds(job.finished_at) if job.finished_at else None, job.priority or 0,
                                     job.queue,
                                     float(job.active_deadline_seconds) if job.active_deadline_seconds else None))
    return out


def to_start_estimate(p10: dt.datetime | None, p50: dt.datetime | None, p90: dt.datetime | None, basis: str,
                      computed_at: dt.datetime, now: dt.datetime, stale_after: float) -> StartEstimate:
    """Return the seam's StartEstimate, saying in the basis when the estimate is older than `stale_after` s."""
    age = (now - computed_at).total_seconds()
    if age > stale_after:
        basis = f"{basis} (computed {int(age // 60)} min ago; not recomputed since)"
    return StartEstimate(p10, p50, p90, basis, computed_at)


def compact(p50: dt.datetime | None, now: dt.datetime) -> str:
    """Return the list's compact form: "≈ 40 min", "≈ 3 h", "≈ 2 d", "now", or "unknown"."""
    if p50 is None:
        return "unknown"
    delta = (p50 - now).total_seconds()
    if delta < 60:
        return "now"
    if delta < 3600:
        return f"≈ {round(delta / 60)} min"
    if delta < 2 * 86400:
        return f"≈ {delta / 3600:.0f} h"
    return f"≈ {delta / 86400:.0f} d"
