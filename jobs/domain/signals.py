"""Tolerant typed readers over raw Kubernetes objects (the dicts a watch delivers).

Every reader returns a sensible empty value for missing or malformed input and never raises: one odd object on a
watch stream must not stop the tracking of every other job.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import NamedTuple

TRAINER_API_GROUP = "trainer.kubeflow.org"
TRAINJOB_KIND = "TrainJob"
JOBSET_KIND = "JobSet"
WORKLOAD_KIND = "Workload"
PODGROUP_KIND = "PodGroup"

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# Where a cluster may record who submitted a TrainJob (first match wins). Kubernetes itself records no creator;
# admission webhooks and CLIs commonly stamp one of these.
CREATOR_KEYS = ("trainer.kubeflow.org/creator", "trainer-portal.io/creator", "app.kubernetes.io/created-by",
                "created-by", "kubernetes.io/created-by")
# The keys in use: the operator's list (setting TRAINER_PORTAL_CREATOR_KEYS, set by the jobs app) or CREATOR_KEYS.
_creator_keys: tuple[str, ...] = CREATOR_KEYS
# Field managers' names as people know the tools behind them.
_MANAGER_NAMES = (("kubectl", "kubectl"), ("OpenAPI-Generator", "the Kubernetes Python client"),
                  ("trainer-portal", "the portal"), ("kubeflow", "the Kubeflow SDK"))
GPU = "nvidia.com/gpu"

# PodGroup condition types per Kubernetes version (kubernetes-apis §4.4): 1.37 and 1.36 names of "scheduled".
SCHEDULED_CONDITIONS = ("PodGroupInitiallyScheduled", "PodGroupScheduled")
DISRUPTION_CONDITION = "DisruptionTarget"
KNOWN_PODGROUP_CONDITIONS = frozenset({*SCHEDULED_CONDITIONS, DISRUPTION_CONDITION})
KNOWN_TRAINJOB_CONDITIONS = frozenset({"Suspended", "Complete", "Failed"})

_INT = re.compile(r"^\s*(\d+)\s*$")


def as_dict(value: object) -> dict:
    """Return ``value`` if it is a dict, else an empty dict."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list:
    """Return ``value`` if it is a list, else an empty list."""
    return value if isinstance(value, list) else []


def as_str(value: object) -> str:
    """Return ``value`` if it is a string, else ""."""
    return value if isinstance(value, str) else ""


def as_int(value: object, default: int = 0) -> int:
    """Return ``value`` as a non-negative int (ints and digit strings), else ``default``."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, str) and _INT.match(value):
        return int(value)
    return default


def metadata(obj: object) -> dict:
    """Return ``obj.metadata`` (empty dict when missing)."""
    return as_dict(as_dict(obj).get("metadata"))


def spec(obj: object) -> dict:
    """Return ``obj.spec`` (empty dict when missing)."""
    return as_dict(as_dict(obj).get("spec"))


def status(obj: object) -> dict:
    """Return ``obj.status`` (empty dict when missing)."""
    return as_dict(as_dict(obj).get("status"))


def name_of(obj: object) -> str:
    """Return metadata.name ("" when missing)."""
    return as_str(metadata(obj).get("name"))


def namespace_of(obj: object) -> str:
    """Return metadata.namespace ("" when missing)."""
    return as_str(metadata(obj).get("namespace"))


def uid_of(obj: object) -> str:
    """Return metadata.uid ("" when missing)."""
    return as_str(metadata(obj).get("uid"))


def resource_version_of(obj: object) -> str:
    """Return metadata.resourceVersion ("" when missing)."""
    value = metadata(obj).get("resourceVersion")
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else ""


def labels_of(obj: object) -> dict[str, str]:
    """Return metadata.labels with string values only."""
    return {k: v for k, v in as_dict(metadata(obj).get("labels")).items() if isinstance(k, str) and isinstance(v, str)}


def label_of(obj: object, key: str) -> str:
    """Return the string value of label ``key`` ("" when missing or not a string): one lookup, no copy."""
    try:
        value = obj["metadata"]["labels"].get(key)
    except (KeyError, TypeError, AttributeError):
        return ""
    return value if isinstance(value, str) else ""


def annotations_of(obj: object) -> dict[str, str]:
    """Return metadata.annotations with string values only."""
    return {k: v for k, v in as_dict(metadata(obj).get("annotations")).items()
            if isinstance(k, str) and isinstance(v, str)}


def parse_time(value: object) -> dt.datetime | None:
    """Return an aware datetime from an RFC 3339 timestamp ("2026-12-01T12:04:00Z"), or None when unparseable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def created_at(obj: object) -> dt.datetime | None:
    """Return metadata.creationTimestamp as a datetime, or None."""
    return parse_time(metadata(obj).get("creationTimestamp"))


