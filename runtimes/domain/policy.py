"""Validation of ClusterTrainingRuntime manifests and one-line scheduling summaries.

`validate_runtime` is the one implementation the form, the REST API and import share. It never raises: every
access is type-checked, and a malformed part yields a Problem instead. Each Problem names the field path
(e.g. `spec.template.spec.replicatedJobs[1].dependsOn[0].name`) and says what is wrong and how to fix it.

Rules come from kubernetes-apis.md: §1.2–1.4 (CRD schema, CEL, webhook), §2.3–2.4 (v2.4 `spec.scheduling`) and the
decisions on its §6 open questions recorded in docs/decisions.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal

from . import constants as c
from .labels import dns1123_label_problems, dns1123_subdomain_problems, label_key_problems, label_value_problems
from .manifest import kind_of

Severity = Literal["error", "warning"]

MAX_ANNOTATIONS_BYTES = 256 * 1024
LEVEL1_FIELDS = ("schedulingPolicy", "schedulingConstraints", "disruptionMode", "resourceClaims")
GROUP_FIELDS = LEVEL1_FIELDS
LEGACY_DISRUPTION_MODES = {"Pod": "single", "PodGroup": "all"}
# Field names people reach for from older KEP drafts or other APIs, and the field they mean.
SCHEDULING_TYPOS = {
    "level": "schedulingConstraints.topology[].key (the KEP-5732 draft called it 'level')",
    "topologyRequest": "schedulingConstraints.topology[].key",
    "topologyConstraint": "schedulingConstraints.topology[].key",
    "topology": "schedulingConstraints.topology",
    "minMember": "nothing: the gang size (minCount) is computed from numNodes by the TrainJob controller",
    "minCount": "nothing: minCount is computed from numNodes by the TrainJob controller",
    "policy": "schedulingPolicy",
    "podGroupTemplates": "replicatedJobs",
    "targetJobs": "targetReplicatedJobs",
    "targets": "targetReplicatedJobs",
    "groupBy": "job (a per-Job group under a replicatedJobs entry)",
    "gang": "schedulingPolicy.gang",
    "basic": "schedulingPolicy.basic",
}
TOPOLOGY_TYPOS = {"level": "key", "topologyKey": "key", "name": "key"}

# Every problem code validate_runtime can emit, with the rule it enforces (docs, API clients, tests).
RULES: dict[str, str] = {
    "manifest.type": "the manifest is a mapping",
    "manifest.too_deep": "the manifest is not nested beyond the recursion limit",
    "field.required": "required fields (metadata, spec, spec.template, template.spec, rJob template, targets) exist",
    "field.null": "optional fields are absent rather than null",
    "field.type": "every field has the type the CRD declares (mapping / list)",
    "apiVersion.invalid": "apiVersion is trainer.kubeflow.org/v1alpha1",
    "kind.invalid": "kind is ClusterTrainingRuntime",
    "metadata.name.required": "metadata.name is set",
    "metadata.name.invalid": "metadata.name is a DNS-1123 subdomain (≤ 253)",
    "metadata.name.too_long_for_label": "metadata.name is ≤ 63 characters (used as a label value) — decision D2",
    "metadata.namespace.ignored": "(warning) a cluster-scoped runtime has no namespace",
    "metadata.labels.key_invalid": "label keys are [prefix/]name (prefix DNS subdomain ≤ 253, name ≤ 63)",
    "metadata.labels.value_invalid": "label values are ≤ 63 chars of [-_.A-Za-z0-9], alphanumeric at both ends",
    "metadata.labels.value_type": "label values are strings",
    "metadata.labels.framework_missing": "(warning) trainer.kubeflow.org/framework is set",
    "metadata.annotations.key_invalid": "annotation keys follow label-key syntax",
    "metadata.annotations.value_type": "annotation values are strings",
    "metadata.annotations.too_large": "annotations total ≤ 256 KiB",
    "spec.empty": "spec is not empty (minProperties 1)",
    "ml_policy.multiple": "at most one of torch/mpi/jax/xgboost/flux (CEL)",
    "ml_policy.num_nodes.invalid": "mlPolicy.numNodes is an integer ≥ 1",
    "ml_policy.torch.removed_field": "torch.numProcPerNode / torch.elasticPolicy (removed in v2.3) are absent",
    "ml_policy.torch.env_injection.too_many": "envInjection.targets has ≤ 16 items",
    "ml_policy.torch.env_injection.job_name": "envInjection.targets[].jobName is 1..253 chars",
    "ml_policy.torch.env_injection.duplicate": "envInjection.targets[].jobName is unique (list-map key)",
    "ml_policy.torch.env_injection.unknown_job": "(warning) envInjection jobName names a ReplicatedJob",
    "ml_policy.torch.env_injection.container_names": "containerNames has 1..8 items",
    "ml_policy.torch.env_injection.container_name": "each containerName is 1..63 chars",
    "ml_policy.torch.env_injection.node_container": "containerNames does not contain 'node' (CEL)",
    "ml_policy.torch.env_injection.container_names_duplicate": "containerNames is a set",
    "ml_policy.mpi.num_proc": "mpi.numProcPerNode ≥ 1 (CEL)",
    "ml_policy.mpi.implementation": "mpi.mpiImplementation ∈ {OpenMPI, ''}",
    "ml_policy.mpi.ssh_auth_mount_path": "mpi.sshAuthMountPath ≤ 4096 chars",
    "ml_policy.mpi.run_launcher_as_node": "mpi.runLauncherAsNode is a boolean",
    "ml_policy.mpi.launcher_as_node_jobs": "runLauncherAsNode with numNodes ≥ 2 needs 'launcher' and 'node' rJobs",
    "ml_policy.flux.num_proc": "flux.numProcPerNode ≥ 1 (CEL)",
    "pod_group_policy.multiple": "podGroupPolicy sets only one of coscheduling / volcano",
    "pod_group_policy.workload_rejected": "(warning) podGroupPolicy.workload (rejected KEP draft) is not used",
    "pod_group_policy.schedule_timeout": "coscheduling.scheduleTimeoutSeconds is an integer ≥ 1",
    "pod_group_policy.volcano_mode": "volcano networkTopology.mode ∈ {hard, soft}",
    "pod_group_policy.volcano_tier": "volcano networkTopology.highestTierAllowed ≥ 1",
    "template.replicated_jobs.required": "template.spec.replicatedJobs is a non-empty list",
    "template.startup_policy.order": "startupPolicyOrder ∈ {AnyOrder, InOrder}",
    "template.startup_policy.depends_on_exclusive": "startupPolicy InOrder and dependsOn are mutually exclusive (CEL)",
    "template.success_policy.operator": "successPolicy.operator ∈ {All, Any}",
    "template.success_policy.unknown_target": "successPolicy.targetReplicatedJobs name existing rJobs",
    "template.ttl.invalid": "ttlSecondsAfterFinished ≥ 0",
    "template.volume_claim_policies.too_many": "volumeClaimPolicies ≤ 50",
    "template.volume_claim_policies.namespace": "volume claim templates set no namespace",
    "replicated_job.name.required": "each rJob has a name",
    "replicated_job.name.invalid": "rJob names are DNS-1123 labels (≤ 63) — decision D4",
    "replicated_job.name.duplicate": "rJob names are unique (list-map key)",
    "replicated_job.replicas.invalid": "replicas is an integer ≥ 0",
    "replicated_job.replicas.zero": "(warning) replicas 0 creates no Jobs — decision D5",
    "replicated_job.depends_on.too_many": "dependsOn ≤ 5 items",
    "replicated_job.depends_on.name_required": "dependsOn[].name is set",
    "replicated_job.depends_on.self": "an rJob does not depend on itself",
    "replicated_job.depends_on.unknown": "dependsOn[].name names an rJob of the runtime",
    "replicated_job.depends_on.duplicate": "dependsOn names are unique (list-map key)",
    "replicated_job.depends_on.status": "dependsOn[].status ∈ {Ready, Complete}",
    "replicated_job.depends_on.order": "(warning) dependencies are listed before their dependents",
    "replicated_job.depends_on.cycle": "dependsOn has no cycles",
    "ancestor.invalid_step": "the ancestor-step label ∈ {trainer, dataset-initializer, model-initializer}",
    "ancestor.duplicate": "at most one rJob per ancestor step",
    "ancestor.replicas": "an ancestor-labelled rJob has replicas 1 (webhook)",
    "ancestor.container_missing": "an ancestor-labelled rJob has its container (node / dataset-initializer / …)",
    "ancestor.no_trainer": "(warning) some rJob is labelled trainer, or numNodes does not apply",
    "scheduling.pod_group_policy_exclusive": "spec.scheduling and spec.podGroupPolicy are mutually exclusive",
    "scheduling.levels_exclusive": "level 1 fields and replicatedJobs exclusive without composite — decision D6",
    "scheduling.replicated_jobs.empty": "(warning) scheduling.replicatedJobs is not an empty list",
    "scheduling.replicated_jobs.too_many": "scheduling.replicatedJobs ≤ 8 entries",
    "scheduling.targets.count": "targetReplicatedJobs has 1..8 names",
    "scheduling.targets.invalid": "each target is a name of 1..253 chars",
    "scheduling.targets.duplicate": "targets within an entry are unique (set)",
    "scheduling.targets.unknown": "every target exists in the template",
    "scheduling.targets.targeted_twice": "no rJob is targeted by two entries",
    "scheduling.untargeted_replicated_job": "(warning) untargeted rJobs fall back to basic — decision D3",
    "scheduling.job.single_target": "an entry with job targets exactly one rJob",
    "scheduling.job.excludes_entry_fields": "an entry with job sets no level-2 fields without composite",
    "scheduling.job.replicas": "a level-3 target has replicas ≤ max_level3_replicas (v2.4: 1) — decision D7",
    "scheduling.too_many_pod_groups": "resolved PodGroupTemplates ≤ 8 — decision D3",
    "scheduling.policy.one_of": "schedulingPolicy sets exactly one of basic / gang",
    "scheduling.policy.unknown": "schedulingPolicy has no other members",
    "scheduling.policy.min_count": "gang.minCount / minGroupCount are never user-set",
    "scheduling.topology.too_many": "schedulingConstraints.topology ≤ 1 item",
    "scheduling.topology.key_required": "topology[].key is set",
    "scheduling.topology.key_invalid": "topology[].key has label-key syntax",
    "scheduling.topology.key_unknown": "(warning) topology key is a node label known to the cluster",
    "scheduling.disruption_mode.one_of": "disruptionMode sets exactly one of single / all",
    "scheduling.disruption_mode.legacy_string": "(warning) disruptionMode uses the union form, not Pod/PodGroup",
    "scheduling.resource_claims.too_many": "resourceClaims ≤ 4 per group",
    "scheduling.resource_claims.name_required": "each resource claim has a name",
    "scheduling.resource_claims.duplicate": "resource claim names are unique",
    "scheduling.resource_claims.source": "each claim sets exactly one of resourceClaimName / resourceClaimTemplateName",
    "scheduling.jobset_owned": "template.spec.scheduling is not set when spec.scheduling is",
    "scheduling.job_owned": "rJob template.spec.scheduling is not set when spec.scheduling is",
    "scheduling.pod_scheduling_group_owned": "pod schedulingGroup is not set when spec.scheduling is",
    "scheduling.typo": "common misspellings (level, topologyRequest, minMember, …) name the right field",
    "deadlock.gang_waits_for_ready": "(warning) a gang does not contain an rJob and its dependsOn-Ready target",
    "deadlock.gang_waits_for_complete": "(warning) a gang does not contain an rJob and its dependsOn-Complete target",
    "deadlock.level1_gang_sequenced": "(warning) no level-1 gang on a runtime with dependsOn / InOrder",
    "capacity.level3_gang_large": "(warning) a large level-3 gang must fit one topology domain",
}


@dataclass(frozen=True)
class Problem:
    """One finding: `path` of the field, `message` (what is wrong and how to fix it), `severity`, stable `code`."""

    path: str
    message: str
    severity: Severity
    code: str

    def as_dict(self) -> dict[str, str]:
        """Return the problem as a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class ValidationReport:
    """All problems found in one manifest; errors block saving, warnings are shown and saved."""

    problems: tuple[Problem, ...] = ()

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "warning")

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return not self.errors

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(p.code for p in self.problems)

    def as_dicts(self) -> list[dict[str, str]]:
        """Return the problems as JSON-ready dicts (errors first, then warnings, each in path order found)."""
        ordered = sorted(self.problems, key=lambda p: p.severity != "error")
        return [p.as_dict() for p in ordered]


