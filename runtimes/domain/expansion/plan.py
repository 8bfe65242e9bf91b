"""The expansion plan: a runtime + numNodes → pod sets per ReplicatedJob and the PodGroups over them.

Pod counts per ReplicatedJob and the scheduling levels of KEP-3015 `spec.scheduling` (L1 TrainJob, L2
ReplicatedJob groups, L3 one Job); see the package docstring for the decisions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from runtimes.domain.constants import MAX_NUM_NODES
from runtimes.domain.expansion import manifests
from runtimes.domain.expansion.model import (
    ANCESTOR_LABEL,
    API_VERSIONS,
    BASIC,
    COMPOSITE_POD_GROUP,
    GANG,
    MAX_TEMPLATES,
    MPI_LAUNCHER,
    MPI_NODE,
    POD_GROUP,
    TRAINER,
    V1ALPHA2,
    V1ALPHA3,
    V1BETA1,
    ExpansionError,
    PodGroupPlan,
    PodSet,
    ResourceClaim,
)
from runtimes.domain.expansion.naming import pod_group_name_for, template_name_for, workload_name_for
from trainer_portal.placement.quantities import QuantityError, format_quantity, parse_resource


@dataclass(frozen=True)
class Expansion:
    """Everything a TrainJob on a runtime turns into: pod sets, Workload name and PodGroups."""

    trainjob_name: str
    namespace: str
    trainjob_uid: str
    api_version: str
    workload_name: str | None
    pod_sets: tuple[PodSet, ...]
    pod_groups: tuple[PodGroupPlan, ...]
    composite: bool
    num_nodes: int = 1
    warnings: tuple[str, ...] = ()
    # PodGroupTemplate names in the order the Workload lists them.
    template_order: tuple[str, ...] = field(default=(), repr=False)

    @property
    def total_pods(self) -> int:
        """Return the number of pods of all ReplicatedJobs."""
        return sum(pod_set.count for pod_set in self.pod_sets)

    @property
    def leaf_groups(self) -> tuple[PodGroupPlan, ...]:
        """Return the PodGroups pods are bound to (CompositePodGroups excluded)."""
        return tuple(group for group in self.pod_groups if group.kind == POD_GROUP)

    def pod_set(self, replicated_job: str) -> PodSet:
        """Return the PodSet of `replicated_job`; raises KeyError when there is none."""
        for pod_set in self.pod_sets:
            if pod_set.replicated_job == replicated_job:
                return pod_set
        raise KeyError(replicated_job)

    def total_resources(self) -> dict[str, str]:
        """Return the summed requests of all pods as quantity strings, e.g. {"nvidia.com/gpu": "400"}."""
        totals: dict[str, Fraction] = {}
        for pod_set in self.pod_sets:
            for name, value in pod_set.resources_per_pod.items():
                totals[name] = totals.get(name, Fraction(0)) + parse_resource(name, value) * pod_set.count
        return {name: format_quantity(amount, resource=name) for name, amount in sorted(totals.items())}

    def pod_group_for(self, replicated_job: str, job_index: int) -> str | None:
        """Return the `spec.schedulingGroup.podGroupName` of a pod of `replicated_job` in Job `job_index`.

        Returns None when the ReplicatedJob is in no PodGroup (no `spec.scheduling`, or untargeted).
        """
        for group in self.leaf_groups:
            if replicated_job in group.replicated_jobs and group.job_index in (None, job_index):
                return group.name
        return None

    def pod_claims(self, replicated_job: str, job_index: int) -> list[dict]:
        """Return the claims a pod of `replicated_job` in Job `job_index` shares with its PodGroup, as
        `[{podGroup, name}]` (empty when its group has none). The pod uses the claim the PodGroup's
        `status.resourceClaimStatuses` names once it is allocated, so the preview names the PodGroup's claim."""
        for group in self.leaf_groups:
            if replicated_job in group.replicated_jobs and group.job_index in (None, job_index):
                return [{"podGroup": group.name, "name": claim.name} for claim in group.resource_claims]
        return []

    def workload_manifest(self) -> dict | None:
        """Return the scheduling Workload object, or None when the runtime has no `spec.scheduling`."""
        return manifests.workload_manifest(self)

    def podgroup_manifests(self) -> list[dict]:
        """Return the CompositePodGroup objects (parents first) followed by the PodGroup objects."""
        return manifests.podgroup_manifests(self)

    def to_dict(self) -> dict:
        """Return a JSON-serialisable summary (pod sets, groups, totals, warnings) for the API."""
        return {
            "trainjob": self.trainjob_name,
            "namespace": self.namespace,
            "apiVersion": self.api_version,
            "numNodes": self.num_nodes,
            "workloadName": self.workload_name,
            "composite": self.composite,
            "totalPods": self.total_pods,
            "totalResources": self.total_resources(),
            "podSets": [
                {
                    "replicatedJob": p.replicated_job,
                    "replicas": p.replicas,
                    "podsPerReplica": p.pods_per_replica,
                    "count": p.count,
                    "ancestor": p.ancestor,
                    "resourcesPerPod": dict(p.resources_per_pod),
                    "sharedClaims": [
                        claim for index in range(p.replicas) for claim in self.pod_claims(p.replicated_job, index)
                    ],
                }
                for p in self.pod_sets
            ],
            "podGroups": [
                {
                    "kind": g.kind,
                    "name": g.name,
                    "templateName": g.template_name,
                    "level": g.level,
                    "policy": g.policy,
                    "minCount": g.min_count,
                    "minGroupCount": g.min_group_count,
                    "topologyKey": g.topology_key,
                    "replicatedJobs": list(g.replicated_jobs),
                    "jobIndex": g.job_index,
                    "podCount": g.pod_count,
                    "disruptionMode": g.disruption_mode,
                    "parent": g.parent,
                    "resourceClaims": [claim.to_dict() for claim in g.resource_claims],
                }
                for g in self.pod_groups
            ],
            "warnings": list(self.warnings),
        }


