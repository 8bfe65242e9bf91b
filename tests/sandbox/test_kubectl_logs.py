"""The simulated cluster as kubectl and the official client see it: pods/log fed by the kubelet simulation (tail,
since, timestamps, follow to the end, previous, container errors), `Completed` pods, node Leases, addresses and
conditions."""

from __future__ import annotations

import re

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.sandbox.api_support import kubectl_for
from tests.sandbox.controllers_support import demo_runtime, trainjob

STEP = re.compile(r"^\[rank (\d+)\] step (\d+) loss=([0-9.]+) ")
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ")


@pytest.fixture
def kubectl(sim_cluster, tmp_path):
    return kubectl_for(sim_cluster.process.kubeconfig, str(tmp_path))


@pytest.fixture
def core(sim_cluster):
    api = k8s_config.new_client_from_config(config_file=sim_cluster.process.kubeconfig)
    yield k8s.CoreV1Api(api)
    api.close()


def _running_pods(cluster, name: str, count: int) -> list[dict]:
    return cluster.wait(lambda: (pods := cluster.pods(name)) and len(pods) == count
                        and all(p["status"].get("phase") in ("Running", "Succeeded") for p in pods) and pods)


def _by_rank(pods: list[dict]) -> dict[str, str]:
    return {p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]: p["metadata"]["name"] for p in pods}


def test_logs_show_training_steps_with_a_falling_loss_and_the_rank(sim_cluster, kubectl):
    sim_cluster.create_runtime(demo_runtime("torch_distributed.yaml"))
    sim_cluster.submit(trainjob("train", "torch-distributed", num_nodes=2, duration=6))
    pods = _by_rank(_running_pods(sim_cluster, "train", 2))
    sim_cluster.wait(lambda: all(p["status"].get("phase") == "Succeeded" for p in sim_cluster.pods("train")))
    for rank, pod in pods.items():
        result = kubectl("logs", pod)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0].startswith(f"[rank {rank}] starting node for TrainJob train")
        steps = [STEP.match(line) for line in lines if STEP.match(line)]
        assert len(steps) >= 4 and all(m.group(1) == rank for m in steps)
        losses = [float(m.group(3)) for m in steps]
        assert losses[-1] < losses[0]
        assert lines[-1] == "Completed"
    listed = kubectl("get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=train")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert [row[2] for row in rows] == ["Completed", "Completed"], listed.stdout


def test_logs_tail_since_timestamps_limit_and_errors(sim_cluster, kubectl, core):
    sim_cluster.create_runtime(demo_runtime("torch_distributed.yaml"))
    sim_cluster.submit(trainjob("opts", "torch-distributed", duration=5))
    pod = _running_pods(sim_cluster, "opts", 1)[0]["metadata"]["name"]
    sim_cluster.wait(lambda: sim_cluster.pods("opts")[0]["status"].get("phase") == "Succeeded")
    full = kubectl("logs", pod).stdout.splitlines()
    tail = kubectl("logs", pod, "--tail=2")
    assert tail.stdout.splitlines() == full[-2:] == [full[-2], "Completed"]
    stamped = kubectl("logs", pod, "--timestamps", "--tail=3").stdout.splitlines()
    assert len(stamped) == 3 and all(STAMP.match(line) for line in stamped)
    assert [STAMP.sub("", line) for line in stamped] == full[-3:]
    assert kubectl("logs", pod, "--since=1h").stdout.splitlines() == full
    recent = core.read_namespaced_pod_log(pod, "default", since_seconds=1)
    assert len(recent.splitlines()) < len(full)
    limited = core.read_namespaced_pod_log(pod, "default", limit_bytes=10)
    assert limited == "\n".join(full)[:10]
    previous = kubectl("logs", pod, "--previous")
    assert previous.returncode != 0
    assert f'previous terminated container "node" in pod "{pod}" not found' in previous.stderr
    wrong = kubectl("logs", pod, "-c", "sidecar")
    assert wrong.returncode != 0 and f"container sidecar is not valid for pod {pod}" in wrong.stderr
    with pytest.raises(k8s.ApiException) as invalid:
        core.read_namespaced_pod_log(pod, "default", tail_lines=-1)
    assert invalid.value.status == 422 and "tailLines" in invalid.value.body