def compare_resource_versions(a: str, b: str) -> int | None:
    """Return -1/0/1 comparing two resourceVersions numerically, or None when either is not a decimal integer.

    Kubernetes documents resourceVersions as opaque, but etcd-backed servers (and the sandbox) issue increasing
    integers; comparing them is what client-go's informers do for "is this event older" in practice. Non-numeric
    versions cannot be ordered, so the caller falls back to "the later delivery wins".
    """
    if not (a.isdigit() and b.isdigit()):
        return None
    left, right = int(a), int(b)
    return (left > right) - (left < right)


# -- owner references ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OwnerRef:
    """One metadata.ownerReferences entry."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool

    @property
    def group(self) -> str:
        """Return the API group of the owner ("" for core)."""
        return self.api_version.split("/", 1)[0] if "/" in self.api_version else ""


def owner_refs(obj: object) -> list[OwnerRef]:
    """Return the well-formed ownerReferences of ``obj`` (entries without a uid are skipped)."""
    refs = []
    for raw in as_list(metadata(obj).get("ownerReferences")):
        entry = as_dict(raw)
        uid = as_str(entry.get("uid"))
        if not uid:
            continue
        refs.append(OwnerRef(as_str(entry.get("apiVersion")), as_str(entry.get("kind")), as_str(entry.get("name")),
                             uid, entry.get("controller") is True))
    return refs


def trainjob_owner_uids(obj: object) -> list[str]:
    """Return the UIDs of the TrainJobs among ``obj``'s owners, the controller first."""
    refs = [r for r in owner_refs(obj) if r.kind == TRAINJOB_KIND and r.group in ("", TRAINER_API_GROUP)]
    refs.sort(key=lambda r: not r.controller)
    return [r.uid for r in refs]


def controller_ref(workload: object) -> tuple[str, str, str]:
    """Return a scheduling Workload's ``spec.controllerRef`` as (apiGroup, kind, name) ("" parts when absent)."""
    ref = as_dict(spec(workload).get("controllerRef"))
    return as_str(ref.get("apiGroup")), as_str(ref.get("kind")), as_str(ref.get("name"))


def controller_ref_trainjob(workload: object) -> str:
    """Return the TrainJob name a Workload's controllerRef names, or "" when it names something else."""
    group, kind, name = controller_ref(workload)
    if kind == TRAINJOB_KIND and group in ("", TRAINER_API_GROUP):
        return name
    return ""


# -- conditions ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """A metav1.Condition; ``status`` is True, False or None (Unknown / malformed)."""

    type: str
    status: bool | None
    reason: str
    message: str
    last_transition: dt.datetime | None

    @property
    def true(self) -> bool:
        """Return True when the condition's status is "True"."""
        return self.status is True

    @property
    def false(self) -> bool:
        """Return True when the condition's status is "False"."""
        return self.status is False


def conditions_of(obj: object) -> dict[str, Condition]:
    """Return ``status.conditions`` by type (the last entry of a type wins; malformed entries are skipped)."""
    result: dict[str, Condition] = {}
    for raw in as_list(status(obj).get("conditions")):
        entry = as_dict(raw)
        kind = as_str(entry.get("type"))
        if not kind:
            continue
        raw_status = entry.get("status")
        value = True if raw_status == "True" or raw_status is True else False if raw_status in ("False", False) \
            else None
        result[kind] = Condition(kind, value, as_str(entry.get("reason")), as_str(entry.get("message")),
                                 parse_time(entry.get("lastTransitionTime")))
    return result


