"""Everything the simulated cluster writes reads back through the official client's typed models, as on a real
cluster, and a data scientist's everyday client calls work against it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError

from tests.sandbox.controllers_support import Cluster, demo_runtime, is_true, simulated_cluster

TRAINER = ("trainer.kubeflow.org", "v1alpha1")
GENERATED = "sandbox.trainer-portal.io/generated"


@pytest.fixture(scope="module")
def busy() -> Iterator[Cluster]:
    """A demo cluster whose workload generator has completed and failed jobs and still runs others."""
    env = {"SANDBOX_GENERATOR": "1", "SANDBOX_GENERATOR_RATE": "600", "SANDBOX_GENERATOR_MAX_ACTIVE": "6",
           "SANDBOX_GENERATOR_MIN_SECONDS": "1", "SANDBOX_GENERATOR_MAX_SECONDS": "3",
           "SANDBOX_GENERATOR_FAILURE_RATIO": "0.3", "SANDBOX_GENERATOR_STORY_SPEED": "10"}
    with simulated_cluster(**env) as process:
        cluster = Cluster(process)

        def jobs() -> list[dict]:
            return cluster.client.list("/apis/trainer.kubeflow.org/v1alpha1/trainjobs")["items"]

        def preempted() -> bool:
            groups = cluster.client.list("/apis/scheduling.k8s.io/v1beta1/podgroups")["items"]
            return any(is_true(g, "DisruptionTarget") for g in groups)

        # Completions, failures, and the storyline's preemption (played ten times faster) have all happened.
        cluster.wait(lambda: sum(is_true(j, "Complete") for j in jobs()) >= 3
                     and any(is_true(j, "Failed") for j in jobs()) and preempted(), timeout=90)
        cluster.client.create("/apis/coordination.k8s.io/v1/namespaces/default/leases", {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "tracker"},
            "spec": {"holderIdentity": "tracker-0", "leaseDurationSeconds": 15}})
        cluster.client.create("/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "research"},
            "value": 100, "description": "research jobs"})
        yield cluster


@pytest.fixture(scope="module")
def api(busy: Cluster) -> Iterator[k8s.ApiClient]:
    client = k8s_config.new_client_from_config(config_file=busy.process.kubeconfig)
    yield client
    client.close()


def _still_there(read, items: list) -> list:
    """Return `read(name, namespace)` of every listed item not deleted since (the cluster is live); at least one."""
    found = []
    for item in items:
        try:
            found.append(read(item.metadata.name, item.metadata.namespace))
        except ApiException as error:
            assert error.status == 404
    assert found
    return found


def test_every_core_object_deserializes_with_the_typed_models(api: k8s.ApiClient):
    core = k8s.CoreV1Api(api)
    pods = core.list_pod_for_all_namespaces().items
    assert {p.status.phase for p in pods} >= {"Succeeded", "Failed"}
    read_back = 0
    for pod in pods:  # the cluster is live: a pod listed a moment ago may be gone or recreated under its name
        try:
            read = core.read_namespaced_pod(pod.metadata.name, pod.metadata.namespace)
        except ApiException as error:
            assert error.status == 404
            continue
        read_back += 1
        assert read.metadata.name == pod.metadata.name
        for status in read.status.container_statuses or []:
            assert status.image and status.image_id and status.container_id.startswith("containerd://")
            assert status.ready in (True, False) and status.restart_count == 0 and status.state
        if pod.status.phase in ("Running", "Succeeded", "Failed"):
            assert read.status.pod_ip and read.status.host_ip and read.status.start_time
    assert read_back
    nodes = core.list_node().items
    assert len(nodes) == 64
    assert core.read_node(nodes[0].metadata.name).status.node_info.kubelet_version
    events = core.list_event_for_all_namespaces().items
    assert "Scheduled" in {e.reason for e in events}
    for event in events[:50]:  # Events are never deleted here
        assert core.read_namespaced_event(event.metadata.name, event.metadata.namespace).involved_object.kind
    assert {n.metadata.name for n in core.list_namespace().items} >= {"default", "kube-system"}
    assert core.read_namespace("default").status.phase == "Active"


def test_scheduling_and_coordination_objects_deserialize_with_the_typed_models(api: k8s.ApiClient):
    scheduling = k8s.SchedulingV1beta1Api(api)
    workloads = scheduling.list_workload_for_all_namespaces().items
    groups = scheduling.list_pod_group_for_all_namespaces().items
    assert workloads and groups
    for read in _still_there(scheduling.read_namespaced_workload, workloads):
        assert read.spec.controller_ref.kind == "TrainJob" and read.spec.pod_group_templates
    for read in _still_there(scheduling.read_namespaced_pod_group, groups):
        assert read.spec.workload_ref.workload_name and read.spec.scheduling_policy
        assert any(o.kind == "TrainJob" and o.controller for o in read.metadata.owner_references)
    classes = k8s.SchedulingV1Api(api).list_priority_class().items
    assert "research" in {c.metadata.name for c in classes}
    assert k8s.SchedulingV1Api(api).read_priority_class("research").value == 100
    leases = k8s.CoordinationV1Api(api).list_lease_for_all_namespaces().items
    assert k8s.CoordinationV1Api(api).read_namespaced_lease("tracker", "default").spec.holder_identity == "tracker-0"
    assert leases


def test_custom_resources_read_through_custom_objects_and_the_dynamic_client(api: k8s.ApiClient):
    custom = k8s.CustomObjectsApi(api)
    runtimes = custom.list_cluster_custom_object(*TRAINER, "clustertrainingruntimes")["items"]
    assert runtimes and custom.get_cluster_custom_object(*TRAINER, "clustertrainingruntimes",
                                                         runtimes[0]["metadata"]["name"])["spec"]
    jobs = custom.list_custom_object_for_all_namespaces(*TRAINER, "trainjobs")["items"]
    job = custom.get_namespaced_custom_object(*TRAINER, jobs[0]["metadata"]["namespace"], "trainjobs",
                                              jobs[0]["metadata"]["name"])
    assert job["metadata"]["uid"] == jobs[0]["metadata"]["uid"]
    with tempfile.TemporaryDirectory() as cache:
        dynamic = DynamicClient(api, cache_file=os.path.join(cache, "discovery.json"))
        kinds = [("v1", "Pod"), ("v1", "Node"), ("v1", "Event"), ("v1", "Namespace"),
                 ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
                 ("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime"),
                 ("scheduling.k8s.io/v1beta1", "Workload"), ("scheduling.k8s.io/v1beta1", "PodGroup"),
                 ("coordination.k8s.io/v1", "Lease"), ("scheduling.k8s.io/v1", "PriorityClass")]
        for api_version, kind in kinds:
            resource = dynamic.resources.get(api_version=api_version, kind=kind)
            items = resource.get().items
            assert items, kind
            for item in items:  # the first one still there (the cluster is live)
                try:
                    read = resource.get(name=item.metadata.name, namespace=item.metadata.namespace) \
                        if resource.namespaced else resource.get(name=item.metadata.name)
                except NotFoundError:
                    continue
                assert read.metadata.name == item.metadata.name and read.kind == kind
                break
            else:
                raise AssertionError(f"no {kind} could be read back")


def test_a_data_scientists_everyday_calls_work(busy: Cluster, api: k8s.ApiClient):
    custom, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    busy.client.create("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", {
        **demo_runtime("torch_distributed.yaml"), "metadata": {"name": "torch-everyday"}})
    names = {r["metadata"]["name"] for r in custom.list_cluster_custom_object(*TRAINER, "clustertrainingruntimes")[
        "items"]}
    assert "torch-everyday" in names
    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "my-finetune", "annotations": {"sandbox.trainer-portal.io/duration-seconds": "2"}},
           "spec": {"runtimeRef": {"name": "torch-everyday"},
                    "trainer": {"numNodes": 2, "image": "ghcr.io/acme/finetune:1",
                                "resourcesPerNode": {"requests": {"nvidia.com/gpu": 8},
                                                     "limits": {"nvidia.com/gpu": 8}}}}}
    custom.create_namespaced_custom_object(*TRAINER, "default", "trainjobs", job)

    def steps() -> list:
        return core.list_namespaced_pod("default", label_selector="jobset.sigs.k8s.io/jobset-name=my-finetune").items

    running = busy.wait(lambda: len(s := steps()) == 2 and all(p.status.phase == "Running" for p in s) and s)
    assert {p.spec.containers[0].image for p in running} == {"ghcr.io/acme/finetune:1"}
    assert {p.spec.containers[0].resources.limits["nvidia.com/gpu"] for p in running} == {"8"}
    done = busy.wait(lambda: is_true(j := custom.get_namespaced_custom_object(
        *TRAINER, "default", "trainjobs", "my-finetune"), "Complete") and j)
    assert done["status"]["jobsStatus"][0]["succeeded"] == 1
    events = core.list_namespaced_event("default", field_selector="involvedObject.kind=Pod").items
    assert {e.involved_object.name for e in events if e.reason == "Scheduled"} >= {p.metadata.name for p in running}
    listed = custom.list_namespaced_custom_object(*TRAINER, "default", "trainjobs")["items"]
    assert "my-finetune" in {j["metadata"]["name"] for j in listed}
    custom.delete_namespaced_custom_object(*TRAINER, "default", "trainjobs", "my-finetune")
    busy.wait(lambda: not steps() and "my-finetune" not in {
        j["metadata"]["name"] for j in custom.list_namespaced_custom_object(*TRAINER, "default", "trainjobs")["items"]})
