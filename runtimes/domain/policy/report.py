"""Validation results and options: `Problem`, `ValidationReport`, `ValidationOptions`, and `RULES`, the catalogue of
every problem code `validate_runtime` can emit with the rule it enforces."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from .. import constants as c

Severity = Literal["error", "warning"]

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
    "pod_group_policy.schedule_timeout": "coscheduling.scheduleTimeoutSeconds is an integer ≥ 0 (0: the default)",
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
    "replicated_job.name.too_long": "rJob names are ≤ 20 characters (Trainer v2.4.0, #4394) — decision D4",
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
    "scheduling.composite.alpha2": "(warning) composite levels are Alpha 2, not in Trainer v2.4.0 — decision D6",
    "scheduling.replicated_jobs.empty": "(warning) scheduling.replicatedJobs is not an empty list",
    "scheduling.replicated_jobs.too_many": "scheduling.replicatedJobs ≤ 8 entries",
    "scheduling.targets.count": "targetReplicatedJobs has 1..8 names",
    "scheduling.targets.invalid": "each target is a name of 1..253 chars",
    "scheduling.targets.duplicate": "targets within an entry are unique (set)",
    "scheduling.targets.unknown": "every target exists in the template",
    "scheduling.targets.targeted_twice": "no rJob is targeted by two entries",
    "scheduling.untargeted_replicated_job": "with replicatedJobs, every rJob is targeted by one entry — decision D3",
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
    "scheduling.topology.gate_off": "(warning) topology constraints need TopologyAwareWorkloadScheduling — D11",
    "scheduling.disruption_mode.one_of": "disruptionMode sets exactly one of single / all",
    "scheduling.disruption_mode.legacy_string": "(warning) disruptionMode uses the union form, not Pod/PodGroup",
    "scheduling.disruption_mode.cluster_form": "disruptionMode has the form the installed CRD embeds — decision D9",
    "scheduling.resource_claims.level": "resourceClaims are set only under job (level 3) — decision D17",
    "scheduling.resource_claims.gate_off": "(warning) resourceClaims need DRAWorkloadResourceClaims on the cluster",
    "scheduling.priority.mixed": "every ReplicatedJob has the same priorityClassName (or none) under spec.scheduling",
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
    "scheduling.level1_gang_per_replicated_job": "(warning) a level-1 gang on a runtime with dependsOn / InOrder "
    "becomes one gang per ReplicatedJob (KEP-3015)",
    "capacity.level3_gang_large": "(warning) a large level-3 gang must fit one topology domain",
}


# Errors that block a save from the form, the YAML editor or the API, but not an import or an adoption: these rules
# arrived with Trainer v2.4.0 (ReplicatedJob names ≤ 20, every ReplicatedJob targeted, resourceClaims only under
# job), so a runtime written for an earlier release or pre-release CRD may already exist on a cluster or in a file.
# Such a runtime is stored with the error shown, so nothing is lost; it cannot be saved again or applied until fixed.
# Decision D18 in docs/decisions.md.
IMPORTABLE_ERRORS: frozenset[str] = frozenset(
    {
        "replicated_job.name.too_long",
        "scheduling.untargeted_replicated_job",
        "scheduling.resource_claims.level",
    }
)
# The lints that mean a gang can never reach its minCount on a real cluster (dependsOn start order), decision D8.
STARTUP_DEADLOCKS: frozenset[str] = frozenset(
    {"deadlock.gang_waits_for_ready", "deadlock.gang_waits_for_complete"}
)


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

    @property
    def import_blocking_errors(self) -> tuple[Problem, ...]:
        """The errors that refuse an import or adoption: every error except the `IMPORTABLE_ERRORS`."""
        return tuple(p for p in self.errors if p.code not in IMPORTABLE_ERRORS)

    @property
    def importable(self) -> bool:
        """True when an import or adoption may store the manifest (its errors, if any, are all importable)."""
        return not self.import_blocking_errors

    @property
    def startup_deadlocks(self) -> tuple[Problem, ...]:
        """The warnings saying a gang can never reach minCount because of the dependsOn start order."""
        return tuple(p for p in self.problems if p.code in STARTUP_DEADLOCKS)

    def as_dicts(self) -> list[dict[str, str]]:
        """Return the problems as JSON-ready dicts (errors first, then warnings, each in path order found)."""
        ordered = sorted(self.problems, key=lambda p: p.severity != "error")
        return [p.as_dict() for p in ordered]


@dataclass(frozen=True)
class ValidationOptions:
    """Cluster facts validation depends on.

    composite_enabled: composite (gang-of-gangs) levels are allowed — Alpha 2, not in Trainer v2.4.0 (decision D6).
    max_level3_replicas: most replicas a level-3 target may have (1 in Trainer v2.4).
    known_topology_keys: node label keys present in the cluster; when non-empty, other keys get a warning.
    disruption_mode_form: how the installed CRD embeds `disruptionMode` (`constants.DISRUPTION_MODE_UNION` /
        `_STRING`); unknown (`""`) accepts both, with a warning on the string form (decision D9).
    topology_gate: whether the cluster keeps topology constraints (`TopologyAwareWorkloadScheduling`); False warns
        on every topology key, None (unknown) does not (decision D11).
    dra_claims_gate: whether the cluster keeps `resourceClaims` on Workloads and PodGroups
        (`DRAWorkloadResourceClaims`, beta and off by default in 1.37); False warns on every level-3 claim list,
        None (unknown) does not.
    """

    composite_enabled: bool = False
    max_level3_replicas: int = c.V24_MAX_LEVEL3_REPLICAS
    known_topology_keys: tuple[str, ...] = ()
    disruption_mode_form: str = c.DISRUPTION_MODE_UNKNOWN
    topology_gate: bool | None = None
    dra_claims_gate: bool | None = None