# -- TrainJob -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainJobFacts:
    """What a TrainJob says about itself, read tolerantly."""

    uid: str
    namespace: str
    name: str
    resource_version: str
    runtime_kind: str
    runtime_name: str
    num_nodes: int
    resources_per_node: dict[str, str]
    gpus_per_node: int
    suspend: bool
    queue_name: str
    priority_class: str
    creator: str
    submitted_at: dt.datetime | None
    deleting: bool


def configure_creator_keys(keys: object) -> tuple[str, ...]:
    """Set the label/annotation keys a TrainJob's creator is read from (first match wins); empty or invalid restores
    the defaults (``CREATOR_KEYS``). Returns the keys now in use."""
    global _creator_keys
    wanted = tuple(k.strip() for k in as_list(keys) if isinstance(k, str) and k.strip())
    _creator_keys = wanted or CREATOR_KEYS
    return _creator_keys


def creator_keys() -> tuple[str, ...]:
    """Return the label/annotation keys a TrainJob's creator is read from."""
    return _creator_keys


def creating_manager(obj: object) -> str:
    """Return the field manager that created ``obj`` from ``metadata.managedFields`` — the entry of the object itself
    (no subresource such as status) with the earliest time — or "" when there is none."""
    entries = [as_dict(e) for e in as_list(metadata(obj).get("managedFields"))]
    entries = [e for e in entries if as_str(e.get("manager")) and not as_str(e.get("subresource"))]
    if not entries:
        return ""
    first = min(enumerate(entries), key=lambda item: (as_str(item[1].get("time")) or "~", item[0]))[1]
    return as_str(first.get("manager"))


def creator_of(obj: object) -> str:
    """Return who created ``obj``: the first configured label/annotation that is set, else "created with <tool>"
    from the creating field manager ("created with kubectl"), else ""."""
    labels = labels_of(obj)
    annotations = annotations_of(obj)
    for key in _creator_keys:
        value = annotations.get(key) or labels.get(key)
        if value:
            return value[:253]
    manager = creating_manager(obj)
    if not manager:
        return ""
    tool = next((name for prefix, name in _MANAGER_NAMES if manager.lower().startswith(prefix.lower())), manager)
    return f"created with {tool}"[:253]


def _resource_requests(resources: object) -> dict[str, str]:
    """Return a ResourceRequirements' requests, limits filling in what is not requested (a limit alone implies an
    equal request)."""
    resources = as_dict(resources)
    return {**{str(k): str(v) for k, v in as_dict(resources.get("limits")).items()},
            **{str(k): str(v) for k, v in as_dict(resources.get("requests")).items()}}


def pod_requests(pod: object) -> dict[str, str]:
    """Return what one pod asks of its node: its containers' requests, integer amounts (GPUs, whole CPUs) summed
    over containers, other quantities from the first container naming them. Init containers are left out: they do
    not run beside the others."""
    total: dict[str, str] = {}
    for raw in as_list(spec(pod).get("containers")):
        for key, value in _resource_requests(as_dict(raw).get("resources")).items():
            if key in total and _INT.match(total[key]) and _INT.match(value):
                total[key] = str(int(total[key]) + int(value))
            else:
                total.setdefault(key, value)
    return total


def member_pod_requests(pods: object) -> dict[str, str]:
    """Return the per-node requests read from a job's member pods: the trainer's ``node`` pods when there are any,
    otherwise every pod; the pod asking the most GPUs wins (launchers and initializers ask for none). Returns {}
    when no pod asks for anything."""
    pods = as_list(pods)
    nodes = [p for p in pods if labels_of(p).get(REPLICATED_JOB_LABEL) == "node"] or pods
    best: dict[str, str] = {}
    for pod in nodes:
        requests = pod_requests(pod)
        if requests and (not best or as_int(requests.get(GPU)) > as_int(best.get(GPU))):
            best = requests
    return best


