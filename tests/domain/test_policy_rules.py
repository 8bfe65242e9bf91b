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
        m("torch", ("spec.podGroupPolicy", {"coscheduling": {"scheduleTimeoutSeconds": 0}})),
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
        "warning",
        sched("qwen", {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}),
        None,
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
        "scheduling.resource_claims.too_many",
        f"{SCHED}.resourceClaims",
        "error",
        sched("torch", {"resourceClaims": [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]}),
        None,
    ),
    (
        "scheduling.resource_claims.name_required",
        f"{SCHED}.resourceClaims[0].name",
        "error",
        sched("torch", {"resourceClaims": [{"resourceClaimName": "x"}]}),
        None,
    ),
    (
        "scheduling.resource_claims.duplicate",
        f"{SCHED}.resourceClaims[1].name",
        "error",
        sched(
            "torch",
            {"resourceClaims": [{"name": "a", "resourceClaimName": "x"}, {"name": "a", "resourceClaimName": "y"}]},
        ),
        None,
    ),
    (
        "scheduling.resource_claims.source",
        f"{SCHED}.resourceClaims[0]",
        "error",
        sched("torch", {"resourceClaims": [{"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}]}),
        None,
    ),
    (
        "scheduling.resource_claims.source",
        f"{SCHED}.resourceClaims[0]",
        "error",
        sched("torch", {"resourceClaims": [{"name": "a"}]}),
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
        "deadlock.level1_gang_sequenced",
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
