"""A 1.36 sandbox: the controllers use scheduling.k8s.io/v1alpha2 shapes and the `PodGroupScheduled` condition."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sandbox.controllers_support import (
    Cluster,
    condition,
    demo_runtime,
    is_true,
    simulated_cluster,
    trainjob,
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with simulated_cluster(kube_version="1.36") as process:
        yield Cluster(process, scheduling_version="v1alpha2")


def test_it_uses_v1alpha2_workloads_podgroups_and_the_podgroupscheduled_condition(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_rack.yaml"))
    cluster.submit(trainjob("old-k8s", "torch-gang-rack", num_nodes=2))
    group = cluster.wait(lambda: next((g for g in cluster.pod_groups() if is_true(g, "PodGroupScheduled")), None))
    (workload,) = cluster.workloads()
    assert workload["apiVersion"] == group["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert group["spec"]["podGroupTemplateRef"] == {
        "workload": {"workloadName": workload["metadata"]["name"], "podGroupTemplateName": "node-0"}}
    assert "workloadRef" not in group["spec"]
    assert condition(group, "PodGroupInitiallyScheduled") is None
    pods = cluster.pods("old-k8s")
    assert len(pods) == 2 and all(p["spec"]["schedulingGroup"]["podGroupName"] == group["metadata"]["name"]
                                  for p in pods)


def test_it_reports_an_unschedulable_v1alpha2_gang(cluster: Cluster):
    cluster.process.reset()
    cluster.create_runtime(demo_runtime("torch_gang_rack.yaml"))
    cluster.submit(trainjob("wide", "torch-gang-rack", num_nodes=6))
    group = cluster.wait(lambda: next((g for g in cluster.pod_groups() if condition(g, "PodGroupScheduled")), None))
    assert condition(group, "PodGroupScheduled")["status"] == "False"
    assert condition(group, "PodGroupScheduled")["reason"] == "Unschedulable"
    assert "no domain fits 6 pods" in condition(group, "PodGroupScheduled")["message"]
