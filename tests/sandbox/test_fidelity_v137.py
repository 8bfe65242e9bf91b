"""The sandbox is as strict as Kubernetes 1.37 + Trainer v2.4 where the portal's preview could otherwise be wrong.

- `DRAWorkloadResourceClaims` (beta, off by default in 1.37): the API server drops `resourceClaims` from Workloads and
  PodGroups silently; with `--gate DRAWorkloadResourceClaims=true` level-3 claims reach the PodGroups and the pods.
- A Workload whose templates disagree on priority is refused ("detected multiple priority configurations"); the
  simulated Trainer then records upstream's Warning Event `TrainJobResourcesCreationFailed` instead of hanging
  without a word.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox.controllers.client import ApiError, Client
from sandbox.testing import SandboxProcess
from tests.sandbox.controllers_support import Cluster, demo_runtime, simulated_cluster, trainjob

WORKLOADS = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads"
PODGROUPS = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"
CLAIM = {"name": "nvlink", "resourceClaimTemplateName": "imex-channel"}


def _claims_runtime(name: str = "torch-claims") -> dict:
    """A level-3 runtime: one Job of `node` whose pods share an IMEX claim."""
    runtime = demo_runtime("torch_gang_zone.yaml")
    runtime["metadata"] = {"name": name}
    runtime["spec"]["scheduling"] = {"replicatedJobs": [
        {"targetReplicatedJobs": ["node"], "job": {"schedulingPolicy": {"gang": {}}, "resourceClaims": [CLAIM]}}]}
    return runtime


def _workload(name: str, claims: bool = True) -> dict:
    template = {"name": "node-0", "schedulingPolicy": {"gang": {"minCount": 2}}}
    if claims:
        template["resourceClaims"] = [dict(CLAIM)]
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": name},
            "spec": {"controllerRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainJob", "name": name},
                     "podGroupTemplates": [template]}}


def _pod_group(name: str) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"workloadRef": {"workloadName": "w", "templateName": "node-0"},
                     "schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": [dict(CLAIM)]}}


# -- the API server ---------------------------------------------------------------------------------------------


def test_the_dra_gate_is_off_by_default_and_claims_are_dropped_silently(cluster: SandboxProcess):
    client = Client(cluster.url)
    workload = client.create(WORKLOADS, _workload("w"))
    assert "resourceClaims" not in workload["spec"]["podGroupTemplates"][0]
    group = client.create(PODGROUPS, _pod_group("pg"))
    assert "resourceClaims" not in group["spec"]
    # A dry run shows the same: this is what the portal's gate probe relies on.
    probe = client.create(PODGROUPS + "?dryRun=All", _pod_group("probe"))
    assert "resourceClaims" not in probe["spec"]


@pytest.fixture(scope="module")
def dra_api() -> Iterator[SandboxProcess]:
    with SandboxProcess(topology="none", controllers=False, gates={"DRAWorkloadResourceClaims": True}) as proc:
        yield proc


def test_with_the_dra_gate_on_claims_are_kept(dra_api: SandboxProcess):
    client = Client(dra_api.url)
    workload = client.create(WORKLOADS, _workload("w-on"))
    assert workload["spec"]["podGroupTemplates"][0]["resourceClaims"] == [CLAIM]
    group = client.create(PODGROUPS, _pod_group("pg-on"))
    assert group["spec"]["resourceClaims"] == [CLAIM]


def test_templates_that_disagree_on_priority_are_refused(cluster: SandboxProcess):
    body = _workload("mixed", claims=False)
    body["spec"]["podGroupTemplates"] = [
        {"name": "a", "schedulingPolicy": {"basic": {}}, "priorityClassName": "high"},
        {"name": "b", "schedulingPolicy": {"basic": {}}}]
    with pytest.raises(ApiError, match="detected multiple priority configurations") as error:
        Client(cluster.url).create(WORKLOADS, body)
    assert error.value.status == 422


# -- the simulated Trainer ---------------------------------------------------------------------------------------


@pytest.fixture
def sim_off(sim_cluster: Cluster) -> Cluster:
    return sim_cluster


def test_level_three_claims_are_lost_on_a_default_cluster(sim_off: Cluster):
    sim_off.create_runtime(_claims_runtime())
    sim_off.submit(trainjob("shared", "torch-claims", num_nodes=2))
    pods = sim_off.wait(lambda: len(p := sim_off.pods("shared")) == 2 and p)
    (group,) = sim_off.pod_groups()
    assert "resourceClaims" not in group["spec"]
    assert all("resourceClaims" not in pod["spec"] for pod in pods)


def test_a_runtime_with_priority_on_only_some_replicated_jobs_gets_upstreams_warning_event(sim_off: Cluster):
    runtime = demo_runtime("torchtune_gang_block.yaml")
    runtime["metadata"] = {"name": "mixed-priority"}
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    node = next(r for r in rjobs if r["name"] == "node")
    node["template"]["spec"]["template"]["spec"]["priorityClassName"] = "high-priority"
    sim_off.create_runtime(runtime)
    sim_off.submit(trainjob("mixed", "mixed-priority", num_nodes=1))
    event = sim_off.wait(lambda: next((e for e in sim_off.events()
                                       if e["reason"] == "TrainJobResourcesCreationFailed"
                                       and e["involvedObject"]["name"] == "mixed"), None))
    assert event["type"] == "Warning"
    assert event["message"].startswith("TrainJob resources reconciliation failed: ")
    assert "detected multiple priority configurations" in event["message"]
    assert sim_off.workloads() == [] and sim_off.pods("mixed") == []


@pytest.fixture(scope="module")
def sim_on() -> Iterator[Cluster]:
    with simulated_cluster(gates={"DRAWorkloadResourceClaims": True}) as process:
        yield Cluster(process)


def test_with_the_gate_on_level_three_claims_reach_the_pod_group_and_every_pod(sim_on: Cluster):
    sim_on.create_runtime(_claims_runtime())
    sim_on.submit(trainjob("shared", "torch-claims", num_nodes=2))
    pods = sim_on.wait(lambda: len(p := sim_on.pods("shared")) == 2 and p)
    (workload,) = sim_on.workloads()
    assert workload["spec"]["podGroupTemplates"][0]["resourceClaims"] == [CLAIM]
    (group,) = sim_on.pod_groups()
    assert group["spec"]["resourceClaims"] == [CLAIM]
    references = [pod["spec"]["resourceClaims"] for pod in pods]
    assert references[0] == references[1] and references[0][0]["name"] == "nvlink"
    assert references[0][0]["resourceClaimName"].startswith(group["metadata"]["name"][:20])
    node = next(c for c in pods[0]["spec"]["containers"] if c["name"] == "node")
    assert node["resources"]["claims"] == [{"name": "nvlink"}]


def test_a_coscheduling_timeout_of_zero_is_accepted_as_the_default(cluster: SandboxProcess):
    runtime = demo_runtime("torch_gang_zone.yaml")
    runtime["metadata"] = {"name": "cosched-zero"}
    del runtime["spec"]["scheduling"]
    runtime["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 0}}
    created = Client(cluster.url).create("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", runtime)
    assert created["spec"]["podGroupPolicy"]["coscheduling"]["scheduleTimeoutSeconds"] == 0