def test_follow_streams_until_the_container_ends(sim_cluster, kubectl):
    sim_cluster.create_runtime(demo_runtime("torch_distributed.yaml"))
    sim_cluster.submit(trainjob("follow", "torch-distributed", duration=4))
    pod = _running_pods(sim_cluster, "follow", 1)[0]["metadata"]["name"]
    result = kubectl("logs", "-f", pod, timeout=60)  # returns by itself once the container has ended
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "Completed"
    steps = [int(STEP.match(line).group(2)) for line in lines if STEP.match(line)]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 2  # no gap, no repeat
    assert lines == kubectl("logs", pod).stdout.splitlines()


def test_logs_of_a_pending_pod_say_it_is_waiting(sim_cluster, kubectl):
    sim_cluster.create_runtime(demo_runtime("torch_distributed.yaml"))
    # More GPUs than any node has: the pod exists but is never bound.
    sim_cluster.submit(trainjob("stuck", "torch-distributed", gpus="64"))
    pod = sim_cluster.wait(lambda: sim_cluster.pods("stuck"))[0]["metadata"]["name"]
    result = kubectl("logs", pod)
    assert result.returncode == 0 and result.stdout == ""


def test_nodes_have_leases_addresses_and_the_usual_conditions(sim_cluster, core):
    api = k8s.CoordinationV1Api(core.api_client)
    leases = sim_cluster.wait(lambda: (items := api.list_namespaced_lease("kube-node-lease").items)
                              and len(items) == 64 and items, timeout=40)
    by_name = {lease.metadata.name: lease for lease in leases}
    nodes = core.list_node().items
    assert set(by_name) == {n.metadata.name for n in nodes}
    node = next(n for n in nodes if n.metadata.name == "gpu-a1-r1-n1")
    lease = by_name["gpu-a1-r1-n1"]
    assert lease.spec.holder_identity == "gpu-a1-r1-n1" and lease.spec.lease_duration_seconds == 40
    assert lease.metadata.owner_references[0].uid == node.metadata.uid
    first = lease.spec.renew_time
    renewed = sim_cluster.wait(
        lambda: (t := api.read_namespaced_lease("gpu-a1-r1-n1", "kube-node-lease").spec.renew_time) != first and t,
        timeout=30)
    assert renewed > first
    # The NotReady node's kubelet is "dead": its lease is never renewed.
    assert by_name["gpu-b1-r2-n3"].spec.renew_time.year == 2026 and \
        by_name["gpu-b1-r2-n3"].spec.renew_time < first
    addresses = {a.type: a.address for a in node.status.addresses}
    assert addresses["Hostname"] == "gpu-a1-r1-n1" and re.match(r"^10\.\d+\.\d+\.\d+$", addresses["InternalIP"])
    assert len({n.status.addresses[0].address for n in nodes}) == 64
    conditions = {c.type: c.status for c in node.status.conditions}
    assert conditions == {"NetworkUnavailable": "False", "MemoryPressure": "False", "DiskPressure": "False",
                          "PIDPressure": "False", "Ready": "True"}


def test_kubectl_events_for_a_trainjob_shows_the_controllers_events(sim_cluster, kubectl):
    sim_cluster.submit(trainjob("orphan", "no-such-runtime"))
    sim_cluster.wait(lambda: any(e["reason"] == "TrainJobResourcesCreationFailed" for e in sim_cluster.events()))
    result = kubectl("events", "--for", "trainjob/orphan")
    assert result.returncode == 0, result.stderr
    assert "TrainJobResourcesCreationFailed" in result.stdout and "TrainJob/orphan" in result.stdout, result.stdout
