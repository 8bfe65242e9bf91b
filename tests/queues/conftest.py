"""Fixtures of the queues tests: a Kueue sandbox (one per module), a gateway to it, the queue watcher over it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from sandbox.testing import SandboxProcess
from tests.sandbox.controllers_support import demo_runtime, simulated_cluster, trainjob

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"


@pytest.fixture
def dana(django_user_model):
    """A data scientist whose group ``team-a-ml`` is granted namespace team-a."""
    from django.contrib.auth.models import Group

    from tests.jobs.factories import grant

    user = django_user_model.objects.create_user("dana", password="dana-password-1")
    user.groups.add(Group.objects.get(name="data-scientist"))
    grant("team-a-ml", "team-a")
    user.groups.add(Group.objects.get(name="team-a-ml"))
    return user


@pytest.fixture(scope="module")
def kueue_sandbox() -> Iterator[SandboxProcess]:
    with simulated_cluster(SANDBOX_KUEUE="1") as process:
        yield process


class Kueue:
    """Builders over the module's Kueue sandbox through its HTTP API; names unique to one test."""

    def __init__(self, process: SandboxProcess, gateway):
        self.process, self.gateway = process, gateway
        self.suffix = uuid.uuid4().hex[:6]

    def _post(self, path: str, body: dict) -> dict:
        return self.gateway.request("POST", path, body=body)

    def namespace(self, team: str) -> str:
        name = f"{team}-{self.suffix}"
        self._post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        return name

    def flavor(self, name: str = "default") -> str:
        name = f"{name}-{self.suffix}"
        self._post(f"/apis/{GROUP}/{VERSION}/resourceflavors", {"apiVersion": f"{GROUP}/{VERSION}",
                                                               "kind": "ResourceFlavor", "metadata": {"name": name},
                                                               "spec": {}})
        return name

    def cluster_queue(self, name: str, flavor: str, gpus: int, *, cohort: str | None = None,
                      borrowing: int | None = None, lending: int | None = None,
                      preemption: dict | None = None) -> str:
        name = f"{name}-{self.suffix}"
        gpu = {"name": "nvidia.com/gpu", "nominalQuota": gpus}
        if borrowing is not None:
            gpu["borrowingLimit"] = borrowing
        if lending is not None:
            gpu["lendingLimit"] = lending
        spec = {"queueingStrategy": "BestEffortFIFO", "namespaceSelector": {},
                "resourceGroups": [{"coveredResources": ["nvidia.com/gpu", "cpu", "memory"],
                                    "flavors": [{"name": flavor, "resources": [
                                        gpu, {"name": "cpu", "nominalQuota": 1000},
                                        {"name": "memory", "nominalQuota": "100Ti"}]}]}]}
        if cohort:
            spec["cohortName"] = f"{cohort}-{self.suffix}"
        if preemption:
            spec["preemption"] = preemption
        self._post(f"/apis/{GROUP}/{VERSION}/clusterqueues", {"apiVersion": f"{GROUP}/{VERSION}",
                                                             "kind": "ClusterQueue", "metadata": {"name": name},
                                                             "spec": spec})
        return name

    def local_queue(self, namespace: str, cluster_queue: str, name: str = "team-queue") -> str:
        self._post(f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/localqueues",
                   {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LocalQueue", "metadata": {"name": name},
                    "spec": {"clusterQueue": cluster_queue}})
        return name

    def priority_class(self, name: str, value: int) -> str:
        name = f"{name}-{self.suffix}"
        self._post(f"/apis/{GROUP}/{VERSION}/workloadpriorityclasses",
                   {"apiVersion": f"{GROUP}/{VERSION}", "kind": "WorkloadPriorityClass", "metadata": {"name": name},
                    "value": value})
        return name

    def submit(self, namespace: str, name: str, nodes: int, queue: str = "team-queue", *,
               duration: float | None = None, priority: str | None = None) -> dict:
        job = trainjob(name, "torch-gang-zone", num_nodes=nodes, duration=duration, namespace=namespace)
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue,
                                     **({"kueue.x-k8s.io/priority-class": priority} if priority else {})}
        return self._post(f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs", job)

    def workloads(self, namespace: str) -> list[dict]:
        return self.gateway.request("GET", f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/workloads")["items"]

    def condition(self, namespace: str, job_uid: str, kind: str) -> str | None:
        for workload in self.workloads(namespace):
            if (workload["metadata"].get("labels") or {}).get("kueue.x-k8s.io/job-uid") == job_uid:
                for c in (workload.get("status") or {}).get("conditions") or []:
                    if c["type"] == kind:
                        return c["status"]
                return "None"
        return None

    def wait(self, predicate, timeout: float = 30.0):
        return self.process.wait_until(predicate, timeout=timeout, interval=0.1)


@pytest.fixture
def kueue(kueue_sandbox: SandboxProcess) -> Iterator[Kueue]:
    from trainer_portal.kube.client import build_gateway
    from trainer_portal.kube.config import KubeSettings

    gateway = build_gateway(KubeSettings(config_path=kueue_sandbox.kubeconfig))
    helper = Kueue(kueue_sandbox, gateway)
    try:
        helper._post("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes",
                     demo_runtime("torch_gang_zone.yaml"))  # 8 GPUs per node
    except Exception as error:  # already there from an earlier test of the module
        assert getattr(error, "status", None) == 409
    yield helper
    kueue_sandbox.clear_faults()
