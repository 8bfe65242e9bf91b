"""Golden tests: runtime + numNodes → pod counts, Workload and PodGroups (docs/reference/kubernetes-apis.md §1.5,
§2, §4.5)."""

from __future__ import annotations

import contextlib
import copy
import json

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtimes.domain.expansion import (
    COMPOSITE_POD_GROUP,
    ExpansionError,
    expand,
    pod_group_name_for,
    short_hash,
    workload_name_for,
)
from tests.fixture_paths import REFERENCE_RUNTIMES

REFERENCE = REFERENCE_RUNTIMES
ZONE = "topology.kubernetes.io/zone"
BLOCK = "cloud.provider.com/topology-block"
RACK = "topology.kubernetes.io/rack"


def _container(name: str, resources: dict | None = None) -> dict:
    container = {"name": name, "image": "example"}
    if resources:
        container["resources"] = resources
    return container


def _rjob(name: str, *, ancestor: str | None = None, container: str = "node", replicas: int | None = None,
          parallelism: int | None = None, depends_on: list[str] | None = None, resources: dict | None = None) -> dict:
    job_spec: dict = {"template": {"spec": {"containers": [_container(container, resources)]}}}
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    item: dict = {"name": name, "template": {"spec": job_spec}}
    if ancestor:
        item["template"]["metadata"] = {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}}
    if replicas is not None:
        item["replicas"] = replicas
    if depends_on:
        item["dependsOn"] = [{"name": dep, "status": "Ready"} for dep in depends_on]
    return item


def _runtime(rjobs: list[dict], *, ml_policy: dict | None = None, scheduling: dict | None = None) -> dict:
    spec: dict = {"mlPolicy": ml_policy or {"numNodes": 1, "torch": {}},
                  "template": {"spec": {"replicatedJobs": rjobs}}}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "rt"}, "spec": spec}


def _reference(name: str) -> dict:
    return yaml.safe_load((REFERENCE / name).read_text())


def _torch_gang() -> dict:
    runtime = _torch()
    runtime["spec"]["scheduling"] = {"replicatedJobs": [
        {"targetReplicatedJobs": [r["name"]]} for r in runtime["spec"]["template"]["spec"]["replicatedJobs"]]}
    return runtime


def _torch() -> dict:
    return _runtime([_rjob("node", ancestor="trainer")])


def _mpi(launcher_as_node: bool, *, depends: bool = False) -> dict:
    return _runtime(
        [_rjob("launcher", ancestor="trainer", depends_on=["node"] if depends else None), _rjob("node")],
        ml_policy={"numNodes": 1, "mpi": {"runLauncherAsNode": launcher_as_node}},
    )


def _torchtune() -> dict:
    return _runtime([
        _rjob("dataset-initializer", ancestor="dataset-initializer", container="dataset-initializer"),
        _rjob("model-initializer", ancestor="model-initializer", container="model-initializer"),
        _rjob("node", ancestor="trainer", depends_on=["dataset-initializer", "model-initializer"],
              resources={"limits": {"nvidia.com/gpu": 2}}),
    ])


GPU4 = {"requests": {"nvidia.com/gpu": 4}}

# -- §1.5 pod counts ------------------------------------------------------------------------------------------


def test_it_expands_the_worked_example_torch_100_nodes():
    expansion = expand(_reference("torch_distributed.yaml"), trainjob_name="my-job", num_nodes=100,
                       resources_per_node=GPU4)
    assert [(p.replicated_job, p.count) for p in expansion.pod_sets] == [("node", 100)]
    assert expansion.total_pods == 100
    assert expansion.total_resources() == {"nvidia.com/gpu": "400"}
    assert expansion.workload_name is None
    assert expansion.workload_manifest() is None
    assert expansion.podgroup_manifests() == []
    assert expansion.pod_group_for("node", 0) is None


def test_it_expands_deepspeed_launcher_as_node_to_99_plus_1():
    expansion = expand(_reference("deepspeed_distributed.yaml"), trainjob_name="my-job", num_nodes=100,
                       resources_per_node=GPU4)
    counts = {p.replicated_job: p.count for p in expansion.pod_sets}
    assert counts == {"node": 99, "launcher": 1}
    assert expansion.total_pods == 100
    assert expansion.total_resources() == {"nvidia.com/gpu": "400"}


