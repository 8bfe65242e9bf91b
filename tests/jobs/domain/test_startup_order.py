"""Startup order and "running": a ReplicatedJob waiting for others through dependsOn is `waiting-for-startup` (with
"node waits for dataset-initializer and model-initializer to complete; 1 of 2 done"), never a placement wait, and a
job whose initializers alone are bound is not running — through the ownership index, the JobSet slimmed as the
tracker keeps it."""

from __future__ import annotations

from jobs.domain import states as st
from jobs.domain.admission import admission_of_tree
from jobs.domain.ownership import JOBSET, POD, PODGROUP, TRAINJOB, WORKLOAD, OwnershipIndex
from tests.jobs import objects as o

SCHEDULED = "PodGroupInitiallyScheduled"
INIT = (("dataset-initializer", "Complete"), ("model-initializer", "Complete"))


def _torchtune(nodes: int = 32, *, jobs_status=None, with_jobset: bool = True):
    job = o.trainjob(num_nodes=nodes, jobs_status=jobs_status)
    rjobs = [o.replicated_job("dataset-initializer", ancestor="dataset-initializer"),
             o.replicated_job("model-initializer", ancestor="model-initializer"),
             o.replicated_job("node", parallelism=nodes, depends_on=list(INIT), ancestor="trainer")]
    return job, (o.jobset(job, rjobs) if with_jobset else None)


def _admission(job, jobset=None, *, wl=None, groups=(), pods=()):
    index = OwnershipIndex()
    index.upsert(TRAINJOB, job)
    if jobset is not None:
        index.upsert(JOBSET, jobset)
    if wl is not None:
        index.upsert(WORKLOAD, wl)
    for group in groups:
        index.upsert(PODGROUP, group)
    for pod in pods:
        index.upsert(POD, pod)
    return admission_of_tree(index.tree(job["metadata"]["uid"]))


def _initializer_pods(job, *, phase="Running", groups=None):
    groups = groups or {}
    return [o.pod(job, 0, rjob=name, node=f"cpu-{i}", phase=phase, group=groups.get(name))
            for i, name in enumerate(("dataset-initializer", "model-initializer"))]


def test_a_32_node_job_with_only_its_initializers_bound_waits_for_startup_order_not_running():
    job, jobset = _torchtune()

    admission = _admission(job, jobset, pods=_initializer_pods(job))

    assert admission.state == st.WAITING_FOR_STARTUP and admission.reason == "WaitingForStartupOrder"
    assert admission.message.startswith(
        "node waits for dataset-initializer and model-initializer to complete; 0 of 2 done")


def test_the_wait_counts_the_targets_done_from_the_jobs_status():
    job, jobset = _torchtune(jobs_status=[{"name": "dataset-initializer", "succeeded": 1},
                                          {"name": "model-initializer", "active": 1, "ready": 1}])
    pods = [o.pod(job, 0, rjob="dataset-initializer", node="cpu-0", phase="Succeeded"),
            o.pod(job, 0, rjob="model-initializer", node="cpu-1", phase="Running")]

    admission = _admission(job, jobset, pods=pods)

    assert admission.state == st.WAITING_FOR_STARTUP
    assert "1 of 2 done" in admission.message


def test_a_ready_dependency_is_worded_as_ready():
    job = o.trainjob(num_nodes=3)
    jobset = o.jobset(job, [o.replicated_job("node", parallelism=3),
                            o.replicated_job("launcher", depends_on=[("node", "Ready")], ancestor="trainer")])
    pods = [o.pod(job, i, rjob="node", node=f"n{i}", phase="Pending") for i in range(3)]

    admission = _admission(job, jobset, pods=pods)

    # node's pods are bound but not running: launcher waits for them to be ready.
    assert admission.state == st.WAITING_FOR_STARTUP
    assert admission.message.startswith("launcher waits for node to be ready; 0 of 1 done")


def test_level1_split_into_one_gang_per_replicated_job_waits_for_startup_not_placement():
    """KEP-3015: level 1 with dependsOn is one PodGroup per ReplicatedJob; node's group has no members yet."""
    job, jobset = _torchtune()
    wl = o.workload(job, templates=[{"name": n, "schedulingPolicy": {"gang": {"minCount": c}}} for n, c in
                                    (("dataset-initializer", 1), ("model-initializer", 1), ("node", 32))])
    groups = {name: o.pod_group(job, wl, template=name, min_count=count,
                                conditions=[o.condition(SCHEDULED, True)] if count == 1 else [])
              for name, count in (("dataset-initializer", 1), ("model-initializer", 1), ("node", 32))}

    admission = _admission(job, jobset, wl=wl, groups=list(groups.values()),
                           pods=_initializer_pods(job, groups=groups))

    assert admission.state == st.WAITING_FOR_STARTUP, admission.message
    assert "0 of 2 done" in admission.message and "2 PodGroups scheduled" in admission.message


def test_an_unschedulable_initializer_is_a_placement_wait():
    job, jobset = _torchtune()
    wl = o.workload(job, templates=[{"name": "dataset-initializer", "schedulingPolicy": {"gang": {"minCount": 1}}}])
    group = o.pod_group(job, wl, template="dataset-initializer", min_count=1,
                        conditions=[o.condition(SCHEDULED, False, "Unschedulable", "0/8 nodes: insufficient cpu")])
    pods = [o.pod(job, 0, rjob="dataset-initializer", group=group)]

    admission = _admission(job, jobset, wl=wl, groups=[group], pods=pods)

    assert admission.state == st.UNSCHEDULABLE


def test_initializers_done_but_trainer_pods_not_created_is_not_running():
    job, jobset = _torchtune(nodes=4, jobs_status=[{"name": "dataset-initializer", "succeeded": 1},
                                                   {"name": "model-initializer", "succeeded": 1}])
    pods = _initializer_pods(job, phase="Succeeded")

    admission = _admission(job, jobset, pods=pods)

    assert admission.state == st.WAITING_FOR_OBJECTS and admission.reason == "TrainerPodsNotCreated"
    assert "0 / 4 bound" in admission.message


def test_without_the_jobset_initializer_pods_alone_are_not_running():
    job, _ = _torchtune(with_jobset=False)

    admission = _admission(job, pods=_initializer_pods(job))

    assert admission.state != st.RUNNING
    assert admission.reason == "TrainerPodsNotCreated"


def test_the_trainers_gang_running_is_running():
    job, jobset = _torchtune(nodes=4, jobs_status=[{"name": "dataset-initializer", "succeeded": 1},
                                                   {"name": "model-initializer", "succeeded": 1}])
    pods = [*_initializer_pods(job, phase="Succeeded"),
            *(o.pod(job, i, rjob="node", node=f"gpu-{i}", phase="Running") for i in range(4))]

    admission = _admission(job, jobset, pods=pods)

    assert admission.state == st.RUNNING


def test_the_tracker_keeps_the_startup_plan_of_a_jobset_not_its_pod_templates():
    from jobs.domain.ownership import slim

    _, jobset = _torchtune()
    jobset["spec"]["replicatedJobs"][2]["template"]["spec"]["template"] = {"spec": {"containers": [{"name": "x"}]}}

    kept = slim(JOBSET, jobset)

    assert kept["spec"]["replicatedJobs"][2] == {
        "name": "node", "replicas": 1, "parallelism": 32, "ancestor": "trainer",
        "dependsOn": [{"name": "dataset-initializer", "status": "Complete"},
                      {"name": "model-initializer", "status": "Complete"}]}