@dataclass(frozen=True)
class ValidationOptions:
    """Cluster facts validation depends on.

    composite_enabled: the `TrainJobCompositePodGroup` gate is on (levels may be combined).
    max_level3_replicas: most replicas a level-3 target may have (1 in Trainer v2.4).
    known_topology_keys: node label keys present in the cluster; when non-empty, other keys get a warning.
    """

    composite_enabled: bool = False
    max_level3_replicas: int = c.V24_MAX_LEVEL3_REPLICAS
    known_topology_keys: tuple[str, ...] = ()


# ------------------------------------------------------------------------------------------------ helpers


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: Any) -> str:
    """Return :func:`kind_of` ``value``, except that integers are named by their type ("a int"), as validation
    messages always have."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"a {type(value).__name__}"
    return kind_of(value)


def _key(path: str, key: Any) -> str:
    key = str(key)
    simple = key.replace("-", "").replace("_", "").isalnum()
    return f"{path}.{key}" if simple else f'{path}["{key}"]'


@dataclass
class _RJob:
    """What the rules need to know about one ReplicatedJob, extracted with type checks."""

    index: int
    name: str | None
    path: str
    raw: dict
    replicas: int | None
    ancestor: str | None
    depends_on: list[tuple[str, str]]
    pod_spec: dict | None


class _Checker:
    def __init__(self, manifest: Any, options: ValidationOptions) -> None:
        self.manifest = manifest
        self.options = options
        self.problems: list[Problem] = []
        self.rjobs: list[_RJob] = []
        self.rjob_by_name: dict[str, _RJob] = {}
        self.num_nodes: int = 1
        self.ml_kind: str | None = None
        self.mpi: dict = {}
        self.startup_in_order = False

    # -- reporting

    def error(self, path: str, code: str, message: str) -> None:
        self.problems.append(Problem(path, message, "error", code))

    def warn(self, path: str, code: str, message: str) -> None:
        self.problems.append(Problem(path, message, "warning", code))

    def mapping(self, parent: dict, key: str, path: str, *, required: bool = False) -> dict | None:
        """Return parent[key] when it is a mapping; report a type error (or a missing required field) otherwise."""
        return self._typed(parent, key, path, dict, "a mapping", required=required)

    def sequence(self, parent: dict, key: str, path: str, *, required: bool = False) -> list | None:
        """Return parent[key] when it is a list; report a type error (or a missing required field) otherwise."""
        return self._typed(parent, key, path, list, "a list", required=required)

    def _typed(self, parent: dict, key: str, path: str, expected: type, noun: str, *, required: bool) -> Any:
        """Return parent[key] when it is an ``expected`` instance, else None after reporting why (absent when
        ``required``, null, or of another type, described as ``noun``)."""
        value = parent.get(key)
        if value is None:
            if required:
                self.error(path, "field.required", f"{path} is required; add it")
            elif key in parent:
                self.error(path, "field.null", f"{path} is null; remove the key or give it a value")
            return None
        if not isinstance(value, expected):
            self.error(path, "field.type", f"{path} must be {noun}, not {_kind(value)} {_show(value)}")
            return None
        return value

    def mapping_items(
        self, items: list, path: str, *, limit: int, code: str, too_many: str, fields: str
    ) -> Iterator[tuple[int, str, dict]]:
        """Yield ``(position, item_path, item)`` for each mapping in ``items`` (the list at ``path``).

        Reports the list as ``code`` with the message ``too_many`` when it has more than ``limit`` items, and each
        item that is not a mapping as ``field.type`` ("must be a mapping with ``fields``"), which is skipped.
        """
        if len(items) > limit:
            self.error(path, code, too_many)
        for position, item in enumerate(items):
            item_path = f"{path}[{position}]"
            if not isinstance(item, dict):
                self.error(item_path, "field.type", f"{item_path} must be a mapping with {fields}")
                continue
            yield position, item_path, item

    def positive_int(self, parent: dict, key: str, path: str, code: str, *, minimum: int = 1) -> int | None:
        """Return parent[key] when it is an integer ≥ minimum (or absent → None); report otherwise."""
        if key not in parent:
            return None
        value = parent[key]
        if not _is_int(value) or value < minimum:
            self.error(path, code, f"{path} must be an integer ≥ {minimum}, got {_show(value)}; set it to ≥ {minimum}")
            return None
        return value

    # -- entry point

    def run(self) -> None:
        manifest = self.manifest
        if not isinstance(manifest, dict):
            self.error("", "manifest.type", f"the manifest must be a mapping, not {_kind(manifest)}")
            return
        self.check_type_meta(manifest)
        self.check_metadata(manifest)
        spec = self.mapping(manifest, "spec", "spec", required=True)
        if spec is None:
            return
        if not spec:
            self.error("spec", "spec.empty", "spec must not be empty; add spec.template with replicatedJobs")
            return
        self.check_template(spec)
        self.check_ml_policy(spec)
        self.check_ancestors()
        self.check_pod_group_policy(spec)
        self.check_scheduling(spec)

    # -- type meta and metadata

    def check_type_meta(self, manifest: dict) -> None:
        if manifest.get("apiVersion") != c.API_VERSION:
            self.error(
                "apiVersion",
                "apiVersion.invalid",
                f"apiVersion must be {c.API_VERSION}, got {_show(manifest.get('apiVersion'))}; set it",
            )
        if manifest.get("kind") != c.KIND:
            self.error("kind", "kind.invalid", f"kind must be {c.KIND}, got {_show(manifest.get('kind'))}; set it")

    def check_metadata(self, manifest: dict) -> None:
        metadata = self.mapping(manifest, "metadata", "metadata", required=True)
        if metadata is None:
            return
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            self.error("metadata.name", "metadata.name.required", "metadata.name is required; give the policy a name")
        else:
            problems = dns1123_subdomain_problems(name)
            if problems:
                self.error(
                    "metadata.name",
                    "metadata.name.invalid",
                    f"metadata.name {_show(name)} is not a valid DNS-1123 subdomain: {'; '.join(problems)}",
                )
            elif len(name) > c.MAX_LABEL_LENGTH:
                # Decision D2 (docs/decisions.md): the runtime name ends up in label values, which are ≤ 63.
                self.error(
                    "metadata.name",
                    "metadata.name.too_long_for_label",
                    f"metadata.name is {len(name)} characters; shorten it to ≤ {c.MAX_LABEL_LENGTH} because the "
                    "runtime name is used as a label value, which Kubernetes limits to 63 characters",
                )
        if "namespace" in metadata:
            self.warn(
                "metadata.namespace",
                "metadata.namespace.ignored",
                "ClusterTrainingRuntime is cluster-scoped: metadata.namespace is ignored; remove it",
            )
        labels = self.mapping(metadata, "labels", "metadata.labels")
        if labels is not None:
            for key, value in labels.items():
                path = _key("metadata.labels", key)
                self.check_label_key(path, key, "metadata.labels.key_invalid")
                if not isinstance(value, str):
                    self.error(
                        path,
                        "metadata.labels.value_type",
                        f"label value must be a string, got {_kind(value)} {_show(value)}; quote it",
                    )
                else:
                    problems = label_value_problems(value)
                    if problems:
                        self.error(
                            path,
                            "metadata.labels.value_invalid",
                            f"label value {_show(value)} {'; '.join(problems)}",
                        )
        if labels is None or not labels.get(c.FRAMEWORK_LABEL):
            self.warn(
                _key("metadata.labels", c.FRAMEWORK_LABEL),
                "metadata.labels.framework_missing",
                f"add the label {c.FRAMEWORK_LABEL} (e.g. torch, deepspeed, torchtune) so the SDK and the policy "
                "list can show the framework",
            )
        annotations = self.mapping(metadata, "annotations", "metadata.annotations")
        if annotations is not None:
            total = 0
            for key, value in annotations.items():
                path = _key("metadata.annotations", key)
                self.check_label_key(path, key, "metadata.annotations.key_invalid")
                if not isinstance(value, str):
                    self.error(
                        path,
                        "metadata.annotations.value_type",
                        f"annotation value must be a string, got {_kind(value)} {_show(value)}; quote it",
                    )
                else:
                    total += len(str(key).encode(errors="surrogatepass")) + len(value.encode(errors="surrogatepass"))
            if total > MAX_ANNOTATIONS_BYTES:
                self.error(
                    "metadata.annotations",
                    "metadata.annotations.too_large",
                    f"annotations total {total} bytes; Kubernetes allows {MAX_ANNOTATIONS_BYTES}: shorten them",
                )

    def check_label_key(self, path: str, key: Any, code: str) -> None:
        problems = label_key_problems(key) if isinstance(key, str) else ["must be a string"]
        if problems:
            self.error(path, code, f"key {_show(key)} is not a valid label key: {'; '.join(problems)}")

    # -- template

    def check_template(self, spec: dict) -> None:
        base = "spec.template.spec"
        template = self.mapping(spec, "template", "spec.template", required=True)
        if template is None:
            return
        jobset = self.mapping(template, "spec", "spec.template.spec", required=True)
        if jobset is None:
            return
        rjobs = self.sequence(jobset, "replicatedJobs", f"{base}.replicatedJobs")
        if not rjobs:
            if rjobs is not None or "replicatedJobs" not in jobset:
                self.error(
                    f"{base}.replicatedJobs",
                    "template.replicated_jobs.required",
                    f"{base}.replicatedJobs must list at least one ReplicatedJob; add one named 'node' labelled "
                    f"{c.ANCESTOR_LABEL}: trainer",
                )
            return
        for index, raw in enumerate(rjobs):
            self.collect_rjob(index, raw, f"{base}.replicatedJobs[{index}]")
        for rjob in self.rjobs:
            self.check_depends_on(rjob)
        self.check_cycles()
        self.check_jobset_policies(jobset, base)

    def collect_rjob(self, index: int, raw: Any, path: str) -> None:
        if not isinstance(raw, dict):
            self.error(path, "field.type", f"{path} must be a mapping with name and template, not {_kind(raw)}")
            return
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            self.error(f"{path}.name", "replicated_job.name.required", f"{path}.name is required; add a name")
            name = None
        else:
            problems = dns1123_label_problems(name)
            if problems:
                self.error(
                    f"{path}.name",
                    "replicated_job.name.invalid",
                    f"ReplicatedJob name {_show(name)} must be a DNS-1123 label (it becomes part of Job and Pod "
                    f"names): {'; '.join(problems)}",
                )
            if name in self.rjob_by_name:
                self.error(
                    f"{path}.name",
                    "replicated_job.name.duplicate",
                    f"ReplicatedJob name {_show(name)} is used twice; give each ReplicatedJob a unique name",
                )
                name = None
        replicas: int | None = 1
        if "replicas" in raw:
            value = raw["replicas"]
            if not _is_int(value) or value < 0:
                self.error(
                    f"{path}.replicas",
                    "replicated_job.replicas.invalid",
                    f"{path}.replicas must be a whole number ≥ 1, got {_show(value)}",
                )
                replicas = None
            elif value == 0:
                # Decision D5: 0 is legal for JobSet (it creates no Jobs) but almost always a mistake here.
                self.warn(
                    f"{path}.replicas",
                    "replicated_job.replicas.zero",
                    "replicas is 0, so this ReplicatedJob creates no Jobs; set replicas ≥ 1 or remove it",
                )
                replicas = 0
            else:
                replicas = value
        template = self.mapping(raw, "template", f"{path}.template", required=True)
        ancestor = None
        pod_spec = None
        if template is not None:
            meta = template.get("metadata")
            labels = meta.get("labels") if isinstance(meta, dict) else None
            if isinstance(labels, dict) and c.ANCESTOR_LABEL in labels:
                value = labels[c.ANCESTOR_LABEL]
                ancestor = value if isinstance(value, str) else _show(value)
            job_spec = template.get("spec")
            pod_template = job_spec.get("template") if isinstance(job_spec, dict) else None
            candidate = pod_template.get("spec") if isinstance(pod_template, dict) else None
            pod_spec = candidate if isinstance(candidate, dict) else None
        depends = []
        entries = self.sequence(raw, "dependsOn", f"{path}.dependsOn")
        for item in entries or []:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                depends.append((item["name"], item.get("status") if isinstance(item.get("status"), str) else ""))
        rjob = _RJob(index, name, path, raw, replicas, ancestor, depends, pod_spec)
        self.rjobs.append(rjob)
        if name is not None:
            self.rjob_by_name[name] = rjob

    def check_depends_on(self, rjob: _RJob) -> None:
        entries = rjob.raw.get("dependsOn")
        if not isinstance(entries, list):
            return
        path = f"{rjob.path}.dependsOn"
        seen: set[str] = set()
        for _, item_path, item in self.mapping_items(
            entries,
            path,
            limit=c.MAX_DEPENDS_ON,
            code="replicated_job.depends_on.too_many",
            too_many=f"{path} has {len(entries)} entries; JobSet allows at most {c.MAX_DEPENDS_ON}",
            fields="name and status",
        ):
            target = item.get("name")
            if not isinstance(target, str) or not target:
                self.error(
                    f"{item_path}.name",
                    "replicated_job.depends_on.name_required",
                    f"{item_path}.name is required; name the ReplicatedJob to wait for",
                )
            elif target == rjob.name:
                self.error(
                    f"{item_path}.name",
                    "replicated_job.depends_on.self",
                    f"ReplicatedJob {_show(target)} cannot depend on itself; remove this dependsOn entry",
                )
            elif target not in self.rjob_by_name:
                self.error(
                    f"{item_path}.name",
                    "replicated_job.depends_on.unknown",
                    f"dependsOn names {_show(target)}, which is not a ReplicatedJob of this runtime; use one of "
                    f"{', '.join(sorted(self.rjob_by_name)) or '(none)'}",
                )
            elif target in seen:
                self.error(
                    f"{item_path}.name",
                    "replicated_job.depends_on.duplicate",
                    f"{_show(target)} is listed twice in dependsOn; keep one entry",
                )
            elif self.rjob_by_name[target].index > rjob.index:
                self.warn(
                    f"{item_path}.name",
                    "replicated_job.depends_on.order",
                    f"{_show(target)} is listed after {_show(rjob.name)}; JobSet expects dependencies to be "
                    "listed before the ReplicatedJobs that depend on them: move it up",
                )
            if isinstance(target, str):
                seen.add(target)
            status = item.get("status")
            if status not in c.DEPENDS_ON_STATUSES:
                self.error(
                    f"{item_path}.status",
                    "replicated_job.depends_on.status",
                    f"{item_path}.status must be Ready or Complete, got {_show(status)}",
                )

    def check_cycles(self) -> None:
        graph = {r.name: [d for d, _ in r.depends_on if d in self.rjob_by_name] for r in self.rjobs if r.name}
        state: dict[str, int] = {}
        for start in graph:
            if state.get(start):
                continue
            # Iterative DFS (0 = new, 1 = on stack, 2 = done) so hostile input cannot exhaust the stack.
            stack: list[tuple[str, Iterator[str]]] = [(start, iter(graph[start]))]
            state[start] = 1
            while stack:
                node, children = stack[-1]
                child = next(children, None)
                if child is None:
                    state[node] = 2
                    stack.pop()
                elif state.get(child) == 1:
                    names = [n for n, _ in stack]
                    cycle = [*names[names.index(child) :], child]
                    rjob = self.rjob_by_name[node]
                    self.error(
                        f"{rjob.path}.dependsOn",
                        "replicated_job.depends_on.cycle",
                        f"dependsOn forms a cycle ({' → '.join(cycle)}), so none of these can ever start; "
                        "remove one of the dependencies",
                    )
                    return
                elif not state.get(child):
                    state[child] = 1
                    stack.append((child, iter(graph.get(child, []))))

    def check_jobset_policies(self, jobset: dict, base: str) -> None:
        startup = self.mapping(jobset, "startupPolicy", f"{base}.startupPolicy")
        if startup is not None:
            order = startup.get("startupPolicyOrder")
            if order is not None and order not in c.STARTUP_POLICY_ORDERS:
                self.error(
                    f"{base}.startupPolicy.startupPolicyOrder",
                    "template.startup_policy.order",
                    f"startupPolicyOrder must be AnyOrder or InOrder, got {_show(order)}",
                )
            self.startup_in_order = order == "InOrder"
            if self.startup_in_order and any("dependsOn" in r.raw for r in self.rjobs):
                self.error(
                    f"{base}.startupPolicy",
                    "template.startup_policy.depends_on_exclusive",
                    "StartupPolicy and DependsOn APIs are mutually exclusive: remove startupPolicy (dependsOn "
                    "replaces it) or remove every dependsOn",
                )
        success = self.mapping(jobset, "successPolicy", f"{base}.successPolicy")
        if success is not None:
            operator = success.get("operator")
            if operator not in c.SUCCESS_POLICY_OPERATORS:
                self.error(
                    f"{base}.successPolicy.operator",
                    "template.success_policy.operator",
                    f"successPolicy.operator must be All or Any, got {_show(operator)}",
                )
            targets = self.sequence(success, "targetReplicatedJobs", f"{base}.successPolicy.targetReplicatedJobs")
            for position, target in enumerate(targets or []):
                if not isinstance(target, str) or target not in self.rjob_by_name:
                    self.error(
                        f"{base}.successPolicy.targetReplicatedJobs[{position}]",
                        "template.success_policy.unknown_target",
                        f"successPolicy targets {_show(target)}, which is not a ReplicatedJob of this runtime; use "
                        f"one of {', '.join(sorted(self.rjob_by_name)) or '(none)'}",
                    )
        if "ttlSecondsAfterFinished" in jobset:
            value = jobset["ttlSecondsAfterFinished"]
            if not _is_int(value) or value < 0:
                self.error(
                    f"{base}.ttlSecondsAfterFinished",
                    "template.ttl.invalid",
                    f"ttlSecondsAfterFinished must be an integer ≥ 0, got {_show(value)}",
                )
        policies = self.sequence(jobset, "volumeClaimPolicies", f"{base}.volumeClaimPolicies")
        if policies is not None:
            if len(policies) > c.MAX_VOLUME_CLAIM_POLICIES:
                self.error(
                    f"{base}.volumeClaimPolicies",
                    "template.volume_claim_policies.too_many",
                    f"volumeClaimPolicies has {len(policies)} entries; at most {c.MAX_VOLUME_CLAIM_POLICIES}",
                )
            for position, policy in enumerate(policies):
                templates = policy.get("templates") if isinstance(policy, dict) else None
                for t_index, claim in enumerate(templates if isinstance(templates, list) else []):
                    meta = claim.get("metadata") if isinstance(claim, dict) else None
                    if isinstance(meta, dict) and "namespace" in meta:
                        path = f"{base}.volumeClaimPolicies[{position}].templates[{t_index}].metadata.namespace"
                        self.error(
                            path,
                            "template.volume_claim_policies.namespace",
                            "volume claim templates must not set a namespace (claims are created in the "
                            "TrainJob's namespace); remove it",
                        )

    # -- ML policy

    def check_ml_policy(self, spec: dict) -> None:
        path = "spec.mlPolicy"
        ml = self.mapping(spec, "mlPolicy", path)
        if ml is None:
            return
        kinds = [k for k in c.ML_POLICY_KINDS if k in ml]
        if len(kinds) > 1:
            self.error(
                path,
                "ml_policy.multiple",
                f"Only one of the policy can be configured: mlPolicy sets {', '.join(kinds)}; keep exactly one",
            )
        self.ml_kind = kinds[0] if len(kinds) == 1 else None
        num_nodes = self.positive_int(ml, "numNodes", f"{path}.numNodes", "ml_policy.num_nodes.invalid")
        if num_nodes is not None:
            self.num_nodes = num_nodes
        for kind in kinds:
            if ml[kind] is not None and not isinstance(ml[kind], dict):
                self.error(f"{path}.{kind}", "field.type", f"{path}.{kind} must be a mapping (use {{}} for defaults)")
        torch = ml.get("torch")
        if isinstance(torch, dict):
            self.check_torch(torch, f"{path}.torch")
        mpi = ml.get("mpi")
        if isinstance(mpi, dict):
            self.mpi = mpi
            self.check_mpi(mpi, f"{path}.mpi")
        flux = ml.get("flux")
        if isinstance(flux, dict):
            self.positive_int(flux, "numProcPerNode", f"{path}.flux.numProcPerNode", "ml_policy.flux.num_proc")

    def check_torch(self, torch: dict, path: str) -> None:
        for removed in ("numProcPerNode", "elasticPolicy"):
            if removed in torch:
                hint = (
                    "set numProcPerNode on the TrainJob (spec.trainer.numProcPerNode)"
                    if removed == "numProcPerNode"
                    else "elastic training is no longer configured in the runtime"
                )
                self.error(
                    f"{path}.{removed}",
                    "ml_policy.torch.removed_field",
                    f"torch.{removed} was removed in Trainer v2.3; remove it ({hint})",
                )
        injection = self.mapping(torch, "envInjection", f"{path}.envInjection")
        if injection is None:
            return
        targets = self.sequence(injection, "targets", f"{path}.envInjection.targets")
        if targets is None:
            return
        tpath = f"{path}.envInjection.targets"
        seen: set[str] = set()
        for _, item, target in self.mapping_items(
            targets,
            tpath,
            limit=c.MAX_ENV_INJECTION_TARGETS,
            code="ml_policy.torch.env_injection.too_many",
            too_many=(
                f"envInjection.targets has {len(targets)} items; at most {c.MAX_ENV_INJECTION_TARGETS} are allowed"
            ),
            fields="jobName and containerNames",
        ):
            job = target.get("jobName")
            if not isinstance(job, str) or not 1 <= len(job) <= c.MAX_NAME_LENGTH:
                self.error(
                    f"{item}.jobName",
                    "ml_policy.torch.env_injection.job_name",
                    f"{item}.jobName is required: the name of a ReplicatedJob (1–{c.MAX_NAME_LENGTH} characters)",
                )
            elif job in seen:
                self.error(
                    f"{item}.jobName",
                    "ml_policy.torch.env_injection.duplicate",
                    f"jobName {_show(job)} appears twice in envInjection.targets; merge the two entries",
                )
            else:
                seen.add(job)
                if self.rjob_by_name and job not in self.rjob_by_name:
                    self.warn(
                        f"{item}.jobName",
                        "ml_policy.torch.env_injection.unknown_job",
                        f"jobName {_show(job)} is not a ReplicatedJob of this runtime, so nothing is injected; "
                        f"use one of {', '.join(sorted(self.rjob_by_name))}",
                    )
            names = target.get("containerNames")
            if not isinstance(names, list) or not 1 <= len(names) <= c.MAX_ENV_INJECTION_CONTAINERS:
                self.error(
                    f"{item}.containerNames",
                    "ml_policy.torch.env_injection.container_names",
                    f"{item}.containerNames must list 1–{c.MAX_ENV_INJECTION_CONTAINERS} container names",
                )
                continue
            for n_index, name in enumerate(names):
                npath = f"{item}.containerNames[{n_index}]"
                if not isinstance(name, str) or not 1 <= len(name) <= c.MAX_LABEL_LENGTH:
                    self.error(
                        npath,
                        "ml_policy.torch.env_injection.container_name",
                        f"{npath} must be a container name of 1–{c.MAX_LABEL_LENGTH} characters",
                    )
                elif name == "node":
                    self.error(
                        npath,
                        "ml_policy.torch.env_injection.node_container",
                        "the 'node' container already gets the torch environment; remove it from containerNames",
                    )
            if len({n for n in names if isinstance(n, str)}) != len(names):
                self.error(
                    f"{item}.containerNames",
                    "ml_policy.torch.env_injection.container_names_duplicate",
                    "containerNames is a set: remove the duplicate names",
                )

    def check_mpi(self, mpi: dict, path: str) -> None:
        self.positive_int(mpi, "numProcPerNode", f"{path}.numProcPerNode", "ml_policy.mpi.num_proc")
        if "mpiImplementation" in mpi and mpi["mpiImplementation"] not in c.MPI_IMPLEMENTATIONS:
            self.error(
                f"{path}.mpiImplementation",
                "ml_policy.mpi.implementation",
                f"mpiImplementation must be OpenMPI (or empty), got {_show(mpi['mpiImplementation'])}",
            )
        if "sshAuthMountPath" in mpi:
            value = mpi["sshAuthMountPath"]
            if not isinstance(value, str) or len(value) > c.MAX_SSH_AUTH_MOUNT_PATH:
                self.error(
                    f"{path}.sshAuthMountPath",
                    "ml_policy.mpi.ssh_auth_mount_path",
                    f"sshAuthMountPath must be a path of at most {c.MAX_SSH_AUTH_MOUNT_PATH} characters",
                )
        if "runLauncherAsNode" in mpi and not isinstance(mpi["runLauncherAsNode"], bool):
            self.error(
                f"{path}.runLauncherAsNode",
                "ml_policy.mpi.run_launcher_as_node",
                f"runLauncherAsNode must be true or false, got {_show(mpi['runLauncherAsNode'])}",
            )

    # -- ancestor-step webhook rules

    def check_ancestors(self) -> None:
        owners: dict[str, _RJob] = {}
        for rjob in self.rjobs:
            if rjob.ancestor is None:
                continue
            lpath = _key(f"{rjob.path}.template.metadata.labels", c.ANCESTOR_LABEL)
            if rjob.ancestor not in c.ANCESTOR_STEPS:
                self.error(
                    lpath,
                    "ancestor.invalid_step",
                    f"{c.ANCESTOR_LABEL} must be one of {', '.join(c.ANCESTOR_STEPS)}, got {_show(rjob.ancestor)}",
                )
                continue
            if rjob.ancestor in owners:
                self.error(
                    lpath,
                    "ancestor.duplicate",
                    f"ReplicatedJobs {_show(owners[rjob.ancestor].name)} and {_show(rjob.name)} are both labelled "
                    f"{rjob.ancestor}; only one ReplicatedJob may carry each ancestor step",
                )
            else:
                owners[rjob.ancestor] = rjob
            if rjob.replicas != 1:
                self.error(
                    f"{rjob.path}.replicas",
                    "ancestor.replicas",
                    f"a ReplicatedJob labelled {rjob.ancestor} must have replicas: 1 (the Trainer webhook rejects "
                    f"other values); got {_show(rjob.raw.get('replicas'))}",
                )
            container = c.ANCESTOR_CONTAINER[rjob.ancestor]
            if container not in _container_names(rjob.pod_spec):
                self.error(
                    f"{rjob.path}.template.spec.template.spec.containers",
                    "ancestor.container_missing",
                    f"a ReplicatedJob labelled {rjob.ancestor} needs a container named {_show(container)}; rename "
                    "the main container",
                )
        if self.rjobs and c.ANCESTOR_TRAINER not in owners:
            self.warn(
                "spec.template.spec.replicatedJobs",
                "ancestor.no_trainer",
                f"no ReplicatedJob is labelled {c.ANCESTOR_LABEL}: trainer, so numNodes and the TrainJob's trainer "
                "settings will not apply; label the training ReplicatedJob",
            )
        if (
            self.ml_kind == "mpi"
            and self.mpi.get("runLauncherAsNode") is True
            and self.num_nodes >= 2
            and not {c.MPI_LAUNCHER_JOB, c.MPI_NODE_JOB} <= set(self.rjob_by_name)
        ):
            self.error(
                "spec.template.spec.replicatedJobs",
                "ml_policy.mpi.launcher_as_node_jobs",
                "with mpi.runLauncherAsNode and numNodes ≥ 2 the runtime needs both a 'launcher' and a 'node' "
                "ReplicatedJob; add the missing one or set numNodes to 1",
            )

    # -- legacy podGroupPolicy

    def check_pod_group_policy(self, spec: dict) -> None:
        path = "spec.podGroupPolicy"
        policy = self.mapping(spec, "podGroupPolicy", path)
        if policy is None:
            return
        if "coscheduling" in policy and "volcano" in policy:
            self.error(
                path,
                "pod_group_policy.multiple",
                "podGroupPolicy sets both coscheduling and volcano; only one of its members may be specified",
            )
        if "workload" in policy:
            # Decision D1: the early KEP's podGroupPolicy.workload was rejected upstream in favour of spec.scheduling.
            self.warn(
                f"{path}.workload",
                "pod_group_policy.workload_rejected",
                "podGroupPolicy.workload comes from an early KEP draft that was rejected; no Trainer release "
                "implements it. Use spec.scheduling (level 1 gang) instead",
            )
        cos = self.mapping(policy, "coscheduling", f"{path}.coscheduling")
        if cos is not None:
            self.positive_int(
                cos,
                "scheduleTimeoutSeconds",
                f"{path}.coscheduling.scheduleTimeoutSeconds",
                "pod_group_policy.schedule_timeout",
            )
        volcano = self.mapping(policy, "volcano", f"{path}.volcano")
        topology = self.mapping(volcano, "networkTopology", f"{path}.volcano.networkTopology") if volcano else None
        if topology is not None:
            mode = topology.get("mode")
            if "mode" in topology and mode not in c.VOLCANO_MODES:
                self.error(
                    f"{path}.volcano.networkTopology.mode",
                    "pod_group_policy.volcano_mode",
                    f"networkTopology.mode must be hard or soft, got {_show(mode)}",
                )
            self.positive_int(
                topology,
                "highestTierAllowed",
                f"{path}.volcano.networkTopology.highestTierAllowed",
                "pod_group_policy.volcano_tier",
            )

    # -- v2.4 spec.scheduling

    def check_scheduling(self, spec: dict) -> None:
        path = "spec.scheduling"
        scheduling = self.mapping(spec, "scheduling", path)
        if scheduling is None:
            return
        composite = self.options.composite_enabled
        if "podGroupPolicy" in spec:
            self.error(
                path,
                "scheduling.pod_group_policy_exclusive",
                "scheduling and podGroupPolicy are mutually exclusive: remove spec.podGroupPolicy (coscheduling/"
                "volcano) or spec.scheduling",
            )
        self.check_owned_fields(spec)
        self.check_typos(scheduling, path, allowed=(*LEVEL1_FIELDS, "replicatedJobs"))
        level1 = [f for f in LEVEL1_FIELDS if f in scheduling]
        entries = self.sequence(scheduling, "replicatedJobs", f"{path}.replicatedJobs")
        if level1 and entries and not composite:
            self.error(
                path,
                "scheduling.levels_exclusive",
                f"level 1 ({', '.join(level1)}) and level 2 (replicatedJobs) cannot be combined unless the "
                "TrainJobCompositePodGroup gate is enabled; keep one level",
            )
        self.check_group(scheduling, path, level=1)
        level1_gang = _policy_of(scheduling) == "gang" and (bool(level1) or not entries)
        if level1_gang and (self.startup_in_order or any(r.depends_on for r in self.rjobs)):
            self.warn(
                f"{path}.schedulingPolicy",
                "deadlock.level1_gang_sequenced",
                "a level-1 gang needs every pod of the TrainJob scheduled together, but this runtime starts "
                "ReplicatedJobs in sequence (dependsOn / startupPolicy InOrder), so later pods are not created "
                "until earlier ones are Ready/Complete; use level-2 entries to gang only the ReplicatedJobs that "
                "start together",
            )
        sequenced = self.startup_in_order or any(r.depends_on for r in self.rjobs)
        if not entries and level1_gang and sequenced and len(self.rjobs) > c.MAX_POD_GROUP_TEMPLATES:
            self.error(
                path,
                "scheduling.too_many_pod_groups",
                f"with sequenced startup a level-1 gang falls back to one PodGroupTemplate per ReplicatedJob "
                f"({len(self.rjobs)}); Kubernetes allows at most {c.MAX_POD_GROUP_TEMPLATES}",
            )
        if entries is None:
            return
        if not entries:
            self.warn(
                f"{path}.replicatedJobs", "scheduling.replicated_jobs.empty", "replicatedJobs is empty: remove it"
            )
            return
        targeted: dict[str, int] = {}
        templates = 0
        for index, epath, entry in self.mapping_items(
            entries,
            f"{path}.replicatedJobs",
            limit=c.MAX_SCHEDULING_ENTRIES,
            code="scheduling.replicated_jobs.too_many",
            too_many=f"scheduling.replicatedJobs has {len(entries)} entries; at most {c.MAX_SCHEDULING_ENTRIES}",
            fields="targetReplicatedJobs",
        ):
            templates += self.check_entry(entry, epath, index, targeted)
        untargeted = [r.name for r in self.rjobs if r.name and r.name not in targeted]
        for name in untargeted:
            # Decision D3: untargeted ReplicatedJobs are allowed and fall back to basic scheduling.
            self.warn(
                f"{path}.replicatedJobs",
                "scheduling.untargeted_replicated_job",
                f"ReplicatedJob {_show(name)} is not targeted by any replicatedJobs entry and falls back to basic "
                "scheduling (no gang); add it to an entry if it must be gang-scheduled",
            )
        templates += len(untargeted) + (1 if level1 else 0)
        if templates > c.MAX_POD_GROUP_TEMPLATES:
            self.error(
                f"{path}.replicatedJobs",
                "scheduling.too_many_pod_groups",
                f"this scheduling resolves to {templates} PodGroupTemplates (level-3 entries count once per replica, "
                f"untargeted ReplicatedJobs once each); Kubernetes allows at most {c.MAX_POD_GROUP_TEMPLATES}: "
                "merge entries or reduce replicas",
            )

    def check_entry(self, entry: dict, epath: str, index: int, targeted: dict[str, int]) -> int:
        """Check one level-2 entry; return how many PodGroupTemplates it resolves to."""
        composite = self.options.composite_enabled
        self.check_typos(entry, epath, allowed=(*GROUP_FIELDS, "targetReplicatedJobs", "job"))
        targets = self.sequence(entry, "targetReplicatedJobs", f"{epath}.targetReplicatedJobs", required=True)
        names: list[str] = []
        tpath = f"{epath}.targetReplicatedJobs"
        if targets is not None:
            if not 1 <= len(targets) <= c.MAX_TARGETS_PER_ENTRY:
                self.error(
                    tpath,
                    "scheduling.targets.count",
                    f"targetReplicatedJobs must list 1–{c.MAX_TARGETS_PER_ENTRY} ReplicatedJob names, "
                    f"has {len(targets)}",
                )
            for position, target in enumerate(targets):
                item = f"{tpath}[{position}]"
                if not isinstance(target, str) or not target or len(target) > c.MAX_NAME_LENGTH:
                    self.error(
                        item,
                        "scheduling.targets.invalid",
                        f"{item} must be a ReplicatedJob name (1–{c.MAX_NAME_LENGTH} characters)",
                    )
                    continue
                if target in names:
                    self.error(item, "scheduling.targets.duplicate", f"{_show(target)} is listed twice; keep one")
                    continue
                names.append(target)
                if target not in self.rjob_by_name:
                    self.error(
                        item,
                        "scheduling.targets.unknown",
                        f"{_show(target)} is not a ReplicatedJob of this runtime; use one of "
                        f"{', '.join(sorted(self.rjob_by_name)) or '(none)'}",
                    )
                elif target in targeted:
                    self.error(
                        item,
                        "scheduling.targets.targeted_twice",
                        f"a ReplicatedJob must not be targeted by more than one replicatedJobs entry: {_show(target)} "
                        f"is already in entry {targeted[target]}; remove it from one of them",
                    )
                else:
                    targeted[target] = index
        job = self.mapping(entry, "job", f"{epath}.job")
        self.check_group(entry, epath, level=2)
        if job is None:
            if _policy_of(entry) == "gang":
                self.check_gang_dependencies(names, epath)
            return 1
        jpath = f"{epath}.job"
        if targets is not None and len(targets) != 1:
            self.error(
                tpath,
                "scheduling.job.single_target",
                "an entry with job (level 3) must target exactly one ReplicatedJob; split it into one entry per "
                "ReplicatedJob",
            )
        entry_fields = [f for f in GROUP_FIELDS if f in entry]
        if entry_fields and not composite:
            self.error(
                epath,
                "scheduling.job.excludes_entry_fields",
                f"an entry with job cannot also set {', '.join(entry_fields)} unless the TrainJobCompositePodGroup "
                "gate is enabled; move them under job or remove them",
            )
        self.check_typos(job, jpath, allowed=GROUP_FIELDS)
        self.check_group(job, jpath, level=3)
        rjob = self.rjob_by_name.get(names[0]) if len(names) == 1 else None
        replicas = rjob.replicas if rjob and rjob.replicas is not None else 1
        if rjob is not None and replicas > self.options.max_level3_replicas:
            self.error(
                tpath,
                "scheduling.job.replicas",
                f"level 3 (job) targets {_show(rjob.name)} with replicas {replicas}; at most "
                f"{self.options.max_level3_replicas} replica(s) are supported (Trainer v2.4, until Kubernetes "
                "1.38): set replicas to 1 or use a level-2 entry",
            )
        if rjob is not None and _policy_of(job) == "gang":
            pods = self.pods_per_job(rjob)
            if pods >= c.LARGE_LEVEL3_GANG:
                key = _topology_key(job) or "topology domain"
                self.warn(
                    jpath,
                    "capacity.level3_gang_large",
                    f"the level-3 gang for {_show(rjob.name)} needs all {pods} pods (numNodes) in one {key} "
                    "domain at once; check that a single domain has that capacity or use a wider topology key",
                )
        return max(replicas, 1) + (1 if composite and entry_fields else 0)

    def pods_per_job(self, rjob: _RJob) -> int:
        if rjob.ancestor == c.ANCESTOR_TRAINER or (self.ml_kind == "mpi" and rjob.name == c.MPI_NODE_JOB):
            if self.ml_kind == "mpi" and rjob.name == c.MPI_NODE_JOB and self.mpi.get("runLauncherAsNode") is True:
                return max(self.num_nodes - 1, 1)
            return self.num_nodes
        job_spec = rjob.raw.get("template", {}).get("spec") if isinstance(rjob.raw.get("template"), dict) else None
        parallelism = job_spec.get("parallelism") if isinstance(job_spec, dict) else None
        return parallelism if _is_int(parallelism) and parallelism > 0 else 1

    def check_gang_dependencies(self, names: list[str], epath: str) -> None:
        members = set(names)
        for name in names:
            rjob = self.rjob_by_name.get(name)
            if rjob is None:
                continue
            for target, status in rjob.depends_on:
                if target not in members:
                    continue
                if status == "Ready":
                    self.warn(
                        f"{epath}.targetReplicatedJobs",
                        "deadlock.gang_waits_for_ready",
                        f"{_show(name)} dependsOn {_show(target)} Ready, so its pods are created only after "
                        f"{_show(target)} is ready, but this gang needs {_show(name)} scheduled too: the gang can "
                        f"never complete. Put {_show(name)} and {_show(target)} in separate entries or use basic",
                    )
                else:
                    self.warn(
                        f"{epath}.targetReplicatedJobs",
                        "deadlock.gang_waits_for_complete",
                        f"{_show(name)} dependsOn {_show(target)} Complete, yet both are in one gang: "
                        f"{_show(name)}'s pods are created only after {_show(target)} finishes, so the gang can "
                        f"never be satisfied. Give {_show(target)} its own (basic) entry",
                    )

    def check_group(self, group: dict, path: str, *, level: int) -> None:
        policy = self.mapping(group, "schedulingPolicy", f"{path}.schedulingPolicy")
        if policy is not None:
            ppath = f"{path}.schedulingPolicy"
            members = [k for k in ("basic", "gang") if k in policy]
            if len(members) != 1:
                self.error(
                    ppath,
                    "scheduling.policy.one_of",
                    f"schedulingPolicy must set exactly one of basic or gang (found {', '.join(members) or 'none'}); "
                    "e.g. {gang: {}}",
                )
            for extra in sorted(set(policy) - {"basic", "gang"}):
                self.error(
                    f"{ppath}.{extra}",
                    "scheduling.policy.unknown",
                    f"schedulingPolicy has no field {_show(extra)}; use basic: {{}} or gang: {{}}",
                )
            gang = policy.get("gang")
            if gang is not None and not isinstance(gang, dict):
                self.error(f"{ppath}.gang", "field.type", "gang must be a mapping; write gang: {}")
            if isinstance(gang, dict):
                for forbidden in ("minCount", "minGroupCount"):
                    if forbidden in gang:
                        self.error(
                            f"{ppath}.gang.{forbidden}",
                            "scheduling.policy.min_count",
                            f"{forbidden} is computed from numNodes by the TrainJob controller; remove it",
                        )
            basic = policy.get("basic")
            if basic is not None and not isinstance(basic, dict):
                self.error(f"{ppath}.basic", "field.type", "basic must be a mapping; write basic: {}")
        constraints = self.mapping(group, "schedulingConstraints", f"{path}.schedulingConstraints")
        if constraints is not None:
            cpath = f"{path}.schedulingConstraints"
            self.check_typos(constraints, cpath, allowed=("topology",))
            topology = self.sequence(constraints, "topology", f"{cpath}.topology")
            if topology is not None and len(topology) > c.MAX_TOPOLOGY_CONSTRAINTS:
                self.error(
                    f"{cpath}.topology",
                    "scheduling.topology.too_many",
                    f"only {c.MAX_TOPOLOGY_CONSTRAINTS} topology constraint per group is allowed, found "
                    f"{len(topology)}; keep one key",
                )
            for position, item in enumerate(topology or []):
                self.check_topology_item(item, f"{cpath}.topology[{position}]")
        self.check_disruption_mode(group, path)
        claims = self.sequence(group, "resourceClaims", f"{path}.resourceClaims")
        if claims is not None:
            self.check_resource_claims(claims, f"{path}.resourceClaims")
        del level  # all three levels share the same group shape

    def check_topology_item(self, item: Any, path: str) -> None:
        if not isinstance(item, dict):
            self.error(path, "field.type", f"{path} must be a mapping like {{key: topology.kubernetes.io/zone}}")
            return
        for wrong, right in TOPOLOGY_TYPOS.items():
            if wrong in item:
                self.error(
                    f"{path}.{wrong}",
                    "scheduling.typo",
                    f"topology constraints have no field {_show(wrong)}; use {right!r} (the node label key)",
                )
        key = item.get("key")
        if key is None:
            if not any(w in item for w in TOPOLOGY_TYPOS):
                self.error(
                    f"{path}.key",
                    "scheduling.topology.key_required",
                    "topology[].key is required: the node label key of the domain, e.g. topology.kubernetes.io/zone",
                )
            return
        problems = label_key_problems(key) if isinstance(key, str) else ["must be a string"]
        if problems:
            self.error(
                f"{path}.key",
                "scheduling.topology.key_invalid",
                f"topology key {_show(key)} is not a valid node label key: {'; '.join(problems)}",
            )
            return
        known = self.options.known_topology_keys
        if known and key not in known:
            self.warn(
                f"{path}.key",
                "scheduling.topology.key_unknown",
                f"no node in the cluster has the label {_show(key)}, so no domain can satisfy this constraint; "
                f"use one of {', '.join(known)} or label the nodes",
            )

    def check_disruption_mode(self, group: dict, path: str) -> None:
        if "disruptionMode" not in group:
            return
        mode = group["disruptionMode"]
        dpath = f"{path}.disruptionMode"
        if isinstance(mode, str):
            if mode in LEGACY_DISRUPTION_MODES:
                union = LEGACY_DISRUPTION_MODES[mode]
                self.warn(
                    dpath,
                    "scheduling.disruption_mode.legacy_string",
                    f"disruptionMode {mode!r} is the v1alpha2 string form; write {{{union}: {{}}}} (the union form "
                    "used from Kubernetes 1.37)",
                )
                return
            self.error(
                dpath,
                "scheduling.disruption_mode.one_of",
                f"disruptionMode must be {{single: {{}}}} or {{all: {{}}}}, got {_show(mode)}",
            )
            return
        if not isinstance(mode, dict) or len([k for k in ("single", "all") if k in mode]) != 1 or len(mode) != 1:
            self.error(
                dpath,
                "scheduling.disruption_mode.one_of",
                f"disruptionMode must set exactly one of single or all, e.g. {{all: {{}}}}; got {_show(mode)}",
            )

    def check_resource_claims(self, claims: list, path: str) -> None:
        seen: set[str] = set()
        for _, item, claim in self.mapping_items(
            claims,
            path,
            limit=c.MAX_RESOURCE_CLAIMS,
            code="scheduling.resource_claims.too_many",
            too_many=f"resourceClaims has {len(claims)} items; at most {c.MAX_RESOURCE_CLAIMS} per group",
            fields="name and a claim source",
        ):
            name = claim.get("name")
            if not isinstance(name, str) or not name:
                self.error(f"{item}.name", "scheduling.resource_claims.name_required", f"{item}.name is required")
            elif name in seen:
                self.error(
                    f"{item}.name",
                    "scheduling.resource_claims.duplicate",
                    f"claim name {_show(name)} is used twice; give each claim a unique name",
                )
            else:
                seen.add(name)
            sources = [k for k in ("resourceClaimName", "resourceClaimTemplateName") if claim.get(k)]
            if len(sources) != 1:
                self.error(
                    item,
                    "scheduling.resource_claims.source",
                    f"{item} must set exactly one of resourceClaimName or resourceClaimTemplateName",
                )

    def check_typos(self, group: dict, path: str, *, allowed: tuple[str, ...]) -> None:
        for key in group:
            if key in allowed or key not in SCHEDULING_TYPOS:
                continue
            self.error(
                f"{path}.{key}",
                "scheduling.typo",
                f"{path} has no field {_show(key)}; did you mean {SCHEDULING_TYPOS[key]}?",
            )

    def check_owned_fields(self, spec: dict) -> None:
        template = spec.get("template")
        jobset = template.get("spec") if isinstance(template, dict) else None
        if isinstance(jobset, dict) and "scheduling" in jobset:
            self.error(
                "spec.template.spec.scheduling",
                "scheduling.jobset_owned",
                "JobSet scheduling must not be set, it is owned by the TrainJob controller when spec.scheduling is "
                "set; remove spec.template.spec.scheduling",
            )
        for rjob in self.rjobs:
            job_spec = rjob.raw.get("template", {}).get("spec") if isinstance(rjob.raw.get("template"), dict) else None
            if isinstance(job_spec, dict) and "scheduling" in job_spec:
                self.error(
                    f"{rjob.path}.template.spec.scheduling",
                    "scheduling.job_owned",
                    "Job scheduling must not be set, it is owned by the TrainJob controller; remove it",
                )
            if rjob.pod_spec is not None and "schedulingGroup" in rjob.pod_spec:
                self.error(
                    f"{rjob.path}.template.spec.template.spec.schedulingGroup",
                    "scheduling.pod_scheduling_group_owned",
                    "Pod schedulingGroup must not be set, it is owned by the TrainJob controller; remove it",
                )


def _container_names(pod_spec: dict | None) -> set[str]:
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    if not isinstance(containers, list):
        return set()
    return {x["name"] for x in containers if isinstance(x, dict) and isinstance(x.get("name"), str)}


def _policy_of(group: Any) -> str | None:
    """Return 'gang' or 'basic' for a scheduling group (gang when unset: the v2.4 default), None if malformed."""
    if not isinstance(group, dict):
        return None
    policy = group.get("schedulingPolicy")
    if policy is None:
        return "gang"
    if not isinstance(policy, dict):
        return None
    if "basic" in policy and "gang" not in policy:
        return "basic"
    if "gang" in policy and "basic" not in policy:
        return "gang"
    return None


def _topology_key(group: Any) -> str:
    constraints = group.get("schedulingConstraints") if isinstance(group, dict) else None
    topology = constraints.get("topology") if isinstance(constraints, dict) else None
    first = topology[0] if isinstance(topology, list) and topology else None
    key = first.get("key") if isinstance(first, dict) else None
    return key if isinstance(key, str) else ""


def validate_runtime(manifest: dict, options: ValidationOptions = ValidationOptions()) -> ValidationReport:
    """Return every problem found in a ClusterTrainingRuntime manifest; never raises, whatever the input."""
    checker = _Checker(manifest, options)
    try:
        checker.run()
    except RecursionError:  # pragma: no cover - manifests from load_documents are depth-limited
        checker.error("", "manifest.too_deep", "the manifest is nested too deeply to validate")
    return ValidationReport(tuple(checker.problems))


# ------------------------------------------------------------------------------------------------ summary


@dataclass(frozen=True)
class SchedulingSummary:
    """How a runtime is scheduled: `mode`, one-line `text` for lists, and the `levels` (1–3) in use."""

    mode: str
    text: str
    levels: tuple[int, ...] = ()


def _short_key(key: str) -> str:
    return key.rsplit("/", 1)[-1] if key else ""


def scheduling_summary(manifest: dict) -> SchedulingSummary:
    """Return a one-line summary of the runtime's scheduling, e.g. "L2 · 2 groups (basic, gang) · block"."""
    spec = manifest.get("spec") if isinstance(manifest, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    scheduling = spec.get("scheduling")
    if isinstance(scheduling, dict):
        return _summarise_scheduling(scheduling)
    policy = spec.get("podGroupPolicy")
    if isinstance(policy, dict):
        cos = policy.get("coscheduling")
        if isinstance(cos, dict):
            timeout = cos.get("scheduleTimeoutSeconds")
            suffix = f" · timeout {timeout}s" if _is_int(timeout) else ""
            return SchedulingSummary("coscheduling", f"Coscheduling (gang){suffix}")
        volcano = policy.get("volcano")
        if isinstance(volcano, dict):
            topology = volcano.get("networkTopology")
            parts = ["Volcano"]
            if isinstance(topology, dict):
                if isinstance(topology.get("mode"), str):
                    parts.append(topology["mode"])
                if _is_int(topology.get("highestTierAllowed")):
                    parts.append(f"tier ≤ {topology['highestTierAllowed']}")
            return SchedulingSummary("volcano", " · ".join(parts))
    return SchedulingSummary("none", "No gang scheduling")


def _summarise_scheduling(scheduling: dict) -> SchedulingSummary:
    entries = scheduling.get("replicatedJobs")
    entries = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    has_l1 = any(f in scheduling for f in LEVEL1_FIELDS) or not entries
    l2 = [e for e in entries if "job" not in e or any(f in e for f in GROUP_FIELDS)]
    l3 = [e for e in entries if isinstance(e.get("job"), dict)]
    levels = tuple(lvl for lvl, used in ((1, has_l1), (2, bool(l2)), (3, bool(l3))) if used)
    parts: list[str] = []
    if has_l1:
        key = _short_key(_topology_key(scheduling))
        parts.append(" · ".join(filter(None, ["L1", _policy_of(scheduling) or "?", key])))
    if l2:
        policies = ", ".join(_policy_of(e) or "?" for e in l2)
        keys = sorted({_short_key(_topology_key(e)) for e in l2} - {""})
        noun = "group" if len(l2) == 1 else "groups"
        parts.append(" · ".join(filter(None, [f"L2 · {len(l2)} {noun} ({policies})", ", ".join(keys)])))
    if l3:
        for entry in l3:
            targets = entry.get("targetReplicatedJobs")
            target = targets[0] if isinstance(targets, list) and targets and isinstance(targets[0], str) else "?"
            job = entry["job"]
            key = _short_key(_topology_key(job))
            parts.append(" · ".join(filter(None, [f"L3 · {target} ({_policy_of(job) or '?'})", key])))
    if (has_l1 and (l2 or l3)) or any(e in l2 for e in l3):
        mode = "composite"
    elif l2 and l3:
        mode = "mixed"
    elif l3:
        mode = "level3"
    elif l2:
        mode = "level2"
    else:
        mode = "level1"
    return SchedulingSummary(mode, " | ".join(parts), levels)