# -- input helpers: malformed dicts become ExpansionError, never KeyError/TypeError ---------------------------------


def _mapping(value: object, path: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ExpansionError(path, f"must be an object, got {type(value).__name__}")
    return value


def _sequence(value: object, path: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise ExpansionError(path, f"must be a list, got {type(value).__name__}")
    return list(value)


def _integer(value: object, path: str, *, default: int, minimum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        else:
            raise ExpansionError(path, f"must be an integer, got {value!r}")
    if value < minimum:
        raise ExpansionError(path, f"must be >= {minimum}, got {value}")
    return value


def _string(value: object, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ExpansionError(path, f"must be a non-empty string, got {value!r}")
    return value


# -- pod sets --------------------------------------------------------------------------------------------------


@dataclass
class _RJob:
    name: str
    replicas: int
    parallelism: int
    ancestor: str | None
    container: dict
    container_path: str
    depends_on: tuple[str, ...]


def _main_container(pod_spec: dict, name: str, ancestor: str | None, path: str) -> tuple[dict, str]:
    containers = _sequence(pod_spec.get("containers"), f"{path}.containers")
    wanted = [MPI_NODE] if ancestor == TRAINER else [ancestor or "", name, MPI_NODE]
    for index, container in enumerate(containers):
        container = _mapping(container, f"{path}.containers[{index}]")
        if container.get("name") in wanted:
            return container, f"{path}.containers[{index}]"
    if containers:
        return _mapping(containers[0], f"{path}.containers[0]"), f"{path}.containers[0]"
    return {}, f"{path}.containers"


def _container_requests(container: dict, path: str) -> dict[str, str]:
    resources = _mapping(container.get("resources"), f"{path}.resources")
    # Kubernetes defaults a missing request to its limit, so limits are the base and requests win.
    merged = dict(_mapping(resources.get("limits"), f"{path}.resources.limits"))
    merged.update(_mapping(resources.get("requests"), f"{path}.resources.requests"))
    return _checked_resources(merged, f"{path}.resources")


def _checked_resources(resources: Mapping, path: str) -> dict[str, str]:
    checked = {}
    for name, value in resources.items():
        if not isinstance(name, str) or not name:
            raise ExpansionError(path, f"resource names must be non-empty strings, got {name!r}")
        try:
            parse_resource(name, value, field=f"{path}.{name}")
        except QuantityError as error:
            raise ExpansionError(error.field, error.message) from None
        checked[name] = value.strip() if isinstance(value, str) else format_quantity(Fraction(value))
    return checked


@dataclass(frozen=True)
class _PerNode:
    """The TrainJob's `resourcesPerNode` as ResourceRequirements: limits and requests, quantities as strings."""

    limits: dict[str, str]
    requests: dict[str, str]


def _resources_per_node(resources: dict | None) -> _PerNode | None:
    """Return resourcesPerNode as limits + requests. The ResourceRequirements form (`requests`/`limits`) is read as
    written; the preview's flat `{name: quantity}` form is both requests and limits (what the portal submits)."""
    if resources is None:
        return None
    resources = _mapping(resources, "trainer.resourcesPerNode")
    if resources and set(resources) <= {"requests", "limits", "claims"}:
        return _PerNode(
            _checked_resources(_mapping(resources.get("limits"), "trainer.resourcesPerNode.limits"),
                               "trainer.resourcesPerNode.limits"),
            _checked_resources(_mapping(resources.get("requests"), "trainer.resourcesPerNode.requests"),
                               "trainer.resourcesPerNode.requests"))
    flat = _checked_resources(resources, "trainer.resourcesPerNode")
    return _PerNode(dict(flat), dict(flat))


def _merged_requests(container: dict, path: str, per_node: _PerNode) -> dict[str, str]:
    """Return the effective requests of `container` after upstream's MergeResourceRequirements (#3602).

    Strategic merge of ResourceRequirements: limits merge per resource name, requests merge per resource name
    (resourcesPerNode wins, the container's other resources are kept); then, as Kubernetes defaults a missing
    request to its limit, the merged limits are the base and the merged requests win.
    """
    resources = _mapping(container.get("resources"), f"{path}.resources")
    limits = _checked_resources(_mapping(resources.get("limits"), f"{path}.resources.limits"),
                                f"{path}.resources.limits")
    requests = _checked_resources(_mapping(resources.get("requests"), f"{path}.resources.requests"),
                                  f"{path}.resources.requests")
    return {**limits, **per_node.limits, **requests, **per_node.requests}


def _read_rjobs(spec: dict) -> list[_RJob]:
    template = _mapping(spec.get("template"), "spec.template")
    jobset_spec = _mapping(template.get("spec"), "spec.template.spec")
    items = _sequence(jobset_spec.get("replicatedJobs"), "spec.template.spec.replicatedJobs")
    if not items:
        raise ExpansionError("spec.template.spec.replicatedJobs", "the runtime has no replicatedJobs; add at least one")
    rjobs: list[_RJob] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        path = f"spec.template.spec.replicatedJobs[{index}]"
        item = _mapping(item, path)
        name = _string(item.get("name"), f"{path}.name")
        if name in seen:
            raise ExpansionError(f"{path}.name", f"ReplicatedJob {name!r} is defined twice; names must be unique")
        seen.add(name)
        replicas = _integer(item.get("replicas"), f"{path}.replicas", default=1, minimum=0)
        job_template = _mapping(item.get("template"), f"{path}.template")
        labels = _mapping(_mapping(job_template.get("metadata"), f"{path}.template.metadata").get("labels"),
                          f"{path}.template.metadata.labels")
        ancestor = labels.get(ANCESTOR_LABEL)
        ancestor = ancestor if isinstance(ancestor, str) and ancestor else None
        job_spec = _mapping(job_template.get("spec"), f"{path}.template.spec")
        parallelism = _integer(job_spec.get("parallelism"), f"{path}.template.spec.parallelism", default=1, minimum=0)
        pod_path = f"{path}.template.spec.template.spec"
        pod_spec = _mapping(_mapping(job_spec.get("template"), f"{path}.template.spec.template").get("spec"), pod_path)
        container, container_path = _main_container(pod_spec, name, ancestor, pod_path)
        depends = []
        for dep_index, dep in enumerate(_sequence(item.get("dependsOn"), f"{path}.dependsOn")):
            dep = _mapping(dep, f"{path}.dependsOn[{dep_index}]")
            depends.append(_string(dep.get("name"), f"{path}.dependsOn[{dep_index}].name"))
        rjobs.append(_RJob(name, replicas, parallelism, ancestor, container, container_path, tuple(depends)))
    return rjobs


def _pod_sets(spec: dict, rjobs: list[_RJob], num_nodes: int, per_node: _PerNode | None,
              warnings: list[str]) -> tuple[PodSet, ...]:
    ml_policy = _mapping(spec.get("mlPolicy"), "spec.mlPolicy")
    mpi = ml_policy.get("mpi")
    is_mpi = mpi is not None
    launcher_as_node = bool(_mapping(mpi, "spec.mlPolicy.mpi").get("runLauncherAsNode", False)) if is_mpi else False
    has_trainer = any(rjob.ancestor == TRAINER for rjob in rjobs)
    if not has_trainer and not is_mpi and any(rjob.name == MPI_NODE for rjob in rjobs):
        warnings.append(f"no ReplicatedJob carries the label {ANCESTOR_LABEL}=trainer; numNodes is applied to "
                        f"ReplicatedJob 'node'")
    pod_sets = []
    for rjob in rjobs:
        is_trainer = rjob.ancestor == TRAINER or (not has_trainer and not is_mpi and rjob.name == MPI_NODE)
        if is_mpi and rjob.name == MPI_LAUNCHER:
            count = 1
        elif is_mpi and rjob.name == MPI_NODE:
            count = max(num_nodes - 1, 1) if launcher_as_node else num_nodes
        elif is_trainer:
            count = num_nodes
        else:
            count = rjob.parallelism
        resources = _container_requests(rjob.container, rjob.container_path)
        # Upstream (trainingruntime.go) merges resourcesPerNode into the container named `node` of the trainer
        # ancestor (with an mlPolicy) and, with runLauncherAsNode, of ReplicatedJob `node`.
        takes_per_node = (is_trainer and spec.get("mlPolicy") is not None) or (launcher_as_node
                                                                               and rjob.name == MPI_NODE)
        if per_node is not None and takes_per_node:
            if rjob.container.get("name") == MPI_NODE:
                resources = _merged_requests(rjob.container, rjob.container_path, per_node)
            else:
                warnings.append(f"ReplicatedJob {rjob.name!r} has no container named 'node'; the controller applies "
                                f"resourcesPerNode only to that container, so it is ignored here")
        pod_sets.append(PodSet(rjob.name, rjob.replicas, count, rjob.ancestor, resources, rjob.depends_on))
    return tuple(pod_sets)


# -- scheduling levels -------------------------------------------------------------------------------------------


@dataclass
class _GroupSpec:
    policy: str
    topology_key: str | None
    disruption_mode: str | None
    explicit: bool  # any of the fields was set
    resource_claims: tuple[ResourceClaim, ...] = ()


def _resource_claims(owner: dict, path: str, *, allowed: bool) -> tuple[ResourceClaim, ...]:
    claims = _sequence(owner.get("resourceClaims"), f"{path}.resourceClaims")
    if claims and not allowed:
        raise ExpansionError(f"{path}.resourceClaims", "resourceClaims belong under job (level 3) in Trainer v2.4; "
                                                       "move them to spec.scheduling.replicatedJobs[].job")
    result = []
    for index, raw in enumerate(claims):
        item = f"{path}.resourceClaims[{index}]"
        raw = _mapping(raw, item)
        name = _string(raw.get("name"), f"{item}.name")
        sources = [key for key in ("resourceClaimName", "resourceClaimTemplateName") if raw.get(key)]
        if len(sources) != 1:
            raise ExpansionError(item, "set exactly one of resourceClaimName or resourceClaimTemplateName")
        source = _string(raw[sources[0]], f"{item}.{sources[0]}")
        if sources[0] == "resourceClaimName":
            result.append(ResourceClaim(name, resource_claim_name=source))
        else:
            result.append(ResourceClaim(name, resource_claim_template_name=source))
    return tuple(result)


def _group_spec(owner: dict, path: str, *, composite_level: bool = False, claims: bool = False) -> _GroupSpec:
    explicit = any(owner.get(key) is not None for key in ("schedulingPolicy", "schedulingConstraints",
                                                           "disruptionMode"))
    policy_spec = _mapping(owner.get("schedulingPolicy"), f"{path}.schedulingPolicy")
    kinds = [kind for kind in (GANG, BASIC) if policy_spec.get(kind) is not None]
    unknown = sorted(set(policy_spec) - {GANG, BASIC})
    if unknown:
        raise ExpansionError(f"{path}.schedulingPolicy",
                             f"unknown policy {unknown[0]!r}; use gang: {{}} or basic: {{}}")
    if len(kinds) > 1:
        raise ExpansionError(f"{path}.schedulingPolicy", "set exactly one of gang or basic")
    policy = kinds[0] if kinds else GANG
    if policy == GANG:
        gang = _mapping(policy_spec.get(GANG), f"{path}.schedulingPolicy.gang")
        for forbidden in ("minCount", "minGroupCount"):
            if gang.get(forbidden) is not None:
                raise ExpansionError(f"{path}.schedulingPolicy.gang.{forbidden}",
                                     f"{forbidden} is computed by the TrainJob controller; remove it")
    constraints = _mapping(owner.get("schedulingConstraints"), f"{path}.schedulingConstraints")
    topology = _sequence(constraints.get("topology"), f"{path}.schedulingConstraints.topology")
    if len(topology) > 1:
        raise ExpansionError(f"{path}.schedulingConstraints.topology", "at most one topology constraint is allowed")
    key = None
    if topology:
        entry = _mapping(topology[0], f"{path}.schedulingConstraints.topology[0]")
        key = _string(entry.get("key"), f"{path}.schedulingConstraints.topology[0].key")
    return _GroupSpec(policy, key, _disruption_mode(owner.get("disruptionMode"), f"{path}.disruptionMode"), explicit,
                      _resource_claims(owner, path, allowed=claims))


def _disruption_mode(value: object, path: str) -> str | None:
    if value is None:
        return None
    if value in ("Pod", "single"):
        return "single"
    if value in ("PodGroup", "all"):
        return "all"
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("single", "all"):
        return next(iter(value))
    raise ExpansionError(path, f"use {{single: {{}}}} or {{all: {{}}}} (1.36: 'Pod' or 'PodGroup'), got {value!r}")


@dataclass
class _Entry:
    targets: tuple[str, ...]
    group: _GroupSpec
    job: _GroupSpec | None
    path: str


def _entries(scheduling: dict, pod_sets: tuple[PodSet, ...], composite: bool) -> list[_Entry]:
    names = {pod_set.replicated_job for pod_set in pod_sets}
    entries = []
    targeted: dict[str, str] = {}
    for index, raw in enumerate(_sequence(scheduling.get("replicatedJobs"), "spec.scheduling.replicatedJobs")):
        path = f"spec.scheduling.replicatedJobs[{index}]"
        raw = _mapping(raw, path)
        targets = _sequence(raw.get("targetReplicatedJobs"), f"{path}.targetReplicatedJobs")
        if not targets:
            raise ExpansionError(f"{path}.targetReplicatedJobs", "name at least one ReplicatedJob")
        for t_index, target in enumerate(targets):
            target_path = f"{path}.targetReplicatedJobs[{t_index}]"
            target = _string(target, target_path)
            if target not in names:
                raise ExpansionError(target_path, f"ReplicatedJob {target!r} is not in the template; "
                                                  f"choose one of {sorted(names)}")
            if target in targeted:
                raise ExpansionError(target_path, f"ReplicatedJob {target!r} is already targeted by "
                                                  f"{targeted[target]}; target each ReplicatedJob once")
            targeted[target] = path
        group = _group_spec(raw, path)
        job = None
        if raw.get("job") is not None:
            job = _group_spec(_mapping(raw.get("job"), f"{path}.job"), f"{path}.job", claims=True)
            if not composite and group.explicit:
                raise ExpansionError(f"{path}.job", "job (level 3) excludes the entry's own schedulingPolicy/"
                                                    "schedulingConstraints/disruptionMode unless composite "
                                                    "PodGroups are enabled")
            if not composite and len(targets) != 1:
                raise ExpansionError(f"{path}.targetReplicatedJobs", "job (level 3) requires exactly one "
                                                                     "targeted ReplicatedJob")
        entries.append(_Entry(tuple(targets), group, job, path))
    return entries


class _Builder:
    """Accumulates PodGroupPlans in template order, naming them."""

    def __init__(self, namespace: str, trainjob: str, workload: str, pod_sets: tuple[PodSet, ...]) -> None:
        self.namespace = namespace
        self.trainjob = trainjob
        self.workload = workload
        self.counts = {pod_set.replicated_job: pod_set for pod_set in pod_sets}
        self.groups: list[PodGroupPlan] = []
        self.templates: list[str] = []

    def add(self, *, template: str, level: int, spec: _GroupSpec, rjobs: tuple[str, ...], job_index: int | None,
            parent: str | None, kind: str = POD_GROUP, children: int = 0, pods: int | None = None) -> PodGroupPlan:
        if template in self.templates:
            raise ExpansionError("spec.scheduling", f"two PodGroupTemplates would both be named {template!r}")
        if pods is None:
            if job_index is None:
                pods = sum(self.counts[name].count for name in rjobs)
            else:
                pods = sum(self.counts[name].pods_per_replica for name in rjobs)
        name = pod_group_name_for(self.namespace, self.workload, template, level_one=level == 1)
        gang = spec.policy == GANG
        plan = PodGroupPlan(
            template_name=template,
            name=name,
            level=level,
            policy=spec.policy,
            min_count=pods if gang and kind == POD_GROUP else None,
            topology_key=spec.topology_key,
            replicated_jobs=rjobs,
            job_index=job_index,
            pod_count=pods,
            disruption_mode=spec.disruption_mode,
            parent=parent,
            kind=kind,
            min_group_count=children if gang and kind == COMPOSITE_POD_GROUP else None,
            resource_claims=spec.resource_claims if kind == POD_GROUP else (),
        )
        self.groups.append(plan)
        self.templates.append(template)
        return plan


def _flat_groups(builder: _Builder, scheduling: dict, entries: list[_Entry], pod_sets: tuple[PodSet, ...],
                 sequenced: bool, warnings: list[str]) -> None:
    level_one = _group_spec(scheduling, "spec.scheduling")
    if entries and level_one.explicit:
        raise ExpansionError("spec.scheduling", "level-1 fields (schedulingPolicy, schedulingConstraints, "
                                                "disruptionMode) and replicatedJobs are mutually exclusive unless "
                                                "composite PodGroups are enabled")
    all_rjobs = tuple(pod_set.replicated_job for pod_set in pod_sets)
    if not entries:
        if sequenced:
            warnings.append("sequenced startup (dependsOn / InOrder) makes a TrainJob-wide gang impossible; the "
                            "controller falls back to one PodGroup per ReplicatedJob")
            for rjob in all_rjobs:
                builder.add(template=template_name_for([rjob]), level=2, spec=level_one, rjobs=(rjob,),
                            job_index=None, parent=None)
        else:
            builder.add(template=builder.trainjob, level=1, spec=level_one, rjobs=all_rjobs, job_index=None,
                        parent=None)
        return
    for entry in entries:
        if entry.job is None:
            builder.add(template=template_name_for(entry.targets), level=2, spec=entry.group, rjobs=entry.targets,
                        job_index=None, parent=None)
            continue
        _job_groups(builder, entry, parent=None)


def _job_groups(builder: _Builder, entry: _Entry, parent: str | None) -> int:
    added = 0
    for rjob in entry.targets:
        for index in range(builder.counts[rjob].replicas):
            builder.add(template=template_name_for([rjob, str(index)]), level=3, spec=entry.job, rjobs=(rjob,),
                        job_index=index, parent=parent)
            added += 1
    return added


def _composite_groups(builder: _Builder, scheduling: dict, entries: list[_Entry],
                      pod_sets: tuple[PodSet, ...]) -> None:
    if not entries:
        raise ExpansionError("spec.scheduling.replicatedJobs", "composite PodGroups need at least one "
                                                               "replicatedJobs entry to group under the TrainJob")
    root_spec = _group_spec(scheduling, "spec.scheduling")
    targeted = tuple(name for entry in entries for name in entry.targets)
    root = builder.add(template=builder.trainjob, level=1, spec=root_spec, rjobs=targeted, job_index=None,
                       parent=None, kind=COMPOSITE_POD_GROUP, children=len(entries))
    for entry in entries:
        template = template_name_for(entry.targets)
        if entry.job is None:
            builder.add(template=template, level=2, spec=entry.group, rjobs=entry.targets, job_index=None,
                        parent=root.name)
            continue
        jobs = sum(builder.counts[rjob].replicas for rjob in entry.targets)
        child = builder.add(template=template, level=2, spec=entry.group, rjobs=entry.targets, job_index=None,
                            parent=root.name, kind=COMPOSITE_POD_GROUP, children=jobs)
        _job_groups(builder, entry, parent=child.name)


def _normalise_api_version(api_version: str, composite: bool) -> str:
    version = api_version if "/" in api_version else f"scheduling.k8s.io/{api_version}"
    if version not in API_VERSIONS:
        raise ExpansionError("apiVersion", f"unsupported API version {api_version!r}; use one of {list(API_VERSIONS)}")
    if composite:
        if version == V1ALPHA2:
            raise ExpansionError("apiVersion", "CompositePodGroup does not exist in scheduling.k8s.io/v1alpha2 "
                                               "(Kubernetes 1.36); use v1alpha3 (1.37)")
        return V1ALPHA3
    return version


def expand(runtime: dict, *, trainjob_name: str, namespace: str = "default", trainjob_uid: str = "",
           num_nodes: int | None = None, resources_per_node: dict | None = None,
           api_version: str = V1BETA1, composite: bool = False) -> Expansion:
    """Return what a TrainJob named `trainjob_name` on `runtime` turns into.

    `runtime` is a (Cluster)TrainingRuntime object (or its bare `spec`). `num_nodes` and `resources_per_node`
    are the TrainJob's `spec.trainer` overrides. Raises ExpansionError (with `.path`) for any runtime or input
    that cannot be expanded: no replicatedJobs, numNodes < 1, malformed quantities, invalid `spec.scheduling`.
    """
    if not isinstance(runtime, dict):
        raise ExpansionError("", f"the runtime must be an object, got {type(runtime).__name__}")
    _string(trainjob_name, "metadata.name")
    _string(namespace, "metadata.namespace")
    if not isinstance(trainjob_uid, str):
        raise ExpansionError("metadata.uid", "must be a string")
    if "spec" in runtime:
        spec = _mapping(runtime.get("spec"), "spec")
    elif "template" in runtime or "mlPolicy" in runtime:
        spec = runtime
    else:
        raise ExpansionError("spec", "the runtime has no spec; expected spec.template.spec.replicatedJobs")
    version = _normalise_api_version(api_version if isinstance(api_version, str) else "", composite)
    ml_policy = _mapping(spec.get("mlPolicy"), "spec.mlPolicy")
    default_nodes = _integer(ml_policy.get("numNodes"), "spec.mlPolicy.numNodes", default=1, minimum=1)
    nodes = _integer(num_nodes, "trainer.numNodes", default=default_nodes, minimum=1)
    if nodes > MAX_NUM_NODES:
        raise ExpansionError("trainer.numNodes", f"must be <= {MAX_NUM_NODES:,}, got {nodes:,}")
    warnings: list[str] = []
    rjobs = _read_rjobs(spec)
    pod_sets = _pod_sets(spec, rjobs, nodes, _resources_per_node(resources_per_node), warnings)

    if spec.get("scheduling") is None:
        return Expansion(trainjob_name, namespace, trainjob_uid, version, None, pod_sets, (), False, nodes,
                         tuple(warnings))
    scheduling = _mapping(spec.get("scheduling"), "spec.scheduling")
    if spec.get("podGroupPolicy") is not None:
        raise ExpansionError("spec.podGroupPolicy", "scheduling and podGroupPolicy are mutually exclusive; "
                                                    "remove podGroupPolicy")
    entries = _entries(scheduling, pod_sets, composite)
    workload = workload_name_for(namespace, trainjob_name)
    builder = _Builder(namespace, trainjob_name, workload, pod_sets)
    if composite:
        _composite_groups(builder, scheduling, entries, pod_sets)
    else:
        template_spec = _mapping(_mapping(spec.get("template"), "spec.template").get("spec"), "spec.template.spec")
        startup = _mapping(template_spec.get("startupPolicy"), "spec.template.spec.startupPolicy")
        sequenced = startup.get("startupPolicyOrder") == "InOrder" or any(p.depends_on for p in pod_sets)
        _flat_groups(builder, scheduling, entries, pod_sets, sequenced, warnings)
    leaves = [group for group in builder.groups if group.kind == POD_GROUP]
    if len(builder.templates) > MAX_TEMPLATES:
        raise ExpansionError("spec.scheduling", f"{len(builder.templates)} PodGroupTemplates would be created; "
                                                f"the Workload allows at most {MAX_TEMPLATES} (level 3 creates one "
                                                f"per Job replica)")
    _warn(builder.groups, leaves, pod_sets, entries, warnings)
    return Expansion(trainjob_name, namespace, trainjob_uid, version, workload, pod_sets, tuple(builder.groups),
                     composite, nodes, tuple(warnings), tuple(builder.templates))


def _warn(groups: list[PodGroupPlan], leaves: list[PodGroupPlan], pod_sets: tuple[PodSet, ...],
          entries: list[_Entry], warnings: list[str]) -> None:
    covered = {name for group in leaves for name in group.replicated_jobs}
    untargeted = [p.replicated_job for p in pod_sets if p.replicated_job not in covered]
    if untargeted:
        warnings.append(f"ReplicatedJobs {untargeted} are in no PodGroup; their pods are scheduled one by one")
    by_name = {p.replicated_job: p for p in pod_sets}
    for group in leaves:
        if group.policy != GANG:
            continue
        for rjob in group.replicated_jobs:
            waits = [dep for dep in by_name[rjob].depends_on if dep in group.replicated_jobs]
            if waits:
                warnings.append(f"PodGroup template {group.template_name!r} gangs {rjob!r} with {waits} it depends "
                                f"on; the gang can never be complete while {rjob!r} waits for them")
    for entry in entries:
        if entry.job is not None and any(by_name[t].replicas > 1 for t in entry.targets):
            warnings.append(f"{entry.path}: level 3 with replicas > 1 needs per-replica pod templates, which the "
                            f"TrainJob → JobSet path cannot stamp in Trainer v2.4")
