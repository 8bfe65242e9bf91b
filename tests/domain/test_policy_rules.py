"""One minimal bad manifest per validation rule → the exact code, path and severity."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runtimes.domain import policy
from runtimes.domain.policy import ValidationOptions, validate_runtime

from .test_policy_cases import RJOBS, drop, put, rjob, upstream, with_scheduling

SCHED = "spec.scheduling"
FRAMEWORK = '["trainer.kubeflow.org/framework"]'
ANCESTOR = '["trainer.kubeflow.org/trainjob-ancestor-step"]'
COMPOSITE = ValidationOptions(composite_enabled=True)
UNION_CRD = ValidationOptions(disruption_mode_form="union")
STRING_CRD = ValidationOptions(disruption_mode_form="string")
GATE_OFF = ValidationOptions(topology_gate=False)
DRA_OFF = ValidationOptions(dra_claims_gate=False)
ZONE = {"topology": [{"key": "topology.kubernetes.io/zone"}]}
CLAIMS = [{"name": "tpu-slice", "resourceClaimTemplateName": "tpu-slice-template"}]


def m(base: str, *changes: tuple[str, Any]) -> Callable[[], dict]:
    """A builder: upstream runtime `base` with (path, value) sets; value DROP deletes the key."""

    def build() -> dict:
        manifest = upstream(base)
        for path, value in changes:
            if value is DROP:
                drop(manifest, path)
            else:
                put(manifest, path, value)
        return manifest

    return build


DROP = object()


def sched(base: str, scheduling: dict, *changes: tuple[str, Any]) -> Callable[[], dict]:
    def build() -> dict:
        manifest = with_scheduling(base, scheduling)
        for path, value in changes:
            put(manifest, path, value)
        return manifest

    return build


def node_l3(job: dict) -> dict:
    return {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "job": job}]}


def many_rjobs(count: int) -> list[dict]:
    return [rjob("node", step="trainer")] + [rjob(f"side-{i}") for i in range(count - 1)]


# (code, path, severity, builder, options)
CASES: list[tuple[str, str, str, Callable[[], Any], ValidationOptions | None]] = [
    # --- shape
    ("manifest.type", "", "error", lambda: ["not", "a", "mapping"], None),
    ("apiVersion.invalid", "apiVersion", "error", m("torch", ("apiVersion", "v1")), None),
    ("kind.invalid", "kind", "error", m("torch", ("kind", "TrainingRuntime")), None),
    ("field.required", "metadata", "error", m("torch", ("metadata", DROP)), None),
    ("field.type", "spec.mlPolicy", "error", m("torch", ("spec.mlPolicy", [1])), None),
    ("field.null", "spec.podGroupPolicy", "error", m("torch", ("spec.podGroupPolicy", None)), None),
    # --- metadata
    ("metadata.name.required", "metadata.name", "error", m("torch", ("metadata.name", "")), None),
    ("metadata.name.invalid", "metadata.name", "error", m("torch", ("metadata.name", "Torch_Runtime")), None),
    ("metadata.name.invalid", "metadata.name", "error", m("torch", ("metadata.name", "a" * 254)), None),
    ("metadata.name.too_long_for_label", "metadata.name", "error", m("torch", ("metadata.name", "a" * 64)), None),
    ("metadata.namespace.ignored", "metadata.namespace", "warning", m("torch", ("metadata.namespace", "x")), None),
    (
        "metadata.labels.key_invalid",
        'metadata.labels["bad key!"]',
        "error",
        m("torch", ('metadata.labels["bad key!"]', "v")),
        None,
    ),
    (
        "metadata.labels.key_invalid",
        'metadata.labels["Example.com/x"]',
        "error",
        m("torch", ('metadata.labels["Example.com/x"]', "v")),
        None,
    ),
    (
        "metadata.labels.value_invalid",
        "metadata.labels.team",
        "error",
        m("torch", ("metadata.labels.team", "x" * 64)),
        None,
    ),
    (
        "metadata.labels.value_invalid",
        "metadata.labels.team",
        "error",
        m("torch", ("metadata.labels.team", "<script>")),
        None,
    ),
    ("metadata.labels.value_type", "metadata.labels.team", "error", m("torch", ("metadata.labels.team", 3)), None),
    (
        "metadata.labels.framework_missing",
        f"metadata.labels{FRAMEWORK}",
        "warning",
        m("torch", ("metadata.labels", DROP)),
        None,
    ),
    (
        "metadata.annotations.key_invalid",
        'metadata.annotations["a/b/c"]',
        "error",
        m("torch", ('metadata.annotations["a/b/c"]', "v")),
        None,
    ),
    (
        "metadata.annotations.value_type",
        "metadata.annotations.note",
        "error",
        m("torch", ("metadata.annotations.note", True)),
        None,
    ),
    (
        "metadata.annotations.too_large",
        "metadata.annotations",
        "error",
        m("torch", ("metadata.annotations.big", "x" * (256 * 1024 + 1))),
        None,
    ),
    # --- spec and mlPolicy
    ("field.required", "spec", "error", m("torch", ("spec", DROP)), None),
    ("spec.empty", "spec", "error", m("torch", ("spec", {})), None),
    ("ml_policy.multiple", "spec.mlPolicy", "error", m("torch", ("spec.mlPolicy.mpi", {})), None),
    ("ml_policy.num_nodes.invalid", "spec.mlPolicy.numNodes", "error", m("torch", ("spec.mlPolicy.numNodes", 0)), None),
    (
        "ml_policy.num_nodes.invalid",
        "spec.mlPolicy.numNodes",
        "error",
        m("torch", ("spec.mlPolicy.numNodes", "2")),
        None,
    ),
    (
        "ml_policy.num_nodes.invalid",
        "spec.mlPolicy.numNodes",
        "error",
        m("torch", ("spec.mlPolicy.numNodes", True)),
        None,
    ),
    (
        "ml_policy.torch.removed_field",
        "spec.mlPolicy.torch.numProcPerNode",
        "error",
        m("torch", ("spec.mlPolicy.torch.numProcPerNode", "auto")),
        None,
    ),
    (
        "ml_policy.torch.removed_field",
        "spec.mlPolicy.torch.elasticPolicy",
        "error",
        m("torch", ("spec.mlPolicy.torch.elasticPolicy", {"maxNodes": 3})),
        None,
    ),
    (
        "ml_policy.torch.env_injection.too_many",
        "spec.mlPolicy.torch.envInjection.targets",
        "error",
        m(
            "torch",
            (
                "spec.mlPolicy.torch.envInjection",
                {"targets": [{"jobName": f"j{i}", "containerNames": ["c"]} for i in range(17)]},
            ),
        ),
        None,
    ),
    (
        "ml_policy.torch.env_injection.job_name",
        "spec.mlPolicy.torch.envInjection.targets[0].jobName",
        "error",
        m("torch", ("spec.mlPolicy.torch.envInjection", {"targets": [{"containerNames": ["c"]}]})),
        None,
    ),
    (
        "ml_policy.torch.env_injection.job_name",
        "spec.mlPolicy.torch.envInjection.targets[0].jobName",
        "error",
        m(
            "torch",
            ("spec.mlPolicy.torch.envInjection", {"targets": [{"jobName": "j" * 254, "containerNames": ["c"]}]}),
        ),
        None,
    ),
    (
        "ml_policy.torch.env_injection.duplicate",
        "spec.mlPolicy.torch.envInjection.targets[1].jobName",
        "error",
        m(
            "torch",
            (
                "spec.mlPolicy.torch.envInjection",
                {
                    "targets": [
                        {"jobName": "node", "containerNames": ["a"]},
                        {"jobName": "node", "containerNames": ["b"]},
                    ]
                },
            ),
        ),
        None,
    ),
    (
        "ml_policy.torch.env_injection.unknown_job",
        "spec.mlPolicy.torch.envInjection.targets[0].jobName",
        "warning",
        m("torch", ("spec.mlPolicy.torch.envInjection", {"targets": [{"jobName": "ghost", "containerNames": ["a"]}]})),
        None,
    ),
    (
        "ml_policy.torch.env_injection.container_names",
        "spec.mlPolicy.torch.envInjection.targets[0].containerNames",
        "error",
        m("torch", ("spec.mlPolicy.torch.envInjection", {"targets": [{"jobName": "node", "containerNames": []}]})),
        None,
    ),
    (
        "ml_policy.torch.env_injection.container_names",
        "spec.mlPolicy.torch.envInjection.targets[0].containerNames",
        "error",
        m(
            "torch",
            (
                "spec.mlPolicy.torch.envInjection",
                {"targets": [{"jobName": "node", "containerNames": list("abcdefghi")}]},
            ),
        ),
        None,
    ),
    (
        "ml_policy.torch.env_injection.container_name",
        "spec.mlPolicy.torch.envInjection.targets[0].containerNames[0]",
        "error",
        m(
            "torch",
            ("spec.mlPolicy.torch.envInjection", {"targets": [{"jobName": "node", "containerNames": ["c" * 64]}]}),
        ),
        None,
    ),
    (
        "ml_policy.torch.env_injection.node_container",
        "spec.mlPolicy.torch.envInjection.targets[0].containerNames[1]",
        "error",
        m(
            "torch",
            ("spec.mlPolicy.torch.envInjection", {"targets": [{"jobName": "node", "containerNames": ["a", "node"]}]}),
        ),
        None,
    ),
    (
        "ml_policy.torch.env_injection.container_names_duplicate",
        "spec.mlPolicy.torch.envInjection.targets[0].containerNames",
        "error",
        m(
            "torch",
            ("spec.mlPolicy.torch.envInjection", {"targets": [{"jobName": "node", "containerNames": ["a", "a"]}]}),
        ),
        None,
    ),
    (
        "ml_policy.mpi.num_proc",
        "spec.mlPolicy.mpi.numProcPerNode",
        "error",
        m("deepspeed", ("spec.mlPolicy.mpi.numProcPerNode", 0)),
        None,
    ),
    (
        "ml_policy.mpi.implementation",
        "spec.mlPolicy.mpi.mpiImplementation",
        "error",
        m("deepspeed", ("spec.mlPolicy.mpi.mpiImplementation", "Intel")),
        None,
    ),
    (
        "ml_policy.mpi.ssh_auth_mount_path",
        "spec.mlPolicy.mpi.sshAuthMountPath",
        "error",
        m("deepspeed", ("spec.mlPolicy.mpi.sshAuthMountPath", "/" + "x" * 4096)),
        None,
    ),
    (
        "ml_policy.mpi.run_launcher_as_node",
        "spec.mlPolicy.mpi.runLauncherAsNode",
        "error",
        m("deepspeed", ("spec.mlPolicy.mpi.runLauncherAsNode", "yes")),
        None,
    ),
    (
        "ml_policy.mpi.launcher_as_node_jobs",
        RJOBS,
        "error",
        m("deepspeed", ("spec.mlPolicy.numNodes", 2), (RJOBS, [rjob("launcher", step="trainer", container="node")])),
        None,
    ),
    (
        "ml_policy.flux.num_proc",
        "spec.mlPolicy.flux.numProcPerNode",
        "error",
        m("torch", ("spec.mlPolicy.torch", DROP), ("spec.mlPolicy.flux", {"numProcPerNode": -1})),
        None,
    ),
    # --- podGroupPolicy
    (
        "pod_group_policy.multiple",
        "spec.podGroupPolicy",
        "error",
        m("torch", ("spec.podGroupPolicy", {"coscheduling": {}, "volcano": {}})),
        None,
    ),
    (
        "pod_group_policy.schedule_timeout",
        "spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds",
        "error",
        m("torch", ("spec.podGroupPolicy", {"coscheduling": {"scheduleTimeoutSeconds": -1}})),
        None,
    ),
    (
        "pod_group_policy.volcano_mode",
        "spec.podGroupPolicy.volcano.networkTopology.mode",
        "error",
        m("torch", ("spec.podGroupPolicy", {"volcano": {"networkTopology": {"mode": "strict"}}})),
        None,
    ),
    (
        "pod_group_policy.volcano_tier",
        "spec.podGroupPolicy.volcano.networkTopology.highestTierAllowed",
        "error",
        m("torch", ("spec.podGroupPolicy", {"volcano": {"networkTopology": {"highestTierAllowed": 0}}})),
        None,
    ),
    (
        "pod_group_policy.workload_rejected",
        "spec.podGroupPolicy.workload",
        "warning",
        m("torch", ("spec.podGroupPolicy", {"workload": {}})),
        None,
    ),
    # --- template
    ("field.required", "spec.template", "error", m("torch", ("spec.template", DROP)), None),
    ("template.replicated_jobs.required", RJOBS, "error", m("torch", (RJOBS, [])), None),
    ("template.replicated_jobs.required", RJOBS, "error", m("torch", (RJOBS, DROP)), None),
    ("replicated_job.name.required", f"{RJOBS}[0].name", "error", m("torch", (f"{RJOBS}[0].name", DROP)), None),
    ("replicated_job.name.invalid", f"{RJOBS}[0].name", "error", m("torch", (f"{RJOBS}[0].name", "Node_1")), None),
    ("replicated_job.name.invalid", f"{RJOBS}[0].name", "error", m("torch", (f"{RJOBS}[0].name", "n" * 64)), None),
    (
        "replicated_job.name.duplicate",
        f"{RJOBS}[1].name",
        "error",
        m("torch", (RJOBS, [rjob("node", step="trainer"), rjob("node")])),
        None,
    ),
    (
        "replicated_job.name.too_long",
        f"{RJOBS}[1].name",
        "error",
        m("torch", (RJOBS, [rjob("node", step="trainer"), rjob("evaluation-sidecar-01")])),
        None,
    ),
    (
        "replicated_job.replicas.invalid",
        f"{RJOBS}[0].replicas",
        "error",
        m("torch", (f"{RJOBS}[0].replicas", -1)),
        None,
    ),
    (
        "replicated_job.replicas.invalid",
        f"{RJOBS}[0].replicas",
        "error",
        m("torch", (f"{RJOBS}[0].replicas", 1.5)),
        None,
    ),
    (
        "replicated_job.replicas.zero",
        f"{RJOBS}[1].replicas",
        "warning",
        m("torch", (RJOBS, [rjob("node", step="trainer"), rjob("side", replicas=0)])),
        None,
    ),
    ("field.required", f"{RJOBS}[0].template", "error", m("torch", (f"{RJOBS}[0].template", DROP)), None),
    (
        "replicated_job.depends_on.too_many",
        f"{RJOBS}[6].dependsOn",
        "error",
        m(
            "torch",
            (
                RJOBS,
                [
                    *(rjob(f"i{i}") for i in range(6)),
                    {
                        **rjob("node", step="trainer"),
                        "dependsOn": [{"name": f"i{i}", "status": "Complete"} for i in range(6)],
                    },
                ],
            ),
        ),
        None,
    ),
    (
        "replicated_job.depends_on.unknown",
        f"{RJOBS}[1].dependsOn[0].name",
        "error",
        m("deepspeed", (f"{RJOBS}[1].dependsOn[0].name", "worker")),
        None,
    ),
    (
        "replicated_job.depends_on.self",
        f"{RJOBS}[1].dependsOn[0].name",
        "error",
        m("deepspeed", (f"{RJOBS}[1].dependsOn[0].name", "launcher")),
        None,
    ),
    (
        "replicated_job.depends_on.name_required",
        f"{RJOBS}[1].dependsOn[0].name",
        "error",
        m("deepspeed", (f"{RJOBS}[1].dependsOn[0]", {"status": "Ready"})),
        None,
    ),
    (
        "replicated_job.depends_on.duplicate",
        f"{RJOBS}[1].dependsOn[1].name",
        "error",
        m(
            "deepspeed",
            (f"{RJOBS}[1].dependsOn", [{"name": "node", "status": "Ready"}, {"name": "node", "status": "Complete"}]),
        ),
        None,
    ),
    (
        "replicated_job.depends_on.status",
        f"{RJOBS}[1].dependsOn[0].status",
        "error",
        m("deepspeed", (f"{RJOBS}[1].dependsOn[0].status", "Running")),
        None,
    ),
    (
        "replicated_job.depends_on.order",
        f"{RJOBS}[0].dependsOn[0].name",
        "warning",
        m(
            "deepspeed",
            (f"{RJOBS}[0].dependsOn", [{"name": "launcher", "status": "Ready"}]),
            (f"{RJOBS}[1].dependsOn", DROP),
        ),
        None,
    ),
    (
        "replicated_job.depends_on.cycle",
        f"{RJOBS}[1].dependsOn",
        "error",
        m("deepspeed", (f"{RJOBS}[0].dependsOn", [{"name": "launcher", "status": "Ready"}])),
        None,
    ),
    (
        "template.startup_policy.depends_on_exclusive",
        "spec.template.spec.startupPolicy",
        "error",
        m("deepspeed", ("spec.template.spec.startupPolicy", {"startupPolicyOrder": "InOrder"})),
        None,
    ),
    (
        "template.startup_policy.order",
        "spec.template.spec.startupPolicy.startupPolicyOrder",
        "error",
        m("torch", ("spec.template.spec.startupPolicy", {"startupPolicyOrder": "Sequential"})),
        None,
    ),
    (
        "template.success_policy.operator",
        "spec.template.spec.successPolicy.operator",
        "error",
        m("deepspeed", ("spec.template.spec.successPolicy.operator", "Some")),
        None,
    ),
    (
        "template.success_policy.unknown_target",
        "spec.template.spec.successPolicy.targetReplicatedJobs[0]",
        "error",
        m("deepspeed", ("spec.template.spec.successPolicy.targetReplicatedJobs", ["driver"])),
        None,
    ),
    (
        "template.ttl.invalid",
        "spec.template.spec.ttlSecondsAfterFinished",
        "error",
        m("torch", ("spec.template.spec.ttlSecondsAfterFinished", -5)),
        None,
    ),
    (
        "template.volume_claim_policies.too_many",
        "spec.template.spec.volumeClaimPolicies",
        "error",
        m("torch", ("spec.template.spec.volumeClaimPolicies", [{"templates": []}] * 51)),
        None,
    ),
    (
        "template.volume_claim_policies.namespace",
        "spec.template.spec.volumeClaimPolicies[0].templates[0].metadata.namespace",
        "error",
        m("qwen", ("spec.template.spec.volumeClaimPolicies[0].templates[0].metadata.namespace", "team-a")),
        None,
    ),
    # --- ancestor-step webhook rules
    (
        "ancestor.invalid_step",
        f"{RJOBS}[0].template.metadata.labels{ANCESTOR}",
        "error",
        m("torch", (f"{RJOBS}[0].template.metadata.labels{ANCESTOR}", "trainer-node")),
        None,
    ),
    ("ancestor.replicas", f"{RJOBS}[0].replicas", "error", m("torch", (f"{RJOBS}[0].replicas", 2)), None),
    (
        "ancestor.container_missing",
        f"{RJOBS}[0].template.spec.template.spec.containers",
        "error",
        m("torch", (f"{RJOBS}[0].template.spec.template.spec.containers[0].name", "trainer")),
        None,
    ),
    (
        "ancestor.duplicate",
        f"{RJOBS}[1].template.metadata.labels{ANCESTOR}",
        "error",
        m(
            "qwen",
            (f"{RJOBS}[1].template.metadata.labels{ANCESTOR}", "dataset-initializer"),
            (f"{RJOBS}[1].template.spec.template.spec.containers[0].name", "dataset-initializer"),
        ),
        None,
    ),
    ("ancestor.no_trainer", RJOBS, "warning", m("torch", (f"{RJOBS}[0].template.metadata", DROP)), None),
    # --- spec.scheduling
    (
        "scheduling.pod_group_policy_exclusive",
        SCHED,
        "error",
        sched("torch", {}, ("spec.podGroupPolicy", {"coscheduling": {}})),
        None,
    ),
    (
        "scheduling.levels_exclusive",
        SCHED,
        "error",
        sched("torch", {"schedulingPolicy": {"gang": {}}, "replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}),
        None,
    ),
    (
        "scheduling.replicated_jobs.empty",
        f"{SCHED}.replicatedJobs",
        "warning",
        sched("torch", {"replicatedJobs": []}),
        None,
    ),
    (
        "scheduling.replicated_jobs.too_many",
        f"{SCHED}.replicatedJobs",
        "error",
        sched(
            "torch",
            {"replicatedJobs": [{"targetReplicatedJobs": [f"side-{i}"]} for i in range(9)]},
            (RJOBS, many_rjobs(10)),
        ),
        None,
    ),
    (
        "scheduling.targets.count",
        f"{SCHED}.replicatedJobs[0].targetReplicatedJobs",
        "error",
        sched("torch", {"replicatedJobs": [{"targetReplicatedJobs": []}]}),
        None,
    ),
    (
        "scheduling.targets.count",
        f"{SCHED}.replicatedJobs[0].targetReplicatedJobs",
        "error",
        sched(
            "torch",
            {"replicatedJobs": [{"targetReplicatedJobs": ["node"] + [f"side-{i}" for i in range(8)]}]},
            (RJOBS, many_rjobs(9)),
        ),
        None,
    ),
    (
        "field.required",
        f"{SCHED}.replicatedJobs[0].targetReplicatedJobs",
        "error",
        sched("torch", {"replicatedJobs": [{"schedulingPolicy": {"gang": {}}}]}),
        None,
    ),
    (
        "scheduling.targets.invalid",
        f"{SCHED}.replicatedJobs[0].targetReplicatedJobs[0]",
        "error",
        sched("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["n" * 254]}]}),
        None,
    ),
    (
        "scheduling.targets.duplicate",
        f"{SCHED}.replicatedJobs[0].targetReplicatedJobs[1]",
        "error",
        sched("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["node", "node"]}]}),
        None,
    ),
    (
        "scheduling.targets.unknown",
        f"{SCHED}.replicatedJobs[0].targetReplicatedJobs[0]",
        "error",
        sched("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["worker"]}]}),
        None,
    ),
    (
        "scheduling.targets.targeted_twice",
        f"{SCHED}.replicatedJobs[1].targetReplicatedJobs[0]",
        "error",
        sched("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}, {"targetReplicatedJobs": ["node"]}]}),
        None,
    ),
    (
        "scheduling.untargeted_replicated_job",
        f"{SCHED}.replicatedJobs",
        "error",
        sched("qwen", {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}),
        None,
    ),
    (
        "scheduling.untargeted_replicated_job",
        f"{SCHED}.replicatedJobs",
        "error",
        sched("deepspeed", node_l3({"schedulingPolicy": {"gang": {}}})),
        None,
    ),
    (
        "scheduling.composite.alpha2",
        SCHED,
        "warning",
        sched("torch", {"schedulingPolicy": {"gang": {}}, "replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}),
        COMPOSITE,
    ),
    (
        "scheduling.composite.alpha2",
        f"{SCHED}.replicatedJobs[0]",
        "warning",
        sched(
            "torch",
            {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}, "job": {}}]},
        ),
        COMPOSITE,
    ),
    (
        "scheduling.job.single_target",
        f"{SCHED}.replicatedJobs[0].targetReplicatedJobs",
        "error",
        sched("deepspeed", {"replicatedJobs": [{"targetReplicatedJobs": ["node", "launcher"], "job": {}}]}),
        None,
    ),
    (
        "scheduling.job.excludes_entry_fields",
        f"{SCHED}.replicatedJobs[0]",
        "error",
        sched(
            "torch",
            {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}, "job": {}}]},
        ),
        None,
    ),
    (
        "scheduling.job.replicas",
        f"{SCHED}.replicatedJobs[0].targetReplicatedJobs",
        "error",
        sched(
            "torch",
            {"replicatedJobs": [{"targetReplicatedJobs": ["side"], "job": {}}]},
            (RJOBS, [rjob("node", step="trainer"), rjob("side", replicas=2)]),
        ),
        None,
    ),
    (
        "scheduling.too_many_pod_groups",
        f"{SCHED}.replicatedJobs",
        "error",
        sched(
            "torch",
            {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}, {"targetReplicatedJobs": ["side"], "job": {}}]},
            (RJOBS, [rjob("node", step="trainer"), rjob("side", replicas=8)]),
        ),
        ValidationOptions(max_level3_replicas=16),
    ),
    (
        "scheduling.too_many_pod_groups",
        f"{SCHED}.replicatedJobs",
        "error",
        sched("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}, (RJOBS, many_rjobs(9))),
        None,
    ),
    (
        "scheduling.policy.one_of",
        f"{SCHED}.schedulingPolicy",
        "error",
        sched("torch", {"schedulingPolicy": {"gang": {}, "basic": {}}}),
        None,
    ),
    ("scheduling.policy.one_of", f"{SCHED}.schedulingPolicy", "error", sched("torch", {"schedulingPolicy": {}}), None),
    (
        "scheduling.policy.unknown",
        f"{SCHED}.schedulingPolicy.strict",
        "error",
        sched("torch", {"schedulingPolicy": {"gang": {}, "strict": {}}}),
        None,
    ),
    (
        "scheduling.policy.min_count",
        f"{SCHED}.schedulingPolicy.gang.minCount",
        "error",
        sched("torch", {"schedulingPolicy": {"gang": {"minCount": 4}}}),
        None,
    ),
    (
        "scheduling.policy.min_count",
        f"{SCHED}.replicatedJobs[0].job.schedulingPolicy.gang.minCount",
        "error",
        sched("torch", node_l3({"schedulingPolicy": {"gang": {"minCount": 1}}})),
        None,
    ),
    (
        "scheduling.topology.too_many",
        f"{SCHED}.schedulingConstraints.topology",
        "error",
        sched(
            "torch",
            {
                "schedulingConstraints": {
                    "topology": [{"key": "topology.kubernetes.io/zone"}, {"key": "topology.kubernetes.io/rack"}]
                }
            },
        ),
        None,
    ),
    (
        "scheduling.topology.key_required",
        f"{SCHED}.schedulingConstraints.topology[0].key",
        "error",
        sched("torch", {"schedulingConstraints": {"topology": [{}]}}),
        None,
    ),
    (
        "scheduling.topology.key_invalid",
        f"{SCHED}.schedulingConstraints.topology[0].key",
        "error",
        sched("torch", {"schedulingConstraints": {"topology": [{"key": "rack key!"}]}}),
        None,
    ),
    (
        "scheduling.topology.key_unknown",
        f"{SCHED}.replicatedJobs[0].job.schedulingConstraints.topology[0].key",
        "warning",
        sched("torch", node_l3({"schedulingConstraints": {"topology": [{"key": "example.com/block"}]}})),
        ValidationOptions(known_topology_keys=("topology.kubernetes.io/zone",)),
    ),
    (
        "scheduling.topology.gate_off",
        f"{SCHED}.schedulingConstraints.topology[0].key",
        "warning",
        sched("torch", {"schedulingConstraints": ZONE}),
        GATE_OFF,
    ),
    (
        "scheduling.topology.gate_off",
        f"{SCHED}.replicatedJobs[0].job.schedulingConstraints.topology[0].key",
        "warning",
        sched("torch", node_l3({"schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}})),
        GATE_OFF,
    ),
    (
        "scheduling.disruption_mode.one_of",
        f"{SCHED}.disruptionMode",
        "error",
        sched("torch", {"disruptionMode": {"single": {}, "all": {}}}),
        None,
    ),
    (
        "scheduling.disruption_mode.one_of",
        f"{SCHED}.disruptionMode",
        "error",
        sched("torch", {"disruptionMode": "Always"}),
        None,
    ),
    (
        "scheduling.disruption_mode.legacy_string",
        f"{SCHED}.disruptionMode",
        "warning",
        sched("torch", {"disruptionMode": "PodGroup"}),
        None,
    ),
    (
        "scheduling.disruption_mode.cluster_form",
        f"{SCHED}.disruptionMode",
        "error",
        sched("torch", {"disruptionMode": "PodGroup"}),
        UNION_CRD,
    ),
    (
        "scheduling.disruption_mode.cluster_form",
        f"{SCHED}.replicatedJobs[0].job.disruptionMode",
        "error",
        sched("torch", node_l3({"disruptionMode": {"all": {}}})),
        STRING_CRD,
    ),
    (
        "scheduling.disruption_mode.cluster_form",
        f"{SCHED}.disruptionMode",
        "error",
        sched("torch", {"disruptionMode": "Always"}),
        STRING_CRD,
    ),
    (
        "scheduling.resource_claims.gate_off",
        f"{SCHED}.replicatedJobs[0].job.resourceClaims",
        "warning",
        sched("torch", node_l3({"resourceClaims": CLAIMS})),
        DRA_OFF,
    ),
    (
        "scheduling.priority.mixed",
        SCHED,
        "error",
        sched("qwen", {"schedulingPolicy": {"gang": {}}},
              ("spec.template.spec.replicatedJobs[2].template.spec.template.spec.priorityClassName", "high")),
        None,
    ),
    (
        "scheduling.resource_claims.level",
        f"{SCHED}.resourceClaims",
        "error",
        sched("torch", {"resourceClaims": CLAIMS}),
        None,
    ),
    (
        "scheduling.resource_claims.level",
        f"{SCHED}.replicatedJobs[0].resourceClaims",
        "error",
        sched("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "resourceClaims": CLAIMS}]}),
        None,
    ),
    (
        "scheduling.resource_claims.level",
        f"{SCHED}.replicatedJobs[0].resourceClaims",
        "error",
        sched("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "resourceClaims": CLAIMS, "job": {}}]}),
        COMPOSITE,
    ),
    (
        "scheduling.resource_claims.too_many",
        f"{SCHED}.replicatedJobs[0].job.resourceClaims",
        "error",
        sched("torch", node_l3({"resourceClaims": [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]})),
        None,
    ),
    (
        "scheduling.resource_claims.name_required",
        f"{SCHED}.replicatedJobs[0].job.resourceClaims[0].name",
        "error",
        sched("torch", node_l3({"resourceClaims": [{"resourceClaimName": "x"}]})),
        None,
    ),
    (
        "scheduling.resource_claims.duplicate",
        f"{SCHED}.replicatedJobs[0].job.resourceClaims[1].name",
        "error",
        sched(
            "torch",
            node_l3(
                {"resourceClaims": [{"name": "a", "resourceClaimName": "x"}, {"name": "a", "resourceClaimName": "y"}]}
            ),
        ),
        None,
    ),
    (
        "scheduling.resource_claims.source",
        f"{SCHED}.replicatedJobs[0].job.resourceClaims[0]",
        "error",
        sched(
            "torch",
            node_l3({"resourceClaims": [{"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}]}),
        ),
        None,
    ),
    (
        "scheduling.resource_claims.source",
        f"{SCHED}.replicatedJobs[0].job.resourceClaims[0]",
        "error",
        sched("torch", node_l3({"resourceClaims": [{"name": "a"}]})),
        None,
    ),
    (
        "scheduling.jobset_owned",
        "spec.template.spec.scheduling",
        "error",
        sched("torch", {}, ("spec.template.spec.scheduling", {"schedulingPolicy": {"gang": {}}})),
        None,
    ),
    (
        "scheduling.job_owned",
        f"{RJOBS}[0].template.spec.scheduling",
        "error",
        sched("torch", {}, (f"{RJOBS}[0].template.spec.scheduling", {})),
        None,
    ),
    (
        "scheduling.pod_scheduling_group_owned",
        f"{RJOBS}[0].template.spec.template.spec.schedulingGroup",
        "error",
        sched("torch", {}, (f"{RJOBS}[0].template.spec.template.spec.schedulingGroup", {"podGroupName": "x"})),
        None,
    ),
    ("scheduling.typo", f"{SCHED}.level", "error", sched("torch", {"level": "topology.kubernetes.io/zone"}), None),
    ("scheduling.typo", f"{SCHED}.topologyRequest", "error", sched("torch", {"topologyRequest": "rack"}), None),
    ("scheduling.typo", f"{SCHED}.minMember", "error", sched("torch", {"minMember": 3}), None),
    (
        "scheduling.typo",
        f"{SCHED}.replicatedJobs[0].targetJobs",
        "error",
        sched("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "targetJobs": ["node"]}]}),
        None,
    ),
    (
        "scheduling.typo",
        f"{SCHED}.schedulingConstraints.topology[0].level",
        "error",
        sched("torch", {"schedulingConstraints": {"topology": [{"level": "topology.kubernetes.io/rack"}]}}),
        None,
    ),
    # --- deadlock lint and capacity (warnings)
    (
        "deadlock.gang_waits_for_ready",
        f"{SCHED}.replicatedJobs[0].targetReplicatedJobs",
        "warning",
        sched(
            "deepspeed",
            {"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"], "schedulingPolicy": {"gang": {}}}]},
        ),
        None,
    ),
    (
        "deadlock.gang_waits_for_complete",
        f"{SCHED}.replicatedJobs[0].targetReplicatedJobs",
        "warning",
        sched(
            "qwen", {"replicatedJobs": [{"targetReplicatedJobs": ["dataset-initializer", "model-initializer", "node"]}]}
        ),
        None,
    ),
    (
        "scheduling.level1_gang_per_replicated_job",
        f"{SCHED}.schedulingPolicy",
        "warning",
        sched("qwen", {"schedulingPolicy": {"gang": {}}}),
        None,
    ),
    (
        "capacity.level3_gang_large",
        f"{SCHED}.replicatedJobs[0].job",
        "warning",
        sched(
            "torch",
            node_l3({"schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}}),
            ("spec.mlPolicy.numNodes", 64),
        ),
        None,
    ),
]


def _case_id(case: tuple) -> str:
    return f"{case[0]}@{case[1] or '<root>'}"


@pytest.mark.parametrize(("code", "path", "severity", "build", "options"), CASES, ids=[_case_id(c) for c in CASES])
def test_each_rule_reports_its_code_at_its_path(code, path, severity, build, options):
    report = validate_runtime(build(), options or ValidationOptions())
    matches = [p for p in report.problems if p.code == code and p.path == path]
    assert matches, f"expected {code} at {path!r}; got {[(p.code, p.path) for p in report.problems]}"
    assert {p.severity for p in matches} == {severity}
    for problem in matches:
        assert len(problem.message) > 20


def test_every_documented_rule_has_a_case():
    covered = {case[0] for case in CASES}
    assert sorted(set(policy.RULES) - covered - {"manifest.too_deep"}) == []


def test_every_code_the_validator_emits_is_documented():
    # The validator is a package: its rules live in the modules next to __init__.py.
    source = "\n".join(p.read_text() for p in sorted(Path(policy.__file__).parent.glob("*.py")))
    emitted = set(re.findall(r'self\.(?:error|warn)\(\s*[^,]+,\s*"([a-z_A-Z]+\.[a-z0-9_.]+)"', source))
    assert len(emitted) > 80
    assert emitted <= set(policy.RULES)


@pytest.mark.parametrize("base", ["torch", "deepspeed", "qwen"])
def test_upstream_runtimes_have_no_errors_or_warnings(base):
    assert validate_runtime(upstream(base)).problems == ()


def test_composite_allows_combining_levels():
    scheduling = {
        "schedulingPolicy": {"gang": {}},
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
        "replicatedJobs": [
            {
                "targetReplicatedJobs": ["node"],
                "schedulingPolicy": {"gang": {}},
                "job": {"schedulingPolicy": {"gang": {}}},
            }
        ],
    }
    manifest = with_scheduling("torch", scheduling)
    assert {"scheduling.levels_exclusive", "scheduling.job.excludes_entry_fields"} <= set(
        validate_runtime(manifest).codes
    )
    assert validate_runtime(manifest, COMPOSITE).errors == ()


def test_level3_replicas_limit_follows_options():
    manifest = with_scheduling("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["side"], "job": {}}]})
    manifest["spec"]["template"]["spec"]["replicatedJobs"].append(rjob("side", replicas=3))
    manifest["spec"]["scheduling"]["replicatedJobs"].append({"targetReplicatedJobs": ["node"]})
    assert "scheduling.job.replicas" in validate_runtime(manifest).codes
    assert "scheduling.job.replicas" not in validate_runtime(manifest, ValidationOptions(max_level3_replicas=3)).codes


def test_the_kep_examples_are_valid():
    level2 = {
        "replicatedJobs": [
            {"targetReplicatedJobs": ["dataset-initializer", "model-initializer"], "schedulingPolicy": {"basic": {}}},
            {"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}},
        ]
    }
    assert validate_runtime(with_scheduling("qwen", level2)).problems == ()
    level3 = node_l3(
        {
            "schedulingPolicy": {"gang": {}},
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
            "disruptionMode": {"all": {}},
            "resourceClaims": [{"name": "tpu-slice", "resourceClaimTemplateName": "tpu-slice-template"}],
        }
    )
    assert validate_runtime(with_scheduling("torch", level3)).problems == ()
    level1 = {
        "schedulingPolicy": {"gang": {}},
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
    }
    assert validate_runtime(with_scheduling("torch", level1)).problems == ()


def test_a_basic_entry_over_dependent_jobs_is_not_a_deadlock():
    scheduling = {"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"], "schedulingPolicy": {"basic": {}}}]}
    assert validate_runtime(with_scheduling("deepspeed", scheduling)).problems == ()


def test_messages_name_the_fix():
    report = validate_runtime(with_scheduling("torch", {"schedulingPolicy": {"gang": {"minCount": 4}}}))
    (problem,) = report.errors
    assert problem.message == "minCount is computed from numNodes by the TrainJob controller; remove it"


def test_report_helpers():
    manifest = upstream("torch")
    manifest["spec"]["mlPolicy"]["numNodes"] = 0
    del manifest["metadata"]["labels"]
    report = validate_runtime(manifest)
    assert not report.ok
    assert [p.code for p in report.errors] == ["ml_policy.num_nodes.invalid"]
    assert [p.code for p in report.warnings] == ["metadata.labels.framework_missing"]
    assert report.as_dicts()[0] == {
        "path": "spec.mlPolicy.numNodes",
        "message": report.errors[0].message,
        "severity": "error",
        "code": "ml_policy.num_nodes.invalid",
    }


# --------------------------------------------------------------------------------------- Trainer v2.4.0 rules


def _rjob_named(name: str) -> dict:
    manifest = upstream("torch")
    manifest["spec"]["template"]["spec"]["replicatedJobs"].append(rjob(name))
    return manifest


@pytest.mark.parametrize(
    ("name", "too_long"),
    [("a" * 19, False), ("a" * 20, False), ("a" * 21, True), ("dataset-initializer", False), ("b" * 40, True)],
)
def test_replicated_job_names_are_at_most_20_characters(name, too_long):
    report = validate_runtime(_rjob_named(name))
    found = [p for p in report.errors if p.code == "replicated_job.name.too_long"]
    assert bool(found) is too_long
    if too_long:
        (problem,) = found
        assert problem.path == f"{RJOBS}[1].name"
        assert f'"{name}"' in problem.message and "20" in problem.message and "#4394" in problem.message


def test_a_long_name_that_is_also_no_dns_label_reports_both():
    codes = validate_runtime(_rjob_named("Evaluation_Sidecar_Number_1")).codes
    assert {"replicated_job.name.invalid", "replicated_job.name.too_long"} <= set(codes)


QWEN_NODE_ONLY = {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}}]}


def test_every_untargeted_replicated_job_is_an_error_with_its_fix():
    report = validate_runtime(with_scheduling("qwen", QWEN_NODE_ONLY))
    untargeted = [p for p in report.errors if p.code == "scheduling.untargeted_replicated_job"]
    assert [p.path for p in untargeted] == [f"{SCHED}.replicatedJobs"] * 2
    first, second = (p.message for p in untargeted)
    assert "add an entry `targetReplicatedJobs: [dataset-initializer]` with `schedulingPolicy: {basic: {}}`" in first
    assert "`targetReplicatedJobs: [model-initializer]`" in second


@pytest.mark.parametrize(
    ("scheduling", "options", "untargeted"),
    [
        (QWEN_NODE_ONLY, None, 2),
        (
            {
                "replicatedJobs": [
                    {
                        "targetReplicatedJobs": ["dataset-initializer", "model-initializer"],
                        "schedulingPolicy": {"basic": {}},
                    },
                    *QWEN_NODE_ONLY["replicatedJobs"],
                ]
            },
            None,
            0,
        ),
        # Level 1 only: one group for the whole TrainJob, nothing to target.
        ({"schedulingPolicy": {"basic": {}}}, None, 0),
        # Composite (Alpha 2): the level-1 group does not stand in for a missing entry.
        ({"schedulingPolicy": {"gang": {}}, **QWEN_NODE_ONLY}, COMPOSITE, 2),
    ],
    ids=["node-only", "kep-story-3", "level1", "composite"],
)
def test_coverage_is_required_exactly_when_replicated_jobs_are_used(scheduling, options, untargeted):
    report = validate_runtime(with_scheduling("qwen", scheduling), options or ValidationOptions())
    assert report.codes.count("scheduling.untargeted_replicated_job") == untargeted


@pytest.mark.parametrize(
    ("scheduling", "path", "where"),
    [
        ({"resourceClaims": CLAIMS}, f"{SCHED}.resourceClaims", "spec.scheduling"),
        (
            {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "resourceClaims": CLAIMS}]},
            f"{SCHED}.replicatedJobs[0].resourceClaims",
            f"the entry {SCHED}.replicatedJobs[0]",
        ),
    ],
    ids=["level1", "level2"],
)
def test_resource_claims_outside_job_say_where_they_belong(scheduling, path, where):
    (problem,) = validate_runtime(with_scheduling("torch", scheduling)).errors
    assert (problem.code, problem.path) == ("scheduling.resource_claims.level", path)
    assert f"not a field of {where}" in problem.message
    assert "spec.scheduling.replicatedJobs[].job.resourceClaims" in problem.message


def test_resource_claims_under_job_are_valid():
    assert validate_runtime(with_scheduling("torch", node_l3({"resourceClaims": CLAIMS}))).problems == ()


@pytest.mark.parametrize(
    ("scheduling", "warnings"),
    [
        ({"schedulingPolicy": {"gang": {}}, "replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}, [SCHED]),
        (
            {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "disruptionMode": {"all": {}}, "job": {}}]},
            [f"{SCHED}.replicatedJobs[0]"],
        ),
        (node_l3({}), []),
    ],
    ids=["level1-around-level2", "entry-around-job", "level3-only"],
)
def test_composite_is_labelled_alpha_2_when_its_setting_allows_it(scheduling, warnings):
    report = validate_runtime(with_scheduling("torch", scheduling), COMPOSITE)
    assert report.errors == ()
    found = [p for p in report.warnings if p.code == "scheduling.composite.alpha2"]
    assert [p.path for p in found] == warnings
    assert all("Alpha 2, not in Trainer v2.4.0" in p.message for p in found)


def test_without_its_setting_composite_is_an_error_naming_alpha_2():
    scheduling = {"schedulingPolicy": {"gang": {}}, "replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}
    (problem,) = validate_runtime(with_scheduling("torch", scheduling)).errors
    assert problem.code == "scheduling.levels_exclusive"
    assert "Alpha 2, not in Trainer v2.4.0" in problem.message and "keep one level" in problem.message


@pytest.mark.parametrize(
    ("mode", "form", "expected"),
    [
        ({"all": {}}, "", ()),
        ("PodGroup", "", ("scheduling.disruption_mode.legacy_string",)),
        ({"single": {}}, "union", ()),
        ("Pod", "union", ("scheduling.disruption_mode.cluster_form",)),
        ("PodGroup", "string", ()),
        ("Pod", "string", ()),
        ({"all": {}}, "string", ("scheduling.disruption_mode.cluster_form",)),
        ("Sometimes", "string", ("scheduling.disruption_mode.cluster_form",)),
    ],
)
def test_disruption_mode_follows_the_form_the_installed_crd_embeds(mode, form, expected):
    manifest = with_scheduling("torch", node_l3({"disruptionMode": mode}))
    report = validate_runtime(manifest, ValidationOptions(disruption_mode_form=form))
    assert report.codes == expected


@pytest.mark.parametrize(
    ("mode", "fix"), [({"all": {}}, "write 'PodGroup'"), ({"single": {}}, "write 'Pod'"), ("x", "'Pod' or 'PodGroup'")]
)
def test_a_string_crd_names_the_string_to_write(mode, fix):
    (problem,) = validate_runtime(with_scheduling("torch", {"disruptionMode": mode}), STRING_CRD).errors
    assert fix in problem.message and "v1alpha2" in problem.message


@pytest.mark.parametrize(("gate", "warned"), [(None, False), (True, False), (False, True)])
def test_topology_keys_are_flagged_only_when_the_gate_is_known_off(gate, warned):
    manifest = with_scheduling("torch", {"schedulingConstraints": ZONE})
    report = validate_runtime(manifest, ValidationOptions(topology_gate=gate))
    assert ("scheduling.topology.gate_off" in report.codes) is warned
    if warned:
        (problem,) = report.warnings
        assert problem.message.startswith('this "topology.kubernetes.io/zone" constraint is ignored by this cluster')
        assert "TopologyAwareWorkloadScheduling=true" in problem.message


def test_a_policy_without_topology_gets_no_gate_warning():
    manifest = with_scheduling("torch", {"schedulingPolicy": {"gang": {}}})
    assert validate_runtime(manifest, GATE_OFF).problems == ()


@pytest.mark.parametrize(
    ("build", "importable"),
    [
        (lambda: _rjob_named("evaluation-sidecar-01"), True),
        (lambda: with_scheduling("qwen", QWEN_NODE_ONLY), True),
        (lambda: with_scheduling("torch", {"resourceClaims": CLAIMS}), True),
        (lambda: with_scheduling("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["nope"]}]}), False),
        (lambda: put(_rjob_named("evaluation-sidecar-01"), "spec.mlPolicy.numNodes", 0), False),
    ],
    ids=["long-name", "untargeted", "claims-level1", "unknown-target", "long-name-and-bad-num-nodes"],
)
def test_only_the_v24_rules_let_an_import_store_a_runtime_with_errors(build, importable):
    report = validate_runtime(build())
    assert not report.ok
    assert report.importable is importable
    assert {p.code for p in report.import_blocking_errors} <= {p.code for p in report.errors}
    assert bool(report.import_blocking_errors) is not importable


def test_a_valid_runtime_is_importable():
    report = validate_runtime(upstream("qwen"))
    assert report.ok and report.importable and report.import_blocking_errors == ()


@pytest.mark.parametrize(
    ("base", "scheduling", "deadlocks"),
    [
        ("deepspeed", {"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"]}]}, 1),
        ("qwen", {"schedulingPolicy": {"gang": {}}}, 0),  # KEP-3015: one gang per ReplicatedJob, no deadlock
        (
            "qwen",
            {"replicatedJobs": [{"targetReplicatedJobs": ["dataset-initializer", "model-initializer", "node"]}]},
            2,
        ),
        (
            "deepspeed",
            {"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"], "schedulingPolicy": {"basic": {}}}]},
            0,
        ),
        ("torch", {"schedulingPolicy": {"gang": {}}}, 0),
    ],
    ids=["launcher-node-gang", "level1-sequenced", "initializers-in-trainer-gang", "basic", "no-dependsOn"],
)
def test_the_report_names_gangs_that_never_reach_min_count(base, scheduling, deadlocks):
    report = validate_runtime(with_scheduling(base, scheduling))
    assert len(report.startup_deadlocks) == deadlocks
    assert all(p.severity == "warning" for p in report.startup_deadlocks)


V24_CODES = [
    "replicated_job.name.too_long",
    "scheduling.untargeted_replicated_job",
    "scheduling.resource_claims.level",
    "scheduling.composite.alpha2",
    "scheduling.disruption_mode.cluster_form",
    "scheduling.topology.gate_off",
]
FIX_WORDS = ("rename", "add an entry", "move", "keep one level", "write", "enable")


@pytest.mark.parametrize("code", V24_CODES)
def test_each_v24_rule_message_names_the_field_and_the_fix(code):
    cases = [case for case in CASES if case[0] == code]
    assert cases
    for _, path, _, build, options in cases:
        report = validate_runtime(build(), options or ValidationOptions())
        for problem in (p for p in report.problems if p.code == code):
            assert problem.path == path
            assert any(word in problem.message for word in FIX_WORDS), problem.message


def test_mixed_priorities_name_the_replicated_jobs_and_the_fix():
    manifest = with_scheduling("qwen", {"schedulingPolicy": {"gang": {}}})
    put(manifest, "spec.template.spec.replicatedJobs[2].template.spec.template.spec.priorityClassName", "high")
    (problem,) = [p for p in validate_runtime(manifest).problems if p.code == "scheduling.priority.mixed"]
    assert "dataset-initializer, model-initializer set none" in problem.message
    assert "node use high" in problem.message and "detected multiple priority configurations" in problem.message
    for item in manifest["spec"]["template"]["spec"]["replicatedJobs"]:
        item["template"]["spec"]["template"]["spec"]["priorityClassName"] = "high"
    assert not [p for p in validate_runtime(manifest).problems if p.code == "scheduling.priority.mixed"]


def test_mixed_priorities_without_spec_scheduling_create_no_workload_and_are_fine():
    manifest = upstream("qwen")
    put(manifest, "spec.template.spec.replicatedJobs[2].template.spec.template.spec.priorityClassName", "high")
    assert not [p for p in validate_runtime(manifest).problems if p.code == "scheduling.priority.mixed"]


def test_claims_are_not_warned_about_when_the_gate_is_on_or_unknown():
    manifest = with_scheduling("torch", node_l3({"resourceClaims": CLAIMS}))
    for options in (ValidationOptions(), ValidationOptions(dra_claims_gate=True)):
        assert not [p for p in validate_runtime(manifest, options).problems
                    if p.code == "scheduling.resource_claims.gate_off"]


def test_a_coscheduling_timeout_of_zero_means_the_default():
    from runtimes.domain.policy.summary import scheduling_summary

    manifest = m("torch", ("spec.podGroupPolicy", {"coscheduling": {"scheduleTimeoutSeconds": 0}}))()
    assert not [p for p in validate_runtime(manifest).problems if p.code == "pod_group_policy.schedule_timeout"]
    assert "default timeout" in scheduling_summary(manifest).text