def test_it_expands_mpi_without_launcher_as_node_to_100_plus_1():
    expansion = expand(_mpi(False), trainjob_name="my-job", num_nodes=100)
    assert {p.replicated_job: p.count for p in expansion.pod_sets} == {"launcher": 1, "node": 100}
    assert expansion.total_pods == 101


@pytest.mark.parametrize(("num_nodes", "node_pods"), [(1, 1), (2, 1), (3, 2)])
def test_it_keeps_at_least_one_mpi_node_with_launcher_as_node(num_nodes, node_pods):
    expansion = expand(_mpi(True), trainjob_name="j", num_nodes=num_nodes)
    assert expansion.pod_set("node").count == node_pods


def test_it_uses_the_runtime_num_nodes_when_the_trainjob_sets_none():
    runtime = _torch()
    runtime["spec"]["mlPolicy"]["numNodes"] = 7
    assert expand(runtime, trainjob_name="j").total_pods == 7
    del runtime["spec"]["mlPolicy"]["numNodes"]
    assert expand(runtime, trainjob_name="j").total_pods == 1


def test_it_counts_parallelism_times_replicas_for_non_trainer_jobs():
    runtime = _runtime([_rjob("node", ancestor="trainer"), _rjob("ps", replicas=3, parallelism=2)])
    expansion = expand(runtime, trainjob_name="j", num_nodes=4)
    assert expansion.pod_set("ps").count == 6
    assert expansion.total_pods == 10


def test_it_counts_initializers_and_takes_gpus_from_limits():
    expansion = expand(_reference("qwen2_5_1.5B.yaml"), trainjob_name="tune", num_nodes=2)
    assert {p.replicated_job: p.count for p in expansion.pod_sets} == {
        "dataset-initializer": 1, "model-initializer": 1, "node": 2}
    assert expansion.pod_set("node").resources_per_pod == {"nvidia.com/gpu": "2"}
    assert expansion.total_resources() == {"nvidia.com/gpu": "4"}


def test_resources_per_node_is_merged_into_the_trainer_container_per_resource_name_as_upstream_does():
    # kubeflow/trainer #3602 (MergeResourceRequirements): limits and requests merge per resource name.
    runtime = _runtime([_rjob("node", ancestor="trainer", resources={"requests": {"cpu": "16", "memory": "64Gi"},
                                                                     "limits": {"nvidia.com/gpu": 8}})])
    assert expand(runtime, trainjob_name="j", num_nodes=3).pod_set("node").resources_per_pod == {
        "nvidia.com/gpu": "8", "cpu": "16", "memory": "64Gi"}
    expansion = expand(runtime, trainjob_name="j", num_nodes=3,
                       resources_per_node={"requests": {"nvidia.com/gpu": "4", "cpu": "8"}})
    assert expansion.pod_set("node").resources_per_pod == {"nvidia.com/gpu": "4", "cpu": "8", "memory": "64Gi"}
    assert expansion.total_resources() == {"cpu": "24", "memory": "192Gi", "nvidia.com/gpu": "12"}
    flat = expand(runtime, trainjob_name="j", num_nodes=3, resources_per_node={"nvidia.com/gpu": 2})
    assert flat.pod_set("node").resources_per_pod == {"nvidia.com/gpu": "2", "cpu": "16", "memory": "64Gi"}


def test_the_issue_example_merges_gpus_into_cpu_and_memory():
    runtime = _runtime([_rjob("node", ancestor="trainer", resources={"requests": {"cpu": "4", "memory": "16Gi"}})])
    merged = expand(runtime, trainjob_name="j", resources_per_node={"nvidia.com/gpu": "8"})
    assert merged.pod_set("node").resources_per_pod == {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "8"}


def test_a_trainer_without_a_node_container_ignores_resources_per_node_with_a_warning():
    runtime = _runtime([_rjob("node", ancestor="trainer", resources={"requests": {"cpu": "4"}})])
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"][0]["name"] = "trainer"
    expansion = expand(runtime, trainjob_name="j", resources_per_node={"nvidia.com/gpu": "8"})
    assert expansion.pod_set("node").resources_per_pod == {"cpu": "4"}
    assert any("no container named 'node'" in w for w in expansion.warnings)


