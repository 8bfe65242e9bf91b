"""Fixtures for gateway tests: one sandbox API server per session (API only, no nodes, no controllers)."""

from __future__ import annotations

import pytest

from sandbox.testing import SandboxProcess
from trainer_portal import kube


@pytest.fixture(scope="session")
def sandbox():
    """A running sandbox cluster (started once per session)."""
    with SandboxProcess(topology="none", controllers=False, extra_args=["--bookmark-interval", "0.5"]) as process:
        yield process


@pytest.fixture
def cluster(sandbox, settings):
    """Point the gateway at a freshly reset sandbox (no faults); yields the sandbox."""
    sandbox.clear_faults()
    sandbox.reset()
    settings.KUBE_CONFIG_PATH = sandbox.kubeconfig
    settings.KUBE_CONTEXT = ""
    settings.KUBE_IN_CLUSTER = False
    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 5.0
    kube.reset_gateway()
    yield sandbox
    sandbox.clear_faults()
    kube.reset_gateway()


@pytest.fixture
def gateway(cluster):
    """The gateway for the sandbox, with a private discovery cache."""
    return kube.get_gateway()


def runtime(name: str, *, num_nodes: int = 1, image: str = "busybox") -> dict:
    """Return a small valid ClusterTrainingRuntime manifest."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": num_nodes, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {"template": {"spec": {"containers": [{"name": "node", "image": image}]}}},
                            },
                        }
                    ]
                }
            },
        },
    }