def trainjob_facts(trainjob: object, pods: object = (), runtime_requests: dict[str, str] | None = None
                   ) -> TrainJobFacts:
    """Return the tolerant summary of a TrainJob object.

    Per-node resources come from the TrainJob's ``spec.trainer.resourcesPerNode``; when it names none (the
    runtime's defaults apply), from the member ``pods``' container requests; else from ``runtime_requests`` (the
    runtime template's node container, when the caller knows it); else {} (0 GPUs per node).
    """
    tj_spec = spec(trainjob)
    runtime_ref = as_dict(tj_spec.get("runtimeRef"))
    trainer = as_dict(tj_spec.get("trainer"))
    requests = (_resource_requests(trainer.get("resourcesPerNode")) or member_pod_requests(pods)
                or dict(runtime_requests or {}))
    labels = labels_of(trainjob)
    creator = creator_of(trainjob)
    raw_nodes = trainer.get("numNodes")
    return TrainJobFacts(
        uid=uid_of(trainjob),
        namespace=namespace_of(trainjob),
        name=name_of(trainjob),
        resource_version=resource_version_of(trainjob),
        runtime_kind=as_str(runtime_ref.get("kind")) or "ClusterTrainingRuntime",
        runtime_name=as_str(runtime_ref.get("name")),
        num_nodes=as_int(raw_nodes, 1) if raw_nodes is not None else 1,
        resources_per_node=requests,
        gpus_per_node=as_int(requests.get(GPU), 0),
        suspend=tj_spec.get("suspend") is True,
        queue_name=labels.get(QUEUE_LABEL, ""),
        priority_class=labels.get(KUEUE_PRIORITY_LABEL, "") or as_str(tj_spec.get("priorityClassName")),
        creator=creator[:253],
        submitted_at=created_at(trainjob),
        deleting=bool(metadata(trainjob).get("deletionTimestamp")),
    )


def jobs_status(trainjob: object) -> list[dict[str, int | str]]:
    """Return ``status.jobsStatus`` entries as {name, ready, active, succeeded, failed, suspended}."""
    result = []
    for raw in as_list(status(trainjob).get("jobsStatus")):
        entry = as_dict(raw)
        result.append({"name": as_str(entry.get("name")),
                       **{key: as_int(entry.get(key)) for key in ("ready", "active", "succeeded", "failed",
                                                                  "suspended")}})
    return result


# -- scheduling.k8s.io Workload / PodGroup --------------------------------------------------------------------------


def _policy(raw: object) -> tuple[str, int | None]:
    policy = as_dict(raw)
    if "gang" in policy:
        return "gang", as_int(as_dict(policy.get("gang")).get("minCount"), 0) or None
    if "basic" in policy:
        return "basic", None
    return "unknown", None


def _topology_key(constraints: object) -> str:
    for raw in as_list(as_dict(constraints).get("topology")):
        key = as_str(as_dict(raw).get("key"))
        if key:
            return key
    return ""


def workload_templates(workload: object) -> list[dict]:
    """Return a Workload's PodGroup templates as [{name, policy, minCount, topologyKey}] for 1.35, 1.36 and 1.37."""
    wl_spec = spec(workload)
    templates = []
    for raw in as_list(wl_spec.get("podGroupTemplates")):
        entry = as_dict(raw)
        policy, min_count = _policy(entry.get("schedulingPolicy"))
        templates.append({"name": as_str(entry.get("name")), "policy": policy, "minCount": min_count,
                          "topologyKey": _topology_key(entry.get("schedulingConstraints"))})
    for raw in as_list(wl_spec.get("podGroups")):  # 1.35 v1alpha1
        entry = as_dict(raw)
        policy, min_count = _policy(entry.get("policy"))
        templates.append({"name": as_str(entry.get("name")), "policy": policy, "minCount": min_count,
                          "topologyKey": ""})
    return templates


def pod_group_policy(pod_group: object) -> tuple[str, int | None]:
    """Return a PodGroup's ("gang" | "basic" | "unknown", minCount or None)."""
    return _policy(spec(pod_group).get("schedulingPolicy"))


def pod_group_topology_key(pod_group: object) -> str:
    """Return the topology key a PodGroup must be co-located in ("" when unconstrained)."""
    return _topology_key(spec(pod_group).get("schedulingConstraints"))