def test_it_applies_resources_per_node_to_the_mpi_node_job_only_with_launcher_as_node():
    expansion = expand(_mpi(True), trainjob_name="j", num_nodes=4, resources_per_node=GPU4)
    assert expansion.pod_set("node").resources_per_pod == {"nvidia.com/gpu": "4"}
    assert expansion.pod_set("launcher").resources_per_pod == {"nvidia.com/gpu": "4"}
    expansion = expand(_mpi(False), trainjob_name="j", num_nodes=4, resources_per_node=GPU4)
    assert expansion.pod_set("node").resources_per_pod == {}
    assert expansion.pod_set("launcher").resources_per_pod == {"nvidia.com/gpu": "4"}


# -- §2 KEP stories and §4.5 level table ---------------------------------------------------------------------


def test_story_1_level_1_zone_gang_for_the_whole_trainjob():
    runtime = _torch()
    runtime["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {}},
                                     "schedulingConstraints": {"topology": [{"key": ZONE}]},
                                     "disruptionMode": {"all": {}}}
    expansion = expand(runtime, trainjob_name="my-job", namespace="team-a", trainjob_uid="uid-1", num_nodes=100,
                       resources_per_node=GPU4)
    (group,) = expansion.pod_groups
    workload = f"my-job-{short_hash('team-a/my-job')}"
    assert expansion.workload_name == workload
    assert (group.level, group.template_name, group.policy, group.min_count, group.topology_key) == (
        1, "my-job", "gang", 100, ZONE)
    assert group.name == f"{workload}-{short_hash(f'team-a/{workload}/my-job')}"
    assert group.replicated_jobs == ("node",)
    assert group.disruption_mode == "all"
    assert expansion.pod_group_for("node", 0) == group.name
    assert expansion.workload_manifest() == {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": workload,
            "namespace": "team-a",
            "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                 "name": "my-job", "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "controllerRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainJob", "name": "my-job"},
            "podGroupTemplates": [{"name": "my-job", "schedulingPolicy": {"gang": {"minCount": 100}},
                                   "schedulingConstraints": {"topology": [{"key": ZONE}]},
                                   "disruptionMode": {"all": {}}}],
        },
    }
    (manifest,) = expansion.podgroup_manifests()
    assert manifest["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert manifest["spec"]["workloadRef"] == {"workloadName": workload, "templateName": "my-job"}
    assert manifest["spec"]["schedulingPolicy"] == {"gang": {"minCount": 100}}
    assert manifest["spec"]["disruptionMode"] == {"all": {}}
    owners = manifest["metadata"]["ownerReferences"]
    assert owners[0]["kind"] == "TrainJob" and owners[0]["controller"] is True and owners[0]["uid"] == "uid-1"
    assert owners[1]["kind"] == "Workload" and owners[1]["name"] == workload and "controller" not in owners[1]


def test_it_defaults_an_empty_scheduling_to_a_level_1_gang():
    runtime = _torch()
    runtime["spec"]["scheduling"] = {}
    (group,) = expand(runtime, trainjob_name="j", num_nodes=8).pod_groups
    assert (group.level, group.policy, group.min_count, group.topology_key) == (1, "gang", 8, None)


def test_story_2_level_2_launcher_and_workers_gang_min_count_51():
    runtime = _mpi(False)
    runtime["spec"]["scheduling"] = {"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"],
                                                         "schedulingPolicy": {"gang": {}}}]}
    expansion = expand(runtime, trainjob_name="mpi-job", num_nodes=50)
    (group,) = expansion.pod_groups
    assert (group.level, group.template_name, group.min_count) == (2, "launcher-node", 51)
    assert group.name.startswith(f"{expansion.workload_name}-launcher-node-")
    assert expansion.pod_group_for("launcher", 0) == expansion.pod_group_for("node", 0) == group.name
    assert expansion.warnings == ()


def test_story_2_warns_when_the_gang_includes_a_job_it_waits_for():
    runtime = _mpi(True, depends=True)
    runtime["spec"]["scheduling"] = {"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"]}]}
    expansion = expand(runtime, trainjob_name="ds", num_nodes=100)
    assert expansion.pod_groups[0].min_count == 100
    assert any("depends on" in warning for warning in expansion.warnings)


