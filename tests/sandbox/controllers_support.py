"""Helpers for the simulated-cluster tests: a sandbox with controllers, object builders and readers."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import yaml

from sandbox.controllers.client import ApiError, Client
from sandbox.testing import SandboxProcess

TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
RUNTIMES = f"{TRAINER}/clustertrainingruntimes"
DEMO_RUNTIMES = Path(__file__).resolve().parents[2] / "sandbox" / "demo_runtimes"
DURATION = "sandbox.trainer-portal.io/duration-seconds"
FAIL_AFTER = "sandbox.trainer-portal.io/fail-after-seconds"


@contextlib.contextmanager
def simulated_cluster(kube_version: str = "1.37", gates: dict[str, bool] | None = None,
                      **env: str) -> Iterator[SandboxProcess]:
    """Run a demo-topology sandbox with the controllers on (pods start 0.1 s after binding), `gates` set on its
    API server."""
    settings = {"SANDBOX_POD_START_DELAY": "0.1", "SANDBOX_GENERATOR": "0", **env}
    with SandboxProcess(topology="demo", controllers=True, kube_version=kube_version, env=settings,
                        gates=gates) as process:
        yield process


def demo_runtime(file_name: str) -> dict:
    """Return a runtime from sandbox/demo_runtimes/."""
    return yaml.safe_load((DEMO_RUNTIMES / file_name).read_text())


def trainjob(name: str, runtime: str, *, num_nodes: int | None = None, gpus: str | None = None,
             duration: float | None = None, fail_after: float | None = None, suspend: bool | None = None,
             runtime_kind: str | None = None, namespace: str = "default") -> dict:
    """Return a TrainJob manifest."""
    trainer: dict = {}
    if num_nodes is not None:
        trainer["numNodes"] = num_nodes
    if gpus is not None:
        trainer["resourcesPerNode"] = {"requests": {"nvidia.com/gpu": gpus}, "limits": {"nvidia.com/gpu": gpus}}
    annotations = {}
    if duration is not None:
        annotations[DURATION] = str(duration)
    if fail_after is not None:
        annotations[FAIL_AFTER] = str(fail_after)
    spec: dict = {"runtimeRef": {"name": runtime}}
    if runtime_kind:
        spec["runtimeRef"]["kind"] = runtime_kind
    if trainer:
        spec["trainer"] = trainer
    if suspend is not None:
        spec["suspend"] = suspend
    metadata: dict = {"name": name, "namespace": namespace}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": metadata, "spec": spec}


class Cluster:
    """Read/write helpers over one sandbox (namespace `default`)."""

    def __init__(self, process: SandboxProcess, scheduling_version: str = "v1beta1"):
        self.process = process
        self.client = Client(process.url)
        self.scheduling = f"/apis/scheduling.k8s.io/{scheduling_version}/namespaces/default"

    def create_runtime(self, runtime: dict) -> dict:
        return self.client.create(RUNTIMES, runtime)

    def submit(self, job: dict) -> dict:
        return self.client.create(f"{TRAINER}/namespaces/{job['metadata']['namespace']}/trainjobs", job)

    def delete_trainjob(self, name: str) -> None:
        self.client.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}")

    def trainjob(self, name: str) -> dict | None:
        items = self.client.list(f"{TRAINER}/namespaces/default/trainjobs",
                                 fieldSelector=f"metadata.name={name}")["items"]
        return items[0] if items else None

    def pods(self, trainjob: str | None = None) -> list[dict]:
        query = {"labelSelector": f"jobset.sigs.k8s.io/jobset-name={trainjob}"} if trainjob else {}
        return self.client.list("/api/v1/namespaces/default/pods", **query)["items"]

    def workloads(self) -> list[dict]:
        return self.client.list(f"{self.scheduling}/workloads")["items"]

    def pod_groups(self) -> list[dict]:
        return self.client.list(f"{self.scheduling}/podgroups")["items"]

    def events(self) -> list[dict]:
        return self.client.list("/api/v1/namespaces/default/events")["items"]

    def nodes(self) -> dict[str, dict]:
        return {n["metadata"]["name"]: n for n in self.client.list("/api/v1/nodes")["items"]}

    def wait(self, predicate, timeout: float = 30.0):
        """Poll `predicate()` until truthy (API errors count as not yet); return its value."""

        def safe():
            try:
                return predicate()
            except ApiError:
                return None

        return self.process.wait_until(safe, timeout=timeout, interval=0.1)


def condition(obj: dict | None, condition_type: str) -> dict | None:
    """Return the status condition of that type, or None."""
    for item in ((obj or {}).get("status") or {}).get("conditions") or []:
        if item.get("type") == condition_type:
            return item
    return None


def is_true(obj: dict | None, condition_type: str) -> bool:
    found = condition(obj, condition_type)
    return bool(found and found.get("status") == "True")
