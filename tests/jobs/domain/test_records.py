"""The stored record of a TrainJob: its size per node when the TrainJob leaves resources to the runtime."""

from __future__ import annotations

from jobs.domain.ownership import POD, PODGROUP, TRAINJOB, WORKLOAD, OwnershipIndex
from jobs.domain.records import job_record
from tests.jobs import objects as o


def _runtime_default_job(nodes: int = 20):
    job = o.trainjob("sweep", "uid-sweep", num_nodes=nodes)
    del job["spec"]["trainer"]["resourcesPerNode"]  # the runtime's default GPUs apply
    return job


def _record(job, pods, wl=None, groups=()):
    index = OwnershipIndex()
    index.upsert(TRAINJOB, job)
    if wl is not None:
        index.upsert(WORKLOAD, wl)
    for group in groups:
        index.upsert(PODGROUP, group)
    for pod in pods:
        index.upsert(POD, pod)
    return job_record(index.tree(job["metadata"]["uid"]))


def _with_requests(pod, *containers):
    pod["spec"]["containers"] = [{"name": f"c{i}", "image": "trainer", "resources": resources}
                                 for i, resources in enumerate(containers)]
    return pod


def test_without_resources_per_node_the_member_pods_give_the_size():
    job = _runtime_default_job()
    wl = o.workload(job)
    group = o.pod_group(job, wl)
    pods = [_with_requests(pod, {"requests": {"nvidia.com/gpu": "8", "cpu": "32"}}, {"limits": {"cpu": "1"}})
            for pod in o.pods(job, 20, group=group)]

    record = _record(job, pods, wl, [group])

    assert record.gpus_per_node == 8
    assert record.resources_per_node == {"nvidia.com/gpu": "8", "cpu": "33"}


def test_the_trainer_node_pods_decide_not_the_launcher():
    job = _runtime_default_job(2)
    launcher = _with_requests(o.pod(job, 0, rjob="launcher"), {"requests": {"cpu": "1"}})
    nodes = [_with_requests(o.pod(job, i), {"limits": {"nvidia.com/gpu": "4"}}) for i in range(2)]

    assert _record(job, [launcher, *nodes]).gpus_per_node == 4


def test_resources_per_node_win_over_the_pods():
    job = o.trainjob("sized", "uid-sized", gpus=2)
    pods = [_with_requests(o.pod(job, 0), {"requests": {"nvidia.com/gpu": "8"}})]

    assert _record(job, pods).gpus_per_node == 2


def test_no_pods_and_no_resources_is_zero_not_a_guess():
    assert _record(_runtime_default_job(), []).gpus_per_node == 0