def test_story_3_level_2_basic_initializers_and_gang_trainer():
    runtime = _torchtune()
    runtime["spec"]["scheduling"] = {"replicatedJobs": [
        {"targetReplicatedJobs": ["dataset-initializer", "model-initializer"], "schedulingPolicy": {"basic": {}}},
        {"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}},
    ]}
    expansion = expand(runtime, trainjob_name="tune", num_nodes=16)
    init, node = expansion.pod_groups
    assert (init.level, init.template_name, init.policy, init.min_count, init.pod_count) == (
        2, "dataset-initializer-model-initializer", "basic", None, 2)
    assert (node.level, node.template_name, node.policy, node.min_count) == (2, "node", "gang", 16)
    templates = expansion.workload_manifest()["spec"]["podGroupTemplates"]
    assert templates == [
        {"name": "dataset-initializer-model-initializer", "schedulingPolicy": {"basic": {}}},
        {"name": "node", "schedulingPolicy": {"gang": {"minCount": 16}}},
    ]
    assert expansion.pod_group_for("model-initializer", 0) == init.name
    assert expansion.warnings == ()


def test_story_3_note_level_1_gang_is_impossible_with_depends_on_so_it_falls_back_per_job():
    runtime = _torchtune()
    runtime["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {}}}
    expansion = expand(runtime, trainjob_name="tune", num_nodes=4)
    assert [(g.level, g.template_name, g.min_count) for g in expansion.pod_groups] == [
        (2, "dataset-initializer", 1), (2, "model-initializer", 1), (2, "node", 4)]
    assert any("sequenced startup" in warning for warning in expansion.warnings)


def test_story_4_level_3_each_job_in_a_rack():
    runtime = _torch()
    runtime["spec"]["scheduling"] = {"replicatedJobs": [{
        "targetReplicatedJobs": ["node"],
        "job": {"schedulingPolicy": {"gang": {}}, "schedulingConstraints": {"topology": [{"key": RACK}]},
                "disruptionMode": {"all": {}}},
    }]}
    expansion = expand(runtime, trainjob_name="my-job", num_nodes=100)
    (group,) = expansion.pod_groups
    assert (group.level, group.template_name, group.job_index, group.min_count, group.topology_key) == (
        3, "node-0", 0, 100, RACK)
    assert group.name.startswith(f"{expansion.workload_name}-node-0-")
    assert expansion.pod_group_for("node", 0) == group.name


def test_level_3_creates_one_group_per_job_replica():
    runtime = _runtime([_rjob("node", ancestor="trainer"), _rjob("worker", replicas=3, parallelism=4)])
    runtime["spec"]["scheduling"] = {"replicatedJobs": [
        {"targetReplicatedJobs": ["worker"], "job": {"schedulingConstraints": {"topology": [{"key": RACK}]}}}]}
    expansion = expand(runtime, trainjob_name="j", num_nodes=2)
    assert [(g.template_name, g.job_index, g.min_count) for g in expansion.pod_groups] == [
        ("worker-0", 0, 4), ("worker-1", 1, 4), ("worker-2", 2, 4)]
    assert expansion.pod_group_for("worker", 2) == expansion.pod_groups[2].name
    assert expansion.pod_group_for("node", 0) is None
    assert any("replicas > 1" in warning for warning in expansion.warnings)
    assert any("in no PodGroup" in warning for warning in expansion.warnings)


@pytest.mark.parametrize(("scheduling", "level", "key", "min_count"), [
    ({"schedulingConstraints": {"topology": [{"key": ZONE}]}}, 1, ZONE, 65),
    ({"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"],
                          "schedulingConstraints": {"topology": [{"key": BLOCK}]}}]}, 2, BLOCK, 65),
    ({"replicatedJobs": [{"targetReplicatedJobs": ["node"],
                          "job": {"schedulingConstraints": {"topology": [{"key": RACK}]}}}]}, 3, RACK, 64),
])
def test_level_table_of_section_4_5(scheduling, level, key, min_count):
    runtime = _mpi(False)
    runtime["spec"]["scheduling"] = scheduling
    expansion = expand(runtime, trainjob_name="job", num_nodes=64)
    leaves = expansion.leaf_groups
    assert [(g.level, g.topology_key, g.min_count) for g in leaves][-1] == (level, key, min_count)
    assert len(expansion.workload_manifest()["spec"]["podGroupTemplates"]) == len(leaves)


