"""What the tracker stores for one TrainJob: its facts, admission and tree, flattened into plain JSON-able values.

Pure: built from an ``ownership.JobTree`` and its ``admission.Admission``; the service layer compares two records'
``comparable()`` forms to decide whether a row must be written at all.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field

from . import signals as sig
from .admission import Admission, admission_of_tree
from .ownership import JobTree, event_involved

MAX_PODS_STORED = 2_000  # a detail page shows at most this many pods; the counts cover the rest


@dataclass
class JobRecord:
    """The tracked state of one TrainJob, ready to be written. ``observed_version`` is the newest resourceVersion
    among the objects the state was computed from (the comparison key against older events)."""

    uid: str
    namespace: str
    name: str
    runtime_kind: str
    runtime_name: str
    num_nodes: int
    gpus_per_node: int
    resources_per_node: dict
    level: str
    queue_name: str
    creator: str
    priority_class: str
    state: str
    reason: str
    message: str
    since: dt.datetime | None
    submitted_at: dt.datetime | None
    pod_groups: list[dict] = field(default_factory=list)
    workload: dict = field(default_factory=dict)
    pods: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    kueue: dict = field(default_factory=dict)
    observed_version: str = ""

    # Columns compared to decide whether anything changed (``since`` is not: it is derived on transitions).
    COMPARED = ("namespace", "name", "runtime_kind", "runtime_name", "num_nodes", "gpus_per_node",
                "resources_per_node", "level", "queue_name", "creator", "priority_class", "state", "reason",
                "message", "pod_groups", "workload", "pods", "events", "kueue")

    def comparable(self) -> tuple:
        """Return the values of ``COMPARED`` (what a no-op event leaves unchanged)."""
        return tuple(getattr(self, name) for name in self.COMPARED)

    def digest(self) -> str:
        """Return a 32-hex-digit hash of ``comparable()``: equal digests mean the row would show the same."""
        raw = json.dumps(self.comparable(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()


def _event_view(event: dict) -> dict:
    involved = event_involved(event)
    return {"type": sig.as_str(event.get("type")), "reason": sig.as_str(event.get("reason")),
            "message": sig.as_str(event.get("message") or event.get("note"))[:1000],
            "count": sig.as_int(event.get("count"), 1),
            "lastTimestamp": sig.as_str(event.get("lastTimestamp") or event.get("eventTime")),
            "involvedObject": {"kind": sig.as_str(involved.get("kind")), "name": sig.as_str(involved.get("name"))}}


def _newest_version(objects: list[dict], versions: list[str] = ()) -> str:
    """Return the newest resourceVersion of ``objects`` and the further ``versions`` (the numerically largest;
    else the first non-empty one, since an opaque version cannot be ordered; "" when none has one)."""
    every = [*map(sig.resource_version_of, objects), *versions]
    numeric = [int(v) for v in every if v.isdigit()]
    if numeric:
        return str(max(numeric))
    return next((v for v in every if v), "")


def _requesting_pods(pods: list) -> list[dict]:
    """Return the pods :func:`signals.member_pod_requests` reads, as dicts: one pod per distinct (ReplicatedJob,
    requests) of the tracker's records (every pod of a ReplicatedJob asks the same, and the answer depends only on
    those two), the dicts as given."""
    seen: dict[tuple, dict] = {}
    dicts = []
    for pod in pods:
        if isinstance(pod, dict):
            dicts.append(pod)
            continue
        key = (pod.rjob, pod.requests)
        if key not in seen:
            seen[key] = pod.as_object()
    return [*seen.values(), *dicts]


def _pod_view(pod: object) -> dict:
    """Return what a row stores of one pod (the tracker's record of it, or a dict)."""
    if isinstance(pod, dict):
        name, phase, node, group = sig.name_of(pod), sig.pod_phase(pod), sig.pod_node(pod), sig.pod_group_name_of(pod)
    else:
        name, phase, node, group = pod.name, pod.phase, pod.node, pod.group_name
    return {"name": name, "phase": phase, "node": node, "podGroup": group, "zone": "", "block": "", "rack": ""}


def job_record(tree: JobTree, admission: Admission | None = None) -> JobRecord:
    """Return the record of ``tree`` (computing its admission when not given)."""
    admission = admission or admission_of_tree(tree)
    records = [pod for pod in tree.pods if not isinstance(pod, dict)]
    dicts = [pod for pod in tree.pods if isinstance(pod, dict)]
    facts = sig.trainjob_facts(tree.trainjob, _requesting_pods(tree.pods))
    workload = tree.workloads[0] if tree.workloads else None
    workload_view = {"name": sig.name_of(workload), "apiVersion": sig.as_str(workload.get("apiVersion")),
                     "templates": sig.workload_templates(workload)} if workload else {}
    pods = [_pod_view(pod) for pod in tree.pods[:MAX_PODS_STORED]]
    kueue = {}
    if tree.kueue_workloads:
        kq = tree.kueue_workloads[0]
        kueue = {"name": sig.name_of(kq), "conditions": [
            {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
            for c in sig.conditions_of(kq).values()]}
    observed = _newest_version([tree.trainjob, *tree.workloads, *tree.pod_groups, *dicts, *tree.kueue_workloads],
                               [record.version for record in records])
    return JobRecord(
        uid=facts.uid, namespace=facts.namespace, name=facts.name, runtime_kind=facts.runtime_kind,
        runtime_name=facts.runtime_name, num_nodes=facts.num_nodes, gpus_per_node=facts.gpus_per_node,
        resources_per_node=dict(facts.resources_per_node), level=admission.level, queue_name=facts.queue_name,
        creator=facts.creator, priority_class=facts.priority_class, state=admission.state,
        reason=admission.reason[:64], message=admission.message[:4000], since=admission.since,
        submitted_at=facts.submitted_at, pod_groups=[g.to_dict() for g in admission.pod_groups],
        workload=workload_view, pods=pods, events=[_event_view(e) for e in tree.events], kueue=kueue,
        observed_version=observed)
