"""End to end through a running sandbox: TrainJob -> Workload -> PodGroups -> Pods, status, suspend, GC, faults."""

from __future__ import annotations

import re

import pytest

from runtimes.domain.expansion import pod_group_name_for, workload_name_for
from tests.sandbox.controllers_support import Cluster, condition, demo_runtime, is_true, trainjob


@pytest.fixture
def cluster(sim_cluster: Cluster) -> Cluster:
    """The module's simulated cluster, freshly reset (``sim_cluster`` in tests/sandbox/conftest.py)."""
    return sim_cluster


def _owner(obj: dict, kind: str) -> dict:
    return next(o for o in obj["metadata"]["ownerReferences"] if o["kind"] == kind)


def test_it_creates_workload_podgroup_and_pods_named_and_owned_per_the_kep(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_rack.yaml"))
    job = cluster.submit(trainjob("llama", "torch-gang-rack", num_nodes=3))
    uid = job["metadata"]["uid"]
    pods = cluster.wait(lambda: len(p := cluster.pods("llama")) == 3 and p)

    (workload,) = cluster.workloads()
    assert workload["apiVersion"] == "scheduling.k8s.io/v1beta1"
    # Salted with the UID: `<trainjob>-<hash>`, never the name a preview would predict.
    assert re.fullmatch(r"llama-[a-z0-9]{8}", workload["metadata"]["name"])
    assert workload["metadata"]["name"] != workload_name_for("default", "llama")
    assert workload["spec"]["controllerRef"] == {"apiGroup": "trainer.kubeflow.org", "kind": "TrainJob",
                                                 "name": "llama"}
    assert workload["spec"]["podGroupTemplates"][0]["name"] == "node-0"
    assert _owner(workload, "TrainJob")["uid"] == uid and _owner(workload, "TrainJob")["controller"] is True

    (group,) = cluster.pod_groups()
    assert re.fullmatch(re.escape(workload["metadata"]["name"]) + r"-node-0-[a-z0-9]{6}", group["metadata"]["name"])
    assert group["metadata"]["name"] != pod_group_name_for("default", workload["metadata"]["name"], "node-0",
                                                           level_one=False)
    assert group["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]
    assert group["spec"]["workloadRef"] == {"workloadName": workload["metadata"]["name"], "templateName": "node-0"}
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert _owner(group, "TrainJob")["controller"] is True and _owner(group, "TrainJob")["uid"] == uid
    assert _owner(group, "Workload")["uid"] == workload["metadata"]["uid"]
    assert not _owner(group, "Workload").get("controller")

    for pod in pods:
        assert re.fullmatch(r"llama-node-0-[0-2]-[a-z0-9]{5}", pod["metadata"]["name"])
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": group["metadata"]["name"]}
        assert pod["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "node"
        assert pod["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"] == "trainer"
        assert _owner(pod, "TrainJob")["uid"] == uid
        assert pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "8"

    group = cluster.wait(lambda: next((g for g in cluster.pod_groups()
                                       if is_true(g, "PodGroupInitiallyScheduled")), None))
    assert condition(group, "PodGroupInitiallyScheduled")["reason"] == "Scheduled"


def test_it_salts_names_so_two_trainjobs_of_the_same_name_get_different_objects(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    names = []
    for _ in range(2):
        cluster.submit(trainjob("again", "torch-gang-zone", num_nodes=1))
        cluster.wait(lambda: len(cluster.pods("again")) == 1 and cluster.workloads() and cluster.pod_groups())
        names.append((cluster.workloads()[0]["metadata"]["name"], cluster.pod_groups()[0]["metadata"]["name"],
                      cluster.pods("again")[0]["spec"]["schedulingGroup"]["podGroupName"]))
        cluster.delete_trainjob("again")
        cluster.wait(lambda: not cluster.workloads() and not cluster.pod_groups() and not cluster.pods("again"))
    assert names[0][0] != names[1][0] and names[0][1] != names[1][1]
    assert all(group == pod_group for _, group, pod_group in names)


def test_it_garbage_collects_every_child_when_the_trainjob_is_deleted(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    cluster.submit(trainjob("doomed", "torch-gang-zone", num_nodes=2))
    cluster.wait(lambda: len(cluster.pods("doomed")) == 2 and cluster.pod_groups() and cluster.workloads())
    cluster.delete_trainjob("doomed")
    cluster.wait(lambda: not cluster.pods("doomed") and not cluster.pod_groups() and not cluster.workloads())
    assert cluster.trainjob("doomed") is None


def test_it_runs_pods_to_completion_and_reports_jobs_status(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torchtune_gang_block.yaml"))
    cluster.submit(trainjob("tune", "torchtune-gang-block", num_nodes=2))  # no duration: runs until told
    running = cluster.wait(lambda: (j := cluster.trainjob("tune")) and all(
        s["ready"] == 1 and s["active"] == 1 for s in (j.get("status") or {}).get("jobsStatus") or [{"ready": 0}])
        and j)
    assert {s["name"] for s in running["status"]["jobsStatus"]} == {"dataset-initializer", "model-initializer", "node"}
    assert {p["status"]["phase"] for p in cluster.pods("tune")} == {"Running"}
    cluster.client.merge_patch("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/tune",
                               {"metadata": {"annotations": {"sandbox.trainer-portal.io/duration-seconds": "0"}}})
    done = cluster.wait(lambda: (j := cluster.trainjob("tune")) and is_true(j, "Complete") and j)
    assert condition(done, "Complete")["reason"] == "AllJobsCompleted"
    assert all(s["succeeded"] == 1 and s["active"] == 0 for s in done["status"]["jobsStatus"])
    assert {p["status"]["phase"] for p in cluster.pods("tune")} == {"Succeeded"}
    basic = next(g for g in cluster.pod_groups() if "basic" in g["spec"]["schedulingPolicy"])
    assert is_true(basic, "PodGroupInitiallyScheduled")


def test_it_fails_the_trainjob_when_a_pod_fails(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    cluster.submit(trainjob("flaky", "torch-gang-zone", num_nodes=2, fail_after=0.5))
    failed = cluster.wait(lambda: (j := cluster.trainjob("flaky")) and is_true(j, "Failed") and j)
    assert condition(failed, "Failed")["reason"] == "FailedJobs"
    assert not is_true(failed, "Complete")


def test_it_creates_nothing_while_suspended_and_everything_on_resume(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    cluster.submit(trainjob("sleepy", "torch-gang-zone", num_nodes=2, suspend=True))
    suspended = cluster.wait(lambda: (j := cluster.trainjob("sleepy")) and is_true(j, "Suspended") and j)
    assert condition(suspended, "Suspended")["reason"] == "Suspended"
    assert cluster.pods("sleepy") == [] and cluster.workloads() == []
    cluster.client.merge_patch("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/sleepy",
                               {"spec": {"suspend": False}})
    cluster.wait(lambda: len(cluster.pods("sleepy")) == 2)
    resumed = cluster.wait(lambda: (j := cluster.trainjob("sleepy")) and condition(j, "Suspended")["status"]
                           == "False" and j)
    assert condition(resumed, "Suspended")["reason"] == "Resumed"
    assert len(cluster.workloads()) == 1


def test_suspend_deletes_the_workload_podgroups_and_pods_and_resume_recreates_them_under_new_names(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    cluster.submit(trainjob("pausable", "torch-gang-zone", num_nodes=2))
    cluster.wait(lambda: len(p := cluster.pods("pausable")) == 2 and all(x["status"].get("phase") == "Running"
                                                                         for x in p))
    (before,) = cluster.pod_groups()
    workload_before = cluster.workloads()[0]["metadata"]["name"]
    path = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/pausable"

    cluster.client.merge_patch(path, {"spec": {"suspend": True}})
    cluster.wait(lambda: not cluster.pods("pausable") and not cluster.pod_groups() and not cluster.workloads())
    assert condition(cluster.trainjob("pausable"), "Suspended")["status"] == "True"

    cluster.client.merge_patch(path, {"spec": {"suspend": False}})
    pods = cluster.wait(lambda: len(p := cluster.pods("pausable")) == 2 and all(x["spec"].get("nodeName") for x in p)
                        and p)
    (after,) = cluster.pod_groups()
    (workload_after,) = cluster.workloads()
    assert after["metadata"]["name"] != before["metadata"]["name"]
    assert workload_after["metadata"]["name"] != workload_before
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {after["metadata"]["name"]}
    assert after["spec"]["workloadRef"]["workloadName"] == workload_after["metadata"]["name"]
    cluster.wait(lambda: is_true(cluster.pod_groups()[0], "PodGroupInitiallyScheduled"))
    assert condition(cluster.trainjob("pausable"), "Suspended")["reason"] == "Resumed"


def test_a_deleted_podgroup_stays_until_no_running_pod_uses_it(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    cluster.submit(trainjob("held", "torch-gang-zone", num_nodes=2))
    cluster.wait(lambda: len(p := cluster.pods("held")) == 2 and all(x["status"].get("phase") == "Running" for x in p))
    (group,) = cluster.pod_groups()
    group_path = f"{cluster.scheduling}/podgroups/{group['metadata']['name']}"
    cluster.client.delete(group_path)
    terminating = cluster.client.get(group_path)
    assert terminating["metadata"]["deletionTimestamp"]
    assert terminating["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]
    # The protection controller has had passes since (a pod event wakes it) and still keeps the group.
    cluster.client.merge_patch("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/held",
                               {"metadata": {"labels": {"nudge": "1"}}})
    cluster.wait(lambda: cluster.trainjob("held")["metadata"]["labels"]["nudge"] == "1")
    assert cluster.client.get(group_path)["metadata"]["deletionTimestamp"]
    cluster.client.merge_patch("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/held",
                               {"metadata": {"annotations": {"sandbox.trainer-portal.io/duration-seconds": "0"}}})
    cluster.wait(lambda: not cluster.pod_groups())
    assert {p["status"]["phase"] for p in cluster.pods("held")} == {"Succeeded"}


def test_it_waits_for_a_missing_runtime_with_upstreams_warning_event(cluster: Cluster):
    cluster.submit(trainjob("early", "torch-gang-zone", num_nodes=1))
    event = cluster.wait(lambda: next((e for e in cluster.events()
                                       if e["reason"] == "TrainJobResourcesCreationFailed"
                                       and e["involvedObject"]["name"] == "early"), None))
    assert event["type"] == "Warning"
    assert event["message"] == ("TrainJob resources reconciliation failed: not found ClusterTrainingRuntime "
                                "specified in TrainJob: clustertrainingruntimes.trainer.kubeflow.org "
                                "\"torch-gang-zone\" not found")
    assert cluster.pods("early") == []
    assert not is_true(cluster.trainjob("early"), "Failed")
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    cluster.wait(lambda: len(cluster.pods("early")) == 1)


def test_it_fails_a_trainjob_whose_runtime_kind_is_not_supported(cluster: Cluster):
    cluster.submit(trainjob("odd", "whatever", runtime_kind="JAXRuntime"))
    failed = cluster.wait(lambda: (j := cluster.trainjob("odd")) and is_true(j, "Failed") and j)
    assert condition(failed, "Failed")["reason"] == "TrainingRuntimeNotSupported"
    assert "JAXRuntime" in condition(failed, "Failed")["message"]


def test_it_fails_a_trainjob_the_runtime_cannot_expand(cluster: Cluster):
    runtime = demo_runtime("torch_gang_zone.yaml")
    runtime["metadata"]["name"] = "broken"
    runtime["spec"]["scheduling"]["replicatedJobs"] = [{"targetReplicatedJobs": ["node"]}]
    cluster.create_runtime(runtime)
    cluster.submit(trainjob("victim", "broken", num_nodes=1))
    failed = cluster.wait(lambda: (j := cluster.trainjob("victim")) and is_true(j, "Failed") and j)
    assert condition(failed, "Failed")["reason"] == "TrainingRuntimeNotSupported"
    assert "mutually exclusive" in condition(failed, "Failed")["message"]


def test_it_runs_runtimes_without_scheduling_and_without_podgroups(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_distributed.yaml"))
    cluster.submit(trainjob("plain", "torch-distributed", num_nodes=2, gpus="2", duration=0.5))
    cluster.wait(lambda: is_true(cluster.trainjob("plain"), "Complete"))
    assert cluster.workloads() == [] and cluster.pod_groups() == []
    assert all("schedulingGroup" not in p["spec"] and p["spec"]["nodeName"] for p in cluster.pods("plain"))


def test_it_survives_compaction_cut_watches_and_api_errors(cluster: Cluster):
    cluster.process.inject_fault(method="GET", path="^/api/v1/pods$", action="cut-watch", count=3)
    # Reset ends every watch and compacts history: the informers reconnect (into the cuts) and then relist on 410.
    cluster.process.reset()
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    cluster.process.inject_fault(method="POST", path="^/api/v1/namespaces/default/pods$", action="status",
                                 status=503, count=2)
    cluster.process.inject_fault(method="POST", path="/binding$", action="status", status=500, count=2)
    cluster.process.inject_fault(method="PUT", path="^/api/v1/namespaces/default/pods/.*/status$", action="status",
                                 status=500, count=2)
    cluster.submit(trainjob("tough", "torch-gang-zone", num_nodes=3, duration=0.5))
    done = cluster.wait(lambda: (j := cluster.trainjob("tough")) and is_true(j, "Complete") and j, timeout=40)
    assert done["status"]["jobsStatus"][0]["succeeded"] == 1
    assert len(cluster.pods("tough")) == 3
    assert cluster.process._call("GET", "/sandbox/faults")["faults"] == []  # every injected fault was hit


def test_it_fails_a_trainjob_past_its_active_deadline_and_stops_its_pods(cluster: Cluster):
    cluster.create_runtime(demo_runtime("torch_gang_zone.yaml"))
    job = trainjob("slow", "torch-gang-zone", num_nodes=2)  # no duration: would run forever
    job["spec"]["activeDeadlineSeconds"] = 2
    cluster.submit(job)
    cluster.wait(lambda: {p["status"].get("phase") for p in cluster.pods("slow")} == {"Running"})
    failed = cluster.wait(lambda: (j := cluster.trainjob("slow")) and is_true(j, "Failed") and j)
    assert condition(failed, "Failed")["reason"] == "DeadlineExceeded"
    cluster.wait(lambda: cluster.pods("slow") == [])