def test_composite_hierarchy_zone_block_rack():
    runtime = _runtime([_rjob("node", ancestor="trainer"), _rjob("worker", replicas=2, parallelism=8)])
    runtime["spec"]["scheduling"] = {
        "schedulingConstraints": {"topology": [{"key": ZONE}]},
        "replicatedJobs": [
            {"targetReplicatedJobs": ["node"], "schedulingConstraints": {"topology": [{"key": BLOCK}]}},
            {"targetReplicatedJobs": ["worker"], "schedulingConstraints": {"topology": [{"key": BLOCK}]},
             "job": {"schedulingConstraints": {"topology": [{"key": RACK}]}}},
        ],
    }
    expansion = expand(runtime, trainjob_name="big", num_nodes=4, composite=True)
    assert expansion.composite and expansion.api_version == "scheduling.k8s.io/v1alpha3"
    root, node, worker, w0, w1 = expansion.pod_groups
    assert (root.kind, root.level, root.parent, root.min_group_count, root.topology_key) == (
        COMPOSITE_POD_GROUP, 1, None, 2, ZONE)
    assert (node.kind, node.level, node.parent, node.min_count) == ("PodGroup", 2, root.name, 4)
    assert (worker.kind, worker.parent, worker.min_group_count, worker.topology_key) == (
        COMPOSITE_POD_GROUP, root.name, 2, BLOCK)
    assert [(g.template_name, g.parent, g.min_count, g.topology_key) for g in (w0, w1)] == [
        ("worker-0", worker.name, 8, RACK), ("worker-1", worker.name, 8, RACK)]
    manifests = expansion.podgroup_manifests()
    assert [m["kind"] for m in manifests] == ["CompositePodGroup"] * 2 + ["PodGroup"] * 3
    assert manifests[0]["spec"]["schedulingPolicy"] == {"gang": {"minGroupCount": 2}}
    assert "parentCompositePodGroupName" not in manifests[0]["spec"]
    assert manifests[1]["spec"]["parentCompositePodGroupName"] == root.name
    assert manifests[4]["spec"]["parentCompositePodGroupName"] == worker.name
    (tree,) = expansion.workload_manifest()["spec"]["compositePodGroupTemplates"]
    assert tree["name"] == "big"
    assert [t["name"] for t in tree["podGroupTemplates"]] == ["node"]
    assert [t["name"] for t in tree["compositePodGroupTemplates"][0]["podGroupTemplates"]] == [
        "worker-0", "worker-1"]
    assert expansion.pod_group_for("worker", 1) == w1.name


# -- 1.36 form ----------------------------------------------------------------------------------------------


def test_v1alpha2_uses_template_ref_and_string_disruption_mode():
    runtime = _torch()
    runtime["spec"]["scheduling"] = {"disruptionMode": {"single": {}}}
    expansion = expand(runtime, trainjob_name="j", num_nodes=2, api_version="scheduling.k8s.io/v1alpha2")
    (manifest,) = expansion.podgroup_manifests()
    assert manifest["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert manifest["spec"]["podGroupTemplateRef"] == {
        "workload": {"workloadName": expansion.workload_name, "podGroupTemplateName": "j"}}
    assert "workloadRef" not in manifest["spec"]
    assert manifest["spec"]["disruptionMode"] == "Pod"
    assert expansion.workload_manifest()["spec"]["podGroupTemplates"][0]["disruptionMode"] == "Pod"


def test_it_accepts_1_36_string_disruption_modes_in_the_runtime():
    runtime = _torch()
    runtime["spec"]["scheduling"] = {"disruptionMode": "PodGroup"}
    assert expand(runtime, trainjob_name="j").pod_groups[0].disruption_mode == "all"


# -- naming -------------------------------------------------------------------------------------------------


