"""The forecast's own reader of the jobs tables, registered as a history source until the jobs app registers one.

The forecast may not import `jobs` (independent apps), so it reads the TrainJob rows through Django's app registry
by label (``apps.get_model("jobs", "TrainJob")``) and only the columns below; the jobs app can take this over by
registering a source named ``jobs`` on `trainer_portal.jobhistory` (this one then stands aside).
Tracked states map to phases: admitted / running / waiting-for-startup hold nodes; succeeded / failed after an
admission are finished; suspended and unknown are neither; the rest wait.
"""

from __future__ import annotations

import datetime as dt

from django.apps import apps
from django.db.models import Q

from trainer_portal.jobfacts import JobRef
from trainer_portal.jobhistory import FINISHED, OTHER, RUNNING, WAITING, TrackedJob, has_source

SOURCE_NAME = "forecast-jobs-tables"
OWNER_SOURCE = "jobs"
_RUNNING = {"admitted", "running", "waiting-for-startup"}
_FINISHED = {"succeeded", "failed"}
_OTHER = {"suspended", "unknown"}
MAX_JOBS = 50_000  # bounded read: the newest first


def _phase(state: str, admitted: bool) -> str:
    if state in _RUNNING:
        return RUNNING
    if state in _FINISHED:
        return FINISHED if admitted else OTHER
    if state in _OTHER:
        return OTHER
    return WAITING


def jobs_tables_source(cluster_id: int, since: dt.datetime) -> list[TrackedJob]:
    """Return the cluster's live TrainJobs and those finished since `since`, newest first (at most MAX_JOBS), or []
    when the jobs app is not installed or another source named ``jobs`` is registered."""
    if has_source(OWNER_SOURCE) or not apps.is_installed("jobs"):
        return []
    model = apps.get_model("jobs", "TrainJob")
    rows = (model.objects.filter(cluster_id=cluster_id)
            .filter(Q(gone_at__isnull=True) | Q(finished_at__gte=since))
            .only("uid", "namespace", "name", "runtime_name", "num_nodes", "gpus_per_node", "resources_per_node",
                  "pod_groups", "queue_name", "state", "submitted_at", "admitted_at", "finished_at", "pods",
                  "cluster_id")
            .order_by("-submitted_at", "-id")[:MAX_JOBS])
    out = []
    for row in rows:
        pods = row.pods if isinstance(row.pods, list) else []
        nodes = tuple(str(p.get("node")) for p in pods if isinstance(p, dict) and p.get("node")
                      and p.get("phase") not in ("Succeeded", "Failed"))
        groups = tuple(g for g in (row.pod_groups if isinstance(row.pod_groups, list) else []) if isinstance(g, dict))
        resources = row.resources_per_node if isinstance(row.resources_per_node, dict) else {}
        out.append(TrackedJob(JobRef(row.cluster_id, row.namespace, row.name, row.uid),
                              _phase(row.state, row.admitted_at is not None), row.runtime_name, row.num_nodes,
                              row.gpus_per_node, row.submitted_at, {str(k): str(v) for k, v in resources.items()},
                              groups, row.queue_name, None, row.admitted_at, row.finished_at, nodes))
    return out
