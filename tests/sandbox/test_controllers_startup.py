"""JobSet startup order through a running demo sandbox: dependsOn (Ready / Complete) and startupPolicyOrder InOrder,
and the launcher+node gang that can never start on a real cluster."""

from __future__ import annotations

import copy

import pytest

from tests.sandbox.controllers_support import Cluster, condition, demo_runtime, is_true, trainjob

SCHEDULED = "PodGroupInitiallyScheduled"


@pytest.fixture
def cluster(sim_cluster: Cluster) -> Cluster:
    """The module's simulated cluster, freshly reset (``sim_cluster`` in tests/sandbox/conftest.py)."""
    return sim_cluster


def _deepspeed(name: str, scheduling: dict | None) -> dict:
    runtime = demo_runtime("deepspeed_distributed.yaml")  # launcher dependsOn node (Ready), runLauncherAsNode
    runtime["metadata"]["name"] = name
    if scheduling is not None:
        runtime["spec"]["scheduling"] = scheduling
    return runtime


def _by_rjob(pods: list[dict]) -> dict[str, list[dict]]:
    result: dict[str, list[dict]] = {}
    for pod in pods:
        result.setdefault(pod["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"], []).append(pod)
    return result


def _ready_since(pod: dict) -> str | None:
    ready = condition(pod, "Ready")
    return ready["lastTransitionTime"] if ready and ready["status"] == "True" else None


def _hold_pods_not_ready(cluster: Cluster) -> None:
    """Make the kubelet's first few status writes fail (it retries every 0.5 s), so pods stay not Ready a while."""
    cluster.process.inject_fault(method="PUT", path="^/api/v1/namespaces/default/pods/.*/status$", action="status",
                                 status=503, count=6)


def test_a_launcher_and_node_gang_stays_pending_for_ever_and_says_why(cluster: Cluster):
    cluster.create_runtime(_deepspeed("ds-gang", {"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"],
                                                                       "schedulingPolicy": {"gang": {}}}]}))
    cluster.submit(trainjob("stuck", "ds-gang", num_nodes=4, gpus="8"))
    (group,) = cluster.wait(lambda: cluster.pod_groups())
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}  # 1 launcher + 3 nodes

    event = cluster.wait(lambda: next((e for e in cluster.events() if e["reason"] == "StartupOrderDeadlock"
                                       and e["involvedObject"]["kind"] == "PodGroup"), None))
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == group["metadata"]["name"]
    assert event["message"] == (
        f"PodGroup {group['metadata']['name']} (gang, minCount 4) waits for pods that JobSet will not create before "
        f"`node` is Ready: ReplicatedJob `launcher` dependsOn `node` (Ready) and both are in this gang, so at most 3 "
        f"of 4 pods can exist and the gang never schedules")
    assert any(e["reason"] == "StartupOrderDeadlock" and e["involvedObject"]["kind"] == "TrainJob"
               and e["involvedObject"]["name"] == "stuck" for e in cluster.events())

    # An ungrouped probe pod gets bound: the scheduler has run passes since, and still holds the gang back.
    cluster.client.create("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    cluster.wait(lambda: any(p["spec"].get("nodeName") for p in cluster.pods() if p["metadata"]["name"] == "probe"))
    pods = _by_rjob(cluster.pods("stuck"))
    assert set(pods) == {"node"} and len(pods["node"]) == 3
    assert not any(p["spec"].get("nodeName") for p in pods["node"])
    assert condition(cluster.pod_groups()[0], SCHEDULED) is None  # PreEnqueue: fewer than minCount pods exist


def test_a_launcher_waits_until_every_node_pod_is_ready(cluster: Cluster):
    separate = {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}},
                                   {"targetReplicatedJobs": ["launcher"], "schedulingPolicy": {"basic": {}}}]}
    cluster.create_runtime(_deepspeed("ds-split", separate))
    _hold_pods_not_ready(cluster)
    cluster.submit(trainjob("ordered", "ds-split", num_nodes=3, gpus="8"))
    bound = cluster.wait(lambda: len(p := cluster.pods("ordered")) == 2
                         and all(x["spec"].get("nodeName") for x in p) and p)
    assert not any(_ready_since(p) for p in bound)
    assert set(_by_rjob(cluster.pods("ordered"))) == {"node"}  # the kubelet is held back: nodes are not Ready yet
    launcher = cluster.wait(lambda: _by_rjob(cluster.pods("ordered")).get("launcher"))[0]
    nodes = _by_rjob(cluster.pods("ordered"))["node"]
    assert len(nodes) == 2
    assert all(_ready_since(n) and _ready_since(n) <= launcher["metadata"]["creationTimestamp"] for n in nodes)
    assert not any(e["reason"] == "StartupOrderDeadlock" for e in cluster.events())
    cluster.wait(lambda: all(is_true(g, SCHEDULED) for g in cluster.pod_groups()) and len(cluster.pod_groups()) == 2)


def test_depends_on_complete_waits_for_the_initializers_to_succeed(cluster: Cluster):
    runtime = copy.deepcopy(demo_runtime("torchtune_gang_block.yaml"))
    runtime["metadata"]["name"] = "tune-ordered"
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][2]
    node["dependsOn"] = [{"name": "dataset-initializer", "status": "Complete"},
                         {"name": "model-initializer", "status": "Complete"}]
    cluster.create_runtime(runtime)
    cluster.submit(trainjob("tune", "tune-ordered", num_nodes=1, duration=0.5))
    trainer = cluster.wait(lambda: _by_rjob(cluster.pods("tune")).get("node"))[0]
    initializers = [p for name, pods in _by_rjob(cluster.pods("tune")).items() if name != "node" for p in pods]
    assert len(initializers) == 2
    for pod in initializers:
        assert pod["status"]["phase"] == "Succeeded"
        finished = pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
        assert finished <= trainer["metadata"]["creationTimestamp"]
    cluster.wait(lambda: is_true(cluster.trainjob("tune"), "Complete"))


def test_in_order_startup_creates_each_replicated_job_after_the_previous_one_is_ready(cluster: Cluster):
    runtime = demo_runtime("torch_distributed.yaml")
    runtime["metadata"]["name"] = "torch-in-order"
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    first = copy.deepcopy(rjobs[0])
    first["name"] = "warmup"
    first["template"]["metadata"] = {}  # not the trainer: keeps its parallelism of 1
    runtime["spec"]["template"]["spec"]["replicatedJobs"] = [first, *rjobs]
    runtime["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    cluster.create_runtime(runtime)
    _hold_pods_not_ready(cluster)
    cluster.submit(trainjob("inorder", "torch-in-order", num_nodes=2, gpus="1"))
    cluster.wait(lambda: (p := cluster.pods("inorder")) and p[0]["spec"].get("nodeName"))
    assert set(_by_rjob(cluster.pods("inorder"))) == {"warmup"}
    trainer = cluster.wait(lambda: _by_rjob(cluster.pods("inorder")).get("node"))
    (warmup,) = _by_rjob(cluster.pods("inorder"))["warmup"]
    assert _ready_since(warmup) and _ready_since(warmup) <= min(p["metadata"]["creationTimestamp"] for p in trainer)