def test_names_are_deterministic_and_at_most_63_characters():
    long_name = "a" * 63
    workload = workload_name_for("ns", long_name)
    name = pod_group_name_for("ns", workload, "launcher-node", level_one=False)
    assert len(name) <= 63 and name == pod_group_name_for("ns", workload, "launcher-node", level_one=False)
    assert name != pod_group_name_for("ns", workload, "launcher-nodf", level_one=False)
    runtime = _runtime([_rjob("x" * 40), _rjob("y" * 40)])
    runtime["spec"]["scheduling"] = {"replicatedJobs": [{"targetReplicatedJobs": ["x" * 40, "y" * 40]}]}
    (group,) = expand(runtime, trainjob_name=long_name).pod_groups
    assert len(group.template_name) <= 63 and len(group.name) <= 63


def test_the_expansion_is_json_serialisable():
    runtime = _torchtune()
    runtime["spec"]["scheduling"] = {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}
    expansion = expand(runtime, trainjob_name="j", num_nodes=3)
    json.dumps([expansion.to_dict(), expansion.workload_manifest(), expansion.podgroup_manifests()])
    assert expansion.to_dict()["totalPods"] == 5


# -- errors -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mutate", "path"), [
    (lambda r: r["spec"]["template"]["spec"].update(replicatedJobs=[]), "spec.template.spec.replicatedJobs"),
    (lambda r: r["spec"]["template"].update(spec="nope"), "spec.template.spec"),
    (lambda r: r["spec"]["template"]["spec"]["replicatedJobs"].append(7), "spec.template.spec.replicatedJobs[1]"),
    (lambda r: r["spec"]["template"]["spec"]["replicatedJobs"][0].update(name=None),
     "spec.template.spec.replicatedJobs[0].name"),
    (lambda r: r["spec"]["template"]["spec"]["replicatedJobs"][0].update(replicas="x"),
     "spec.template.spec.replicatedJobs[0].replicas"),
    (lambda r: r["spec"]["mlPolicy"].update(numNodes=0), "spec.mlPolicy.numNodes"),
    (lambda r: r["spec"].update(scheduling={"replicatedJobs": [{"targetReplicatedJobs": ["nope"]}]}),
     "spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]"),
    (lambda r: r["spec"].update(scheduling={"replicatedJobs": [{"targetReplicatedJobs": ["node"]},
                                                               {"targetReplicatedJobs": ["node"]}]}),
     "spec.scheduling.replicatedJobs[1].targetReplicatedJobs[0]"),
    (lambda r: r["spec"].update(scheduling={"schedulingPolicy": {"gang": {"minCount": 3}}}),
     "spec.scheduling.schedulingPolicy.gang.minCount"),
    (lambda r: r["spec"].update(scheduling={"schedulingPolicy": {"gang": {}},
                                            "replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}),
     "spec.scheduling"),
    (lambda r: r["spec"].update(scheduling={"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}}),
     "spec.scheduling.schedulingConstraints.topology"),
    (lambda r: r["spec"].update(scheduling={"disruptionMode": "sometimes"}), "spec.scheduling.disruptionMode"),
    (lambda r: r["spec"].update(scheduling={}, podGroupPolicy={"coscheduling": {}}), "spec.podGroupPolicy"),
    (lambda r: r["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"][0].update(resources={"requests": {"nvidia.com/gpu": "4Gi"}}),
     "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.nvidia.com/gpu"),
])
def test_it_rejects_malformed_runtimes_with_the_field_path(mutate, path):
    runtime = _torch()
    mutate(runtime)
    with pytest.raises(ExpansionError) as error:
        expand(runtime, trainjob_name="j")
    assert error.value.path == path
    assert error.value.message


@pytest.mark.parametrize(("kwargs", "path"), [
    ({"num_nodes": 0}, "trainer.numNodes"),
    ({"num_nodes": 100_001}, "trainer.numNodes"),
    ({"num_nodes": True}, "trainer.numNodes"),
    ({"resources_per_node": {"requests": {"nvidia.com/gpu": "abc"}}},
     "trainer.resourcesPerNode.requests.nvidia.com/gpu"),
    ({"api_version": "scheduling.k8s.io/v9"}, "apiVersion"),
])
def test_it_rejects_bad_trainjob_inputs(kwargs, path):
    with pytest.raises(ExpansionError) as error:
        expand(_torch(), trainjob_name="j", **kwargs)
    assert error.value.path == path


def test_it_rejects_more_than_eight_templates():
    runtime = _runtime([_rjob("node", ancestor="trainer"), _rjob("w", replicas=9)])
    runtime["spec"]["scheduling"] = {"replicatedJobs": [{"targetReplicatedJobs": ["w"], "job": {}}]}
    with pytest.raises(ExpansionError, match="at most 8"):
        expand(runtime, trainjob_name="j")


def test_it_rejects_composite_on_1_36():
    runtime = _torch()
    runtime["spec"]["scheduling"] = {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}
    with pytest.raises(ExpansionError, match="v1alpha2"):
        expand(runtime, trainjob_name="j", composite=True, api_version="scheduling.k8s.io/v1alpha2")


def test_it_never_mutates_the_runtime():
    runtime = _torchtune()
    runtime["spec"]["scheduling"] = {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "job": {}}]}
    before = copy.deepcopy(runtime)
    expand(runtime, trainjob_name="j", num_nodes=5, resources_per_node=GPU4)
    assert runtime == before


