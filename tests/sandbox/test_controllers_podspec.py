"""Pure tests of the TrainJob controller's pod building and status arithmetic (no server needed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from sandbox.controllers.common import DURATION_ANNOTATION, flavour_for, with_condition
from sandbox.controllers.expansion import plan_for
from sandbox.controllers.kubelet import finished_status, running_status
from sandbox.controllers.podspec import build_pod, name_suffix, pod_name
from sandbox.controllers.trainer import is_complete, jobs_status

RUNTIMES = Path(__file__).resolve().parents[2] / "sandbox" / "demo_runtimes"


def runtime(name: str) -> dict:
    return yaml.safe_load((RUNTIMES / name).read_text())


def trainjob(name="my-job", **trainer) -> dict:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "team-a", "uid": "uid-1",
                         "annotations": {DURATION_ANNOTATION: "30"}},
            "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer}}


def test_it_names_pods_trainjob_rjob_job_pod_and_a_stable_5_char_suffix():
    name = pod_name("my-job", "node", 0, 3, "uid-1")
    assert re.fullmatch(r"my-job-node-0-3-[bcdfghjklmnpqrstvwxz2456789]{5}", name)
    assert name == pod_name("my-job", "node", 0, 3, "uid-1")
    assert name != pod_name("my-job", "node", 0, 3, "uid-2")
    assert len({name_suffix("u", i) for i in range(200)}) > 190


def test_it_builds_a_trainer_pod_with_labels_resources_group_and_owner():
    rt = runtime("torch_distributed.yaml")
    job = trainjob(numNodes=2, image="my/image:1", resourcesPerNode={"requests": {"nvidia.com/gpu": "4"}})
    exp = plan_for(rt, job)
    pod = build_pod(job, rt, "node", 0, 1, exp.replicated_job("node").resources, "my-job-abc")
    labels = pod["metadata"]["labels"]
    assert labels["jobset.sigs.k8s.io/jobset-name"] == "my-job"
    assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == "node"
    assert labels["trainer.kubeflow.org/trainjob-ancestor-step"] == "trainer"
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "my-job-abc"}
    container = pod["spec"]["containers"][0]
    assert container["image"] == "my/image:1"
    assert container["resources"] == {"requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("TrainJob", "my-job", "uid-1", True)
    assert pod["metadata"]["annotations"][DURATION_ANNOTATION] == "30"
    assert pod["metadata"]["namespace"] == "team-a"


def test_the_trainjob_image_reaches_the_mpi_launcher_and_the_nodes():
    rt = runtime("deepspeed_distributed.yaml")
    job = trainjob(numNodes=3, image="ghcr.io/acme/deepspeed:2", command=["deepspeed", "train.py"])
    launcher = build_pod(job, rt, "launcher", 0, 0, {}, None)
    node = build_pod(job, rt, "node", 0, 0, {}, None)
    assert launcher["spec"]["containers"][0]["image"] == node["spec"]["containers"][0]["image"] == \
        "ghcr.io/acme/deepspeed:2"
    assert launcher["spec"]["containers"][0]["command"] == ["deepspeed", "train.py"]
    assert node["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd"]  # only the image is the TrainJob's


def test_kubelet_statuses_carry_every_field_a_real_kubelet_sets():
    pod = build_pod(trainjob(), runtime("torch_distributed.yaml"), "node", 0, 0, {}, None)
    pod["metadata"]["uid"] = "pod-uid"
    status = running_status(pod, "2026-12-01T10:00:00Z", "10.0.3.4")
    (container,) = status["containerStatuses"]
    assert container["imageID"].startswith(container["image"].split(":")[0]) and "@sha256:" in container["imageID"]
    assert container["containerID"].startswith("containerd://")
    assert (container["ready"], container["started"], container["restartCount"]) == (True, True, 0)
    assert status["hostIP"] == "10.0.3.4" and status["podIP"].startswith("10.") and status["podIPs"]
    finished = finished_status({**pod, "status": status}, succeeded=False)
    terminated = finished["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 1 and terminated["containerID"] == container["containerID"]
    assert finished["phase"] == "Failed"


def test_it_leaves_pods_of_an_ungrouped_rjob_without_a_scheduling_group():
    rt = runtime("torch_distributed.yaml")
    pod = build_pod(trainjob(), rt, "node", 0, 0, {}, None)
    assert "schedulingGroup" not in pod["spec"]
    assert "resources" not in pod["spec"]["containers"][0] or not pod["spec"]["containers"][0]["resources"].get(
        "limits")


def test_it_keeps_the_initializer_labels_and_containers():
    rt = runtime("qwen2_5_1.5B.yaml")
    pod = build_pod(trainjob(), rt, "dataset-initializer", 0, 0, {}, None)
    assert pod["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"] == "dataset-initializer"
    assert pod["spec"]["containers"][0]["name"] == "dataset-initializer"


def _pod(rjob: str, job_index: int, phase: str, ready: bool = False) -> dict:
    conditions = [{"type": "Ready", "status": "True"}] if ready else []
    return {"metadata": {"name": f"{rjob}-{job_index}-{phase}", "labels": {
        "jobset.sigs.k8s.io/replicatedjob-name": rjob, "jobset.sigs.k8s.io/job-index": str(job_index)}},
        "status": {"phase": phase, "conditions": conditions}}


def test_it_counts_jobs_by_state_per_replicated_job():
    rt = runtime("qwen2_5_1.5B.yaml")
    exp = plan_for(rt, trainjob(numNodes=2))
    pods = [_pod("dataset-initializer", 0, "Succeeded"), _pod("model-initializer", 0, "Pending"),
            _pod("node", 0, "Running", ready=True), _pod("node", 0, "Running", ready=True)]
    status = {s["name"]: s for s in jobs_status(exp, pods, suspended=False)}
    assert status["dataset-initializer"] == {"name": "dataset-initializer", "ready": 0, "active": 0,
                                             "succeeded": 1, "failed": 0, "suspended": 0}
    assert status["model-initializer"]["active"] == 1 and status["model-initializer"]["ready"] == 0
    assert status["node"]["ready"] == 1 and status["node"]["active"] == 1
    assert not is_complete(rt, exp, list(status.values()))


def test_it_reports_suspended_jobs_and_failures():
    rt = runtime("torch_distributed.yaml")
    exp = plan_for(rt, trainjob(numNodes=2))
    assert jobs_status(exp, [], suspended=True)[0]["suspended"] == 1
    assert jobs_status(exp, [_pod("node", 0, "Failed"), _pod("node", 0, "Running")], False)[0]["failed"] == 1


@pytest.mark.parametrize(("phases", "complete"), [(["Succeeded", "Succeeded"], True),
                                                  (["Succeeded", "Running"], False)])
def test_it_completes_when_every_pod_succeeded(phases, complete):
    rt = runtime("torch_distributed.yaml")
    exp = plan_for(rt, trainjob(numNodes=2))
    status = jobs_status(exp, [_pod("node", 0, p) for p in phases], False)
    assert is_complete(rt, exp, status) is complete


def test_it_honours_the_success_policy_targets():
    rt = runtime("deepspeed_distributed.yaml")  # successPolicy: All over [launcher]
    exp = plan_for(rt, trainjob(numNodes=3))
    status = jobs_status(exp, [_pod("launcher", 0, "Succeeded"), _pod("node", 0, "Running")], False)
    assert is_complete(rt, exp, status)


def test_it_does_not_rewrite_an_identical_condition():
    obj = {"metadata": {"generation": 2}, "status": {}}
    conditions = with_condition(obj, "Suspended", True, "Suspended", "x")
    assert conditions[0]["observedGeneration"] == 2
    obj["status"]["conditions"] = conditions
    assert with_condition(obj, "Suspended", True, "Suspended", "x") is None
    flipped = with_condition(obj, "Suspended", False, "Resumed", "y")
    assert flipped[0]["status"] == "False" and flipped[0]["reason"] == "Resumed"


@pytest.mark.parametrize(("version", "api", "condition"), [("1.36", "v1alpha2", "PodGroupScheduled"),
                                                           ("1.37", "v1beta1", "PodGroupInitiallyScheduled")])
def test_it_picks_the_scheduling_api_of_the_kubernetes_version(version, api, condition):
    flavour = flavour_for(version)
    assert flavour.scheduling_version == api and flavour.scheduled_condition == condition
    assert flavour.collection("podgroups", "ns") == f"/apis/scheduling.k8s.io/{api}/namespaces/ns/podgroups"


def test_it_merges_runtime_patches_node_selector_and_tolerations_into_the_patched_replicated_job_only():
    rt = runtime("torch_distributed.yaml")
    job = trainjob(numNodes=2)
    toleration = {"key": "reserved", "operator": "Equal", "value": "research", "effect": "NoSchedule"}
    pod_patch = {"nodeSelector": {"topology.kubernetes.io/zone": "zone-a"}, "tolerations": [toleration]}
    job["spec"]["runtimePatches"] = [{"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {
        "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": pod_patch}}}}]}}}}]
    plan = plan_for(rt, job)
    node = next(r for r in plan.replicated_jobs if r.name == "node")
    pod = build_pod(job, rt, "node", 0, 0, node.resources, None)
    assert pod["spec"]["nodeSelector"]["topology.kubernetes.io/zone"] == "zone-a"
    assert toleration in pod["spec"]["tolerations"]
    other = trainjob(numNodes=2)
    plain = build_pod(other, rt, "node", 0, 0, node.resources, None)
    assert "zone-a" not in str(plain["spec"].get("nodeSelector"))
    job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["name"] = "x"
    assert toleration not in build_pod(job, rt, "node", 0, 0, node.resources, None)["spec"].get("tolerations", [])