def pod_group_workload(pod_group: object) -> tuple[str, str]:
    """Return (workload name, template name) a PodGroup refers to: 1.37 ``spec.workloadRef``, 1.36
    ``spec.podGroupTemplateRef.workload``; ("", "") when neither is present."""
    pg_spec = spec(pod_group)
    ref = as_dict(pg_spec.get("workloadRef"))
    if ref:
        return as_str(ref.get("workloadName")), as_str(ref.get("templateName"))
    legacy = as_dict(as_dict(pg_spec.get("podGroupTemplateRef")).get("workload"))
    return as_str(legacy.get("workloadName")), as_str(legacy.get("podGroupTemplateName"))


# -- Pod ------------------------------------------------------------------------------------------------------------


def pod_group_name_of(pod: object) -> str:
    """Return the PodGroup a pod belongs to: ``spec.schedulingGroup.podGroupName`` (1.36+), or the 1.35
    ``spec.workloadRef.podGroup`` ("" when the pod is in no group)."""
    try:  # the shape every pod has: one dict lookup chain (the gates read every pod several times)
        name = pod["spec"]["schedulingGroup"]["podGroupName"]
        if name and isinstance(name, str):
            return name
    except (KeyError, TypeError, IndexError):
        pass
    pod_spec = spec(pod)
    name = as_str(as_dict(pod_spec.get("schedulingGroup")).get("podGroupName"))
    if name:
        return name
    return as_str(as_dict(pod_spec.get("workloadRef")).get("podGroup"))


def pod_node(pod: object) -> str:
    """Return ``spec.nodeName`` ("" while unbound)."""
    try:
        node = pod["spec"].get("nodeName")
    except (KeyError, TypeError, AttributeError):
        return ""
    return node if isinstance(node, str) else ""


def pod_phase(pod: object) -> str:
    """Return ``status.phase`` ("Pending" when missing)."""
    try:
        phase = pod["status"].get("phase")
    except (KeyError, TypeError, AttributeError):
        return "Pending"
    return phase if phase and isinstance(phase, str) else "Pending"


def pod_is_bound(pod: object) -> bool:
    """Return True when the scheduler has bound the pod (``spec.nodeName`` set)."""
    return bool(pod_node(pod))


class PodRow(NamedTuple):
    """What the admission gates read of one pod, read once: its PodGroup, ReplicatedJob and Job index labels,
    phase and node."""

    group: str
    rjob: str
    index: str
    phase: str
    node: str
    pod: object


_new_row = tuple.__new__  # NamedTuple's own __new__ adds a Python call per pod


def pod_row(pod: object) -> PodRow:
    """Return the PodRow of ``pod`` (the same values as the single accessors; never raises)."""
    try:  # the shape every pod has, read with plain lookups; anything else takes the careful accessors
        labels = pod["metadata"]["labels"]
        pod_spec = pod["spec"]
        group = pod_spec["schedulingGroup"]["podGroupName"] if "schedulingGroup" in pod_spec else ""
        rjob = labels.get(REPLICATED_JOB_LABEL, "")
        index = labels.get(JOB_INDEX_LABEL, "")
        phase = pod["status"]["phase"]
        node = pod_spec.get("nodeName", "")
        if (group and type(group) is str and type(rjob) is str and type(index) is str and phase
                and type(phase) is str and type(node) is str):
            return _new_row(PodRow, (group, rjob, index, phase, node, pod))
    except (KeyError, TypeError, AttributeError):
        pass
    return PodRow(pod_group_name_of(pod), label_of(pod, REPLICATED_JOB_LABEL), label_of(pod, JOB_INDEX_LABEL),
                  pod_phase(pod), pod_node(pod), pod)


def pod_is_terminal(pod: object) -> bool:
    """Return True for Succeeded / Failed pods."""
    return pod_phase(pod) in ("Succeeded", "Failed")


def pod_unschedulable_message(pod: object) -> str:
    """Return the PodScheduled=False message (Unschedulable) of a pending pod, or ""."""
    condition = conditions_of(pod).get("PodScheduled")
    if condition is not None and condition.false:
        return condition.message or condition.reason
    return ""