# -- robustness: arbitrary input raises ExpansionError, never KeyError/TypeError ------------------------------


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 200) | st.text(max_size=6) | st.sampled_from(
        ["node", "launcher", "trainer", "4", "64Gi", "abc", "gang", "basic", ZONE]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["spec", "template", "replicatedJobs", "name", "replicas", "parallelism", "scheduling",
                         "targetReplicatedJobs", "job", "schedulingPolicy", "gang", "basic", "minCount",
                         "schedulingConstraints", "topology", "key", "disruptionMode", "mlPolicy", "numNodes", "mpi",
                         "runLauncherAsNode", "containers", "resources", "requests", "limits", "metadata", "labels",
                         "dependsOn", "nvidia.com/gpu", "cpu"]),
        children, max_size=4),
    max_leaves=25,
)
_PATHS = [(), ("spec",), ("spec", "template"), ("spec", "template", "spec"), ("spec", "mlPolicy"),
          ("spec", "scheduling")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_json, where=st.sampled_from(_PATHS), key=st.sampled_from(
    ["replicatedJobs", "scheduling", "mlPolicy", "spec", "numNodes", "replicatedJobs", "template"]),
    composite=st.booleans(), num_nodes=st.none() | st.integers(-2, 5))
def test_it_raises_only_expansion_errors_on_arbitrary_input(value, where, key, composite, num_nodes):
    runtime = _torchtune()
    runtime["spec"]["scheduling"] = {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "job": {}}]}
    target = runtime
    for part in where:
        target = target[part]
    target[key] = value
    try:
        expansion = expand(runtime, trainjob_name="j", num_nodes=num_nodes, composite=composite)
    except ExpansionError as error:
        assert isinstance(error.path, str) and error.message
        return
    json.dumps([expansion.to_dict(), expansion.workload_manifest(), expansion.podgroup_manifests()])


@settings(max_examples=100, deadline=None)
@given(value=_json)
def test_it_raises_only_expansion_errors_for_any_top_level_value(value):
    with contextlib.suppress(ExpansionError):
        expand(value, trainjob_name="j")


def test_a_63_character_trainjob_gets_a_workload_name_of_at_most_63_characters():
    name = "a" * 30 + "-" + "b" * 32
    assert len(name) == 63
    expansion = expand(_torch_gang(), trainjob_name=name)
    assert len(expansion.workload_name) == 63
    assert expansion.workload_name.startswith(name[:54] + "-")
    assert all(len(group.name) <= 63 for group in expansion.pod_groups)
    assert expand(_torch_gang(), trainjob_name="short").workload_name.startswith("short-")


def test_pod_group_names_keep_the_template_part_when_the_workload_name_is_long():
    workload = "w" * 63
    name = pod_group_name_for("ns", workload, "dataset-initializer", level_one=False)
    assert len(name) <= 63 and "-dataset-initializer-" in name


def test_the_scheduling_objects_carry_no_labels_the_controller_does_not_add():
    expansion = expand(_torch_gang(), trainjob_name="j")
    for obj in [expansion.workload_manifest(), *expansion.podgroup_manifests()]:
        assert "labels" not in obj["metadata"]
