"""The queues app's provider for the job-facts seam (``trainer_portal.jobfacts``): each Kueue-queued TrainJob's
LocalQueue and ClusterQueue, its place in line and the quota lines of its ClusterQueue, from the database only.

Which position: the LocalQueue's (``position_in`` "LocalQueue", out of the LocalQueue's pending workloads). The
seam answers per job, not per viewer, and a job's page is shown only to those who may see its namespace: the place
among the namespace's own jobs is what its owners can act on, and it names nobody else's work. The ClusterQueue
position (which interleaves every team) is on the ClusterQueue page for those allowed to see it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from trainer_portal.jobfacts import JobRef, QueueFacts, QuotaLine

from .models import ClusterQueue, QueuedWorkload, QueueWatchState


def queue_facts(jobs: Sequence[JobRef]) -> Mapping[JobRef, QueueFacts]:
    """Return the queue facts of the jobs of ``jobs`` that have a Kueue Workload (others are left out).

    Three queries whatever the number of jobs (workloads, their queues' pending counts and ClusterQueues, the
    watcher's state). Raises DatabaseError when the database does not answer."""
    by_cluster: dict[int, dict[str, JobRef]] = {}
    for job in jobs:
        if job.uid:
            by_cluster.setdefault(job.cluster_id, {})[job.uid] = job
    out: dict[JobRef, QueueFacts] = {}
    for cluster_id, refs in by_cluster.items():
        rows = list(QueuedWorkload.objects.filter(cluster_id=cluster_id, job_uid__in=list(refs)))
        if not rows:
            continue
        queues = {(r.namespace, r.local_queue) for r in rows}
        pending = Counter(QueuedWorkload.objects.filter(
            cluster_id=cluster_id, state="pending", namespace__in={ns for ns, _ in queues},
            local_queue__in={lq for _, lq in queues}).values_list("namespace", "local_queue"))
        cqs = {cq.name: cq for cq in ClusterQueue.objects.filter(cluster_id=cluster_id,
                                                                 name__in={r.cluster_queue for r in rows})}
        state = QueueWatchState.objects.filter(cluster_id=cluster_id).first()
        as_of = state.synced_at if state else None
        for row in rows:
            job = refs.get(row.job_uid)
            if job is None or (job.namespace, job.name) != (row.namespace, row.job_name or job.name):
                continue
            known = row.state == "pending" and row.position_in_local_queue is not None
            out[job] = QueueFacts(
                local_queue=row.local_queue, cluster_queue=row.cluster_queue,
                position=row.position_in_local_queue + 1 if known else None,
                position_in="LocalQueue" if row.state == "pending" else "",
                pending_in_queue=pending.get((row.namespace, row.local_queue), 0) if row.state == "pending" else None,
                position_source="visibility-api" if known else "unknown",
                quota=_quota(cqs.get(row.cluster_queue), row.requests), as_of=as_of)
    return out


def _quota(queue: ClusterQueue | None, requests: dict) -> tuple[QuotaLine, ...]:
    """Return the ClusterQueue's usage lines for the resources the job asks for (all of them when it asks none)."""
    if queue is None:
        return ()
    lines = []
    for line in queue.usage:
        resource = line.get("resource", "")
        if requests and resource not in requests:
            continue
        lines.append(QuotaLine(resource=resource, flavor=line.get("flavor", ""),
                               requested=float(requests.get(resource, 0.0)), nominal=float(line.get("nominal", 0.0)),
                               used=float(line.get("used", 0.0)), borrowable=float(line.get("borrowable", 0.0))))
    return tuple(lines)
