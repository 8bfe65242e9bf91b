"""What the simulated Trainer v2.4 controller creates for one TrainJob: pods per ReplicatedJob, PodGroups, minCount.

Written from the upstream controller's rules, independently of the portal's preview (a differential test compares
the two):
- Pod counts (`pkg/runtime/core/trainingruntime.go`, then the torch / MPI plugins): every ReplicatedJob runs
  `replicas` Jobs of `parallelism` pods (default 1); the one labelled `trainer.kubeflow.org/trainjob-ancestor-step:
  trainer` runs `mlPolicy.numNodes` pods (default 1). A TrainJob's `spec.trainer.numNodes` then sets the trainer's
  count (torch and plain runtimes) or, with `mlPolicy.mpi`, ReplicatedJob `node`'s: numNodes, or
  `max(numNodes - 1, 1)` with `runLauncherAsNode`. Initializers keep their parallelism. `resourcesPerNode` is
  merged into the `node` container of the trainer (and of ReplicatedJob `node` with `runLauncherAsNode`).
- Scheduling (KEP-3015 as released in v2.4.0): no `spec.scheduling` means no Workload. Level 1 (`schedulingPolicy`,
  `schedulingConstraints`, `disruptionMode` on `spec.scheduling`) is one template for the whole TrainJob, or one per
  ReplicatedJob when startup is sequenced (`dependsOn` / `startupPolicyOrder: InOrder`). Level 2 is one template per
  `replicatedJobs` entry, level 3 (`job`) one per Job of the single targeted ReplicatedJob. Policy defaults to
  gang; `minCount` is the group's pod count (never user-set); basic groups have none. Level 1 and level 2 are
  mutually exclusive (no composite in v2.4.0), every ReplicatedJob must be targeted exactly once, at most 8
  templates. A rule broken raises `PlanError`, which fails the TrainJob.
- Names are salted with the TrainJob UID and its incarnation (a new one after each resume), so nothing can find
  these objects by predicting their names: Workload `<trainjob>-<hash>`, PodGroup `<workload>-<template>-<hash>`
  (level 1: `<workload>-<hash>`), every name ≤ 63 characters.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from decimal import Decimal

from sandbox.controllers.common import ANCESTOR_LABEL, TRAINER_GROUP_VERSION, KubeFlavour, meta

MAX_TEMPLATES = 8
MAX_NAME = 63
PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"
LEVEL_ONE_FIELDS = ("schedulingPolicy", "schedulingConstraints", "disruptionMode")
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class PlanError(ValueError):
    """The runtime or the TrainJob breaks a rule the v2.4 controller enforces; the message says which and how."""


@dataclass(frozen=True)
class ReplicatedJobPlan:
    """One ReplicatedJob: `replicas` Jobs of `pods_per_job` pods, each requesting `resources`."""

    name: str
    replicas: int
    pods_per_job: int
    ancestor: str | None
    resources: dict
    depends_on: tuple[tuple[str, str], ...]  # (ReplicatedJob, "Ready" | "Complete")
    priority_class_name: str | None

    @property
    def pods(self) -> int:
        """Return the number of pods of all Jobs of this ReplicatedJob."""
        return self.replicas * self.pods_per_job


@dataclass(frozen=True)
class GroupPlan:
    """One PodGroupTemplate of the Workload and the PodGroup made from it."""

    template: str
    name: str
    level: int
    policy: str  # "gang" | "basic"
    min_count: int | None
    replicated_jobs: tuple[str, ...]
    job_index: int | None  # level 3: the Job (replica) index
    pods: int
    topology_key: str | None
    raw: dict  # the authoring fields (schedulingPolicy, schedulingConstraints, disruptionMode; level 3 resourceClaims)
    priority_class_name: str | None


@dataclass(frozen=True)
class Plan:
    """Everything the controller creates for one TrainJob incarnation."""

    replicated_jobs: tuple[ReplicatedJobPlan, ...]
    workload_name: str | None
    groups: tuple[GroupPlan, ...]
    sequenced: bool

    def replicated_job(self, name: str) -> ReplicatedJobPlan:
        """Return the plan of ReplicatedJob `name`; raises KeyError when there is none."""
        return next(r for r in self.replicated_jobs if r.name == name)

    def group_for(self, rjob: str, job_index: int) -> GroupPlan | None:
        """Return the group whose pods include Job `job_index` of `rjob`, or None (no Workload)."""
        for group in self.groups:
            if rjob in group.replicated_jobs and group.job_index in (None, job_index):
                return group
        return None

    def workload(self, trainjob: dict, flavour: KubeFlavour) -> dict | None:
        """Return the scheduling Workload object (None without `spec.scheduling`)."""
        if self.workload_name is None:
            return None
        templates = []
        for group in self.groups:
            template = {"name": group.template, **_group_spec(group, flavour)}
            templates.append(template)
        return {
            "apiVersion": flavour.scheduling_api_version,
            "kind": "Workload",
            "metadata": {"name": self.workload_name, "namespace": meta(trainjob).get("namespace", "default"),
                         "ownerReferences": [_owner(trainjob, controller=True)]},
            "spec": {"controllerRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainJob",
                                       "name": meta(trainjob)["name"]},
                     "podGroupTemplates": templates},
        }

    def pod_groups(self, trainjob: dict, flavour: KubeFlavour, workload: dict) -> list[dict]:
        """Return the PodGroup objects, owned by the TrainJob (controller) and the created `workload`."""
        result = []
        workload_owner = {"apiVersion": flavour.scheduling_api_version, "kind": "Workload",
                          "name": meta(workload)["name"], "uid": meta(workload).get("uid", ""),
                          "controller": False, "blockOwnerDeletion": True}
        for group in self.groups:
            spec = _group_spec(group, flavour)
            if flavour.scheduling_version == "v1alpha2":
                spec["podGroupTemplateRef"] = {"workload": {"workloadName": self.workload_name,
                                                            "podGroupTemplateName": group.template}}
            else:
                spec["workloadRef"] = {"workloadName": self.workload_name, "templateName": group.template}
            metadata = {"name": group.name, "namespace": meta(trainjob).get("namespace", "default"),
                        "ownerReferences": [_owner(trainjob, controller=True), workload_owner]}
            if flavour.scheduling_version != "v1alpha2":
                # 1.37 protects leaf PodGroups (the API server adds this too; set here for servers that do not).
                metadata["finalizers"] = [PROTECTION_FINALIZER]
            result.append({"apiVersion": flavour.scheduling_api_version, "kind": "PodGroup", "metadata": metadata,
                           "spec": spec})
        return result


def _owner(trainjob: dict, *, controller: bool) -> dict:
    return {"apiVersion": TRAINER_GROUP_VERSION, "kind": "TrainJob", "name": meta(trainjob)["name"],
            "uid": meta(trainjob).get("uid", ""), "controller": controller, "blockOwnerDeletion": True}


def _group_spec(group: GroupPlan, flavour: KubeFlavour) -> dict:
    """Return schedulingPolicy (+ constraints, disruption mode, priority class) as the API version spells them."""
    policy = {"gang": {"minCount": group.min_count}} if group.policy == "gang" else {"basic": {}}
    spec: dict = {"schedulingPolicy": policy}
    constraints = group.raw.get("schedulingConstraints")
    if constraints:
        spec["schedulingConstraints"] = constraints
    mode = _disruption_mode(group.raw.get("disruptionMode"))
    if mode is not None:
        if flavour.scheduling_version == "v1alpha2":
            spec["disruptionMode"] = "Pod" if mode == "single" else "PodGroup"
        else:
            spec["disruptionMode"] = {mode: {}}
    if group.priority_class_name:
        spec["priorityClassName"] = group.priority_class_name
    claims = group.raw.get("resourceClaims")
    if claims:
        spec["resourceClaims"] = [dict(claim) for claim in claims if isinstance(claim, dict)]
    return spec


def pod_claims(pod_group: dict | None) -> list[dict]:
    """Return the pod's `spec.resourceClaims` for the claims the created `pod_group` kept (none when the API server
    dropped them, as it does while DRAWorkloadResourceClaims is off): every pod of the group shares each claim, by
    its `resourceClaimName` or, for a template, by the claim generated for the group (`<podgroup>-<claim>`)."""
    claims = ((pod_group or {}).get("spec") or {}).get("resourceClaims") or []
    shared = []
    for claim in claims:
        if not isinstance(claim, dict) or not claim.get("name"):
            continue
        source = claim.get("resourceClaimName") or _join(f"{meta(pod_group)['name']}-{claim['name']}"[:MAX_NAME - 7],
                                                        salted_hash(meta(pod_group)["name"], claim["name"], length=5))
        shared.append({"name": claim["name"], "resourceClaimName": source})
    return shared


def _disruption_mode(value: object) -> str | None:
    if value in (None, {}):
        return None
    if value in ("Pod", "single") or (isinstance(value, dict) and "single" in value):
        return "single"
    if value in ("PodGroup", "all") or (isinstance(value, dict) and "all" in value):
        return "all"
    raise PlanError(f"disruptionMode {value!r} is not one of {{single: {{}}}} or {{all: {{}}}}")


# -- names ---------------------------------------------------------------------------------------------------------


def salted_hash(*parts: object, length: int = 8) -> str:
    """Return a `length`-character suffix (Kubernetes' rand alphabet) derived from `parts`."""
    number = int(hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest(), 16)
    chars = []
    for _ in range(length):
        number, index = divmod(number, len(_ALPHABET))
        chars.append(_ALPHABET[index])
    return "".join(chars)


def _join(prefix: str, suffix: str) -> str:
    """Return `<prefix>-<suffix>` within 63 characters, cutting the prefix."""
    room = MAX_NAME - len(suffix) - 1
    return f"{prefix[:room].rstrip('-.')}-{suffix}"


def _template_name(parts: list[str]) -> str:
    name = "-".join(parts)
    return name if len(name) <= MAX_NAME else _join(name, salted_hash(name, length=6))


# -- reading the runtime -------------------------------------------------------------------------------------------


def _dict(value: object, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PlanError(f"{where} must be an object")
    return value


def _count(value: object, where: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PlanError(f"{where} must be a non-negative integer, got {value!r}")
    return value


def quantity_text(value: object) -> str:
    """Return a resource quantity as the API server stores it (a string; JSON numbers become "8", "0.5")."""
    if isinstance(value, bool):
        raise PlanError(f"invalid quantity {value!r}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else format(Decimal(repr(value)).normalize(), "f")
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise PlanError(f"invalid quantity {value!r}")


def _requests(resources: dict) -> dict[str, str]:
    """Return limits overlaid with requests (a missing request defaults to its limit), quantities as strings."""
    merged = dict(_dict(resources.get("limits"), "resources.limits"))
    merged.update(_dict(resources.get("requests"), "resources.requests"))
    return {name: quantity_text(value) for name, value in merged.items()}


def _main_container(pod_spec: dict, rjob: str, ancestor: str | None) -> dict:
    containers = [c for c in pod_spec.get("containers") or [] if isinstance(c, dict)]
    wanted = ("node",) if ancestor == "trainer" else (ancestor, rjob, "node")
    return next((c for c in containers if c.get("name") in wanted), containers[0] if containers else {})


def _replicated_jobs(spec: dict, trainer: dict) -> tuple[ReplicatedJobPlan, ...]:
    ml_policy = spec.get("mlPolicy")
    has_policy = isinstance(ml_policy, dict)
    ml_policy = _dict(ml_policy, "spec.mlPolicy")
    runtime_nodes = _count(ml_policy.get("numNodes"), "spec.mlPolicy.numNodes", 1) or 1
    trainjob_nodes = _count(trainer.get("numNodes"), "spec.trainer.numNodes", 0) or None
    mpi = ml_policy.get("mpi")
    launcher_as_node = isinstance(mpi, dict) and bool(mpi.get("runLauncherAsNode"))
    per_node = trainer.get("resourcesPerNode")
    jobset = _dict(_dict(spec.get("template"), "spec.template").get("spec"), "spec.template.spec")
    items = jobset.get("replicatedJobs") or []
    if not isinstance(items, list) or not items:
        raise PlanError("spec.template.spec.replicatedJobs is empty; the runtime needs at least one ReplicatedJob")
    plans, names = [], set()
    for item in items:
        item = _dict(item, "spec.template.spec.replicatedJobs[]")
        name = item.get("name")
        if not isinstance(name, str) or not name or name in names:
            raise PlanError(f"ReplicatedJob name {name!r} is missing or not unique")
        names.add(name)
        job = _dict(item.get("template"), f"ReplicatedJob {name} template")
        ancestor = (_dict(job.get("metadata"), "metadata").get("labels") or {}).get(ANCESTOR_LABEL)
        job_spec = _dict(job.get("spec"), f"ReplicatedJob {name} template.spec")
        pod_spec = _dict(_dict(job_spec.get("template"), "template").get("spec"), "pod spec")
        # The runtime's count (trainingruntime.go), then the ML plugin's override from the TrainJob.
        pods = _count(job_spec.get("parallelism"), f"ReplicatedJob {name} parallelism", 1)
        if ancestor == "trainer" and has_policy:
            pods = runtime_nodes
        if mpi is not None:
            if name == "node" and trainjob_nodes:
                pods = max(trainjob_nodes - 1, 1) if launcher_as_node else trainjob_nodes
        elif ancestor == "trainer" and trainjob_nodes:
            pods = trainjob_nodes
        container = _main_container(pod_spec, name, ancestor)
        resources = _requests(_dict(container.get("resources"), "resources"))
        takes_per_node = (ancestor == "trainer" and has_policy) or (launcher_as_node and name == "node")
        if per_node is not None and takes_per_node and container.get("name") == "node":
            # MergeResourceRequirements: the TrainJob's requests and limits overlay the container's.
            per_node = _dict(per_node, "spec.trainer.resourcesPerNode")
            base = _dict(container.get("resources"), "resources")
            resources = _requests({
                "limits": {**_dict(base.get("limits"), "limits"), **_dict(per_node.get("limits"), "limits")},
                "requests": {**_dict(base.get("requests"), "requests"),
                             **_dict(per_node.get("requests"), "requests")}})
        depends = tuple((_dict(d, "dependsOn[]").get("name", ""), _dict(d, "dependsOn[]").get("status", "Ready"))
                        for d in item.get("dependsOn") or [])
        plans.append(ReplicatedJobPlan(name, _count(item.get("replicas"), f"ReplicatedJob {name} replicas", 1),
                                       pods, ancestor if isinstance(ancestor, str) else None, resources, depends,
                                       pod_spec.get("priorityClassName") or None))
    for plan in plans:
        for target, status in plan.depends_on:
            if target not in names or status not in ("Ready", "Complete"):
                raise PlanError(f"ReplicatedJob {plan.name} dependsOn {target!r} ({status}): the target must be a "
                                f"ReplicatedJob of the runtime and the status Ready or Complete")
    return tuple(plans)


# -- scheduling ----------------------------------------------------------------------------------------------------


def _policy(fields: dict, where: str) -> str:
    policy = _dict(fields.get("schedulingPolicy"), f"{where}.schedulingPolicy")
    kinds = [k for k in policy if policy[k] is not None]
    if not kinds:
        return "gang"
    if len(kinds) != 1 or kinds[0] not in ("gang", "basic"):
        raise PlanError(f"{where}.schedulingPolicy must set exactly one of gang or basic, got {sorted(policy)}")
    if kinds[0] == "gang" and _dict(policy["gang"], f"{where}.schedulingPolicy.gang").get("minCount") is not None:
        raise PlanError(f"{where}.schedulingPolicy.gang.minCount is computed by the TrainJob controller; remove it")
    return kinds[0]


def _topology_key(fields: dict, where: str) -> str | None:
    topology = _dict(fields.get("schedulingConstraints"), f"{where}.schedulingConstraints").get("topology") or []
    if len(topology) > 1:
        raise PlanError(f"{where}.schedulingConstraints.topology allows one entry")
    return _dict(topology[0], "topology[0]").get("key") if topology else None


def plan_for(runtime: dict, trainjob: dict, incarnation: str = "") -> Plan:
    """Return the Plan of `trainjob` on `runtime`, names salted with its UID and `incarnation`.

    Raises PlanError when the runtime breaks a v2.4 rule (the message names the field and the fix).
    """
    spec = _dict(runtime.get("spec"), "spec")
    trainer = _dict((trainjob.get("spec") or {}).get("trainer"), "spec.trainer")
    rjobs = _replicated_jobs(spec, trainer)
    scheduling = spec.get("scheduling")
    jobset = _dict(_dict(spec.get("template"), "spec.template").get("spec"), "spec.template.spec")
    sequenced = (_dict(jobset.get("startupPolicy"), "startupPolicy").get("startupPolicyOrder") == "InOrder"
                 or any(r.depends_on for r in rjobs))
    if scheduling is None:
        return Plan(rjobs, None, (), sequenced)
    scheduling = _dict(scheduling, "spec.scheduling")
    if spec.get("podGroupPolicy") is not None:
        raise PlanError("spec.scheduling and spec.podGroupPolicy are mutually exclusive")
    tj = meta(trainjob)
    workload = _join(tj["name"], salted_hash(tj.get("uid", ""), incarnation, "workload"))
    by_name = {r.name: r for r in rjobs}
    # (template, level, rJobs, job index, authoring fields)
    shapes: list[tuple[str, int, tuple[str, ...], int | None, dict]] = []
    entries = scheduling.get("replicatedJobs") or []
    level_one = {k: scheduling[k] for k in LEVEL_ONE_FIELDS if scheduling.get(k) is not None}
    if entries and level_one:
        raise PlanError("spec.scheduling: level-1 fields and replicatedJobs are mutually exclusive in Trainer v2.4 "
                        "(composite PodGroups come later); keep one of them")
    if not entries:
        if sequenced:  # a TrainJob-wide gang could never start in order: one template per ReplicatedJob
            shapes += [(_template_name([r.name]), 1, (r.name,), None, level_one) for r in rjobs]
        else:
            shapes.append((tj["name"][:MAX_NAME], 1, tuple(by_name), None, level_one))
    targeted: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"spec.scheduling.replicatedJobs[{index}]"
        entry = _dict(entry, where)
        targets = entry.get("targetReplicatedJobs") or []
        for target in targets:
            if target not in by_name:
                raise PlanError(f"{where}.targetReplicatedJobs: {target!r} is not a ReplicatedJob of the runtime")
            if target in targeted:
                raise PlanError(f"{where}: a ReplicatedJob must not be targeted by more than one replicatedJobs "
                                f"entry ({target!r})")
            targeted.add(target)
        if not targets:
            raise PlanError(f"{where}.targetReplicatedJobs must name at least one ReplicatedJob")
        own = {k: entry[k] for k in LEVEL_ONE_FIELDS if entry.get(k) is not None}
        if entry.get("job") is None:
            shapes.append((_template_name(list(targets)), 2, tuple(targets), None, own))
            continue
        if own or len(targets) != 1:
            raise PlanError(f"{where}.job needs exactly one targetReplicatedJobs name and no schedulingPolicy, "
                            f"schedulingConstraints or disruptionMode on the entry itself")
        job_fields = _dict(entry["job"], f"{where}.job")
        # Level 3 also carries resourceClaims: copied into each per-Job PodGroup and shared by its pods.
        fields = {k: job_fields[k] for k in (*LEVEL_ONE_FIELDS, "resourceClaims") if job_fields.get(k) is not None}
        for job_index in range(by_name[targets[0]].replicas):
            shapes.append((_template_name([targets[0], str(job_index)]), 3, (targets[0],), job_index, fields))
    if entries:
        missing = [r.name for r in rjobs if r.name not in targeted]
        if missing:
            raise PlanError(f"spec.scheduling.replicatedJobs: every ReplicatedJob must be targeted by exactly one "
                            f"entry; {missing} are not (add an entry with schedulingPolicy: {{basic: {{}}}})")
    if len(shapes) > MAX_TEMPLATES:
        raise PlanError(f"the Workload would have {len(shapes)} PodGroupTemplates; at most {MAX_TEMPLATES} are "
                        f"allowed")
    groups = []
    for template, level, members, job_index, fields in shapes:
        policy = _policy(fields, "spec.scheduling")
        pods = sum(by_name[m].pods_per_job if job_index is not None else by_name[m].pods for m in members)
        prefix = workload if level == 1 and len(members) == len(rjobs) else f"{workload}-{template}"
        name = _join(prefix, salted_hash(tj.get("uid", ""), incarnation, template, length=6))
        priority = next((by_name[m].priority_class_name for m in members if by_name[m].priority_class_name), None)
        _disruption_mode(fields.get("disruptionMode"))
        groups.append(GroupPlan(template, name, level, policy, pods if policy == "gang" else None, members,
                                job_index, pods, _topology_key(fields, "spec.scheduling"), fields, priority))
    return Plan(rjobs, workload, tuple(groups), sequenced)
