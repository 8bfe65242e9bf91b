"""The minimal simulated Kueue: TrainJobs with a queue label wait for GPU quota, suspended and without scheduling
objects, and run once admitted (namespace `default`, quota 32 GPUs)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sandbox.controllers_support import Cluster, condition, demo_runtime, is_true, simulated_cluster, trainjob

KUEUE = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"
TRAINJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"


@pytest.fixture(scope="module")
def queued_cluster() -> Iterator[Cluster]:
    with simulated_cluster(SANDBOX_KUEUE="1", SANDBOX_KUEUE_GPU_QUOTA="default=32") as process:
        cluster = Cluster(process)
        cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))  # 8 GPUs per node
        yield cluster


def _queued(name: str, nodes: int, duration: float | None = None) -> dict:
    job = trainjob(name, "torch-gang-zone", num_nodes=nodes, duration=duration)
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    return job


def _kueue_workload(cluster: Cluster, name: str) -> dict | None:
    uid = cluster.trainjob(name)["metadata"]["uid"]
    return next((w for w in cluster.client.list(KUEUE)["items"]
                 if w["metadata"]["labels"].get("kueue.x-k8s.io/job-uid") == uid), None)


def test_queued_trainjobs_wait_for_quota_and_run_when_admitted(queued_cluster: Cluster):
    cluster = queued_cluster
    cluster.submit(_queued("first", 3, duration=1.5))  # 24 GPUs
    admitted = cluster.wait(lambda: (w := _kueue_workload(cluster, "first")) and is_true(w, "Admitted") and w)
    assert admitted["metadata"]["name"].startswith("trainjob-first-")
    assert admitted["status"]["admission"]["clusterQueue"] == "cq-default"
    assert is_true(admitted, "QuotaReserved")
    [pod_set] = admitted["spec"]["podSets"]
    assert (pod_set["name"], pod_set["count"]) == ("node", 3)
    assert pod_set["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "8"
    assert admitted["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    cluster.wait(lambda: len(cluster.pods("first")) == 3)
    first = cluster.trainjob("first")
    assert first["spec"]["suspend"] is False
    assert first["spec"]["runtimePatches"][-1]["manager"] == "kueue.x-k8s.io/manager"

    cluster.submit(_queued("second", 2))  # 16 GPUs: 8 more than the unused quota
    waiting = cluster.wait(lambda: (w := _kueue_workload(cluster, "second")) and condition(w, "QuotaReserved") and w)
    assert condition(waiting, "QuotaReserved")["status"] == "False"
    assert condition(waiting, "QuotaReserved")["reason"] == "WaitingForQuota"
    assert condition(waiting, "QuotaReserved")["message"] == (
        "couldn't assign flavors to pod set node: insufficient unused quota for nvidia.com/gpu in flavor "
        "default-flavor, 8 more needed")
    second = cluster.trainjob("second")
    assert second["spec"]["suspend"] is True and is_true(second, "Suspended")
    second_uid = second["metadata"]["uid"]
    assert cluster.pods("second") == []
    assert not any(o["uid"] == second_uid for g in cluster.pod_groups() for o in g["metadata"]["ownerReferences"])

    cluster.submit(_queued("huge", 5))  # 40 GPUs: more than the whole quota
    refused = cluster.wait(lambda: (w := _kueue_workload(cluster, "huge")) and condition(w, "QuotaReserved") and w)
    assert "request > maximum capacity (40 > 32)" in condition(refused, "QuotaReserved")["message"]

    # The first job completes: its quota frees and the second is admitted, unsuspended and scheduled.
    cluster.wait(lambda: is_true(_kueue_workload(cluster, "first"), "Finished"), timeout=30)
    cluster.wait(lambda: is_true(_kueue_workload(cluster, "second"), "Admitted"), timeout=30)
    cluster.wait(lambda: len(p := cluster.pods("second")) == 2 and all(x["spec"].get("nodeName") for x in p))
    assert condition(cluster.trainjob("second"), "Suspended")["reason"] == "Resumed"
    assert not is_true(_kueue_workload(cluster, "huge"), "Admitted")


def test_trainjobs_without_a_queue_label_are_not_managed(queued_cluster: Cluster):
    queued_cluster.submit(trainjob("direct", "torch-gang-zone", num_nodes=1))
    queued_cluster.wait(lambda: len(queued_cluster.pods("direct")) == 1)
    assert _kueue_workload(queued_cluster, "direct") is None


def test_kueue_installs_itself_again_after_a_reset(queued_cluster: Cluster):
    queued_cluster.process.reset()
    queues = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/localqueues"
    queued_cluster.wait(lambda: queued_cluster.client.list(queues)["items"], timeout=30)
    queued_cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))  # the reset removed it too
    queued_cluster.submit(_queued("after-reset", 1))
    queued_cluster.wait(lambda: is_true(_kueue_workload(queued_cluster, "after-reset"), "Admitted"), timeout=30)
