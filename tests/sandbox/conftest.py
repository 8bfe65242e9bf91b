"""Fixtures for the sandbox tests.

The API conformance suite gets one sandbox subprocess per session (``sandbox``), reset before each test
(``cluster``). The simulated-cluster tests get a demo sandbox with the controllers on, one per test module
(``sim``), reset before each test (``sim_cluster``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.dynamic import DynamicClient

from sandbox.testing import SandboxProcess
from tests.sandbox.controllers_support import Cluster, simulated_cluster

VENV_PYTHON = os.path.join(os.path.dirname(__file__), "..", "..", ".venv", "bin", "python")


@pytest.fixture(scope="session")
def sandbox() -> Iterator[SandboxProcess]:
    """A running sandbox (API only: topology none, no controllers)."""
    with SandboxProcess(topology="none", controllers=False, extra_args=["--bookmark-interval", "0.5"]) as proc:
        yield proc


@pytest.fixture(scope="session")
def sandbox_136() -> Iterator[SandboxProcess]:
    """A sandbox started as a Kubernetes 1.36 cluster (scheduling.k8s.io/v1alpha2)."""
    with SandboxProcess(topology="none", controllers=False, kube_version="1.36") as proc:
        yield proc


@pytest.fixture
def cluster(sandbox: SandboxProcess) -> Iterator[SandboxProcess]:
    """The session sandbox, reset to its start-up state and without faults."""
    sandbox.clear_faults()
    sandbox.reset()
    yield sandbox
    sandbox.clear_faults()


@pytest.fixture(scope="module")
def sim() -> Iterator[SandboxProcess]:
    """A demo-topology sandbox with the controllers on, started once per test module that uses it."""
    with simulated_cluster() as process:
        yield process


@pytest.fixture
def sim_cluster(sim: SandboxProcess) -> Iterator[Cluster]:
    """Helpers over the module's simulated cluster, reset to its start-up state and without faults."""
    sim.clear_faults()
    sim.reset()
    yield Cluster(sim)
    sim.clear_faults()


@pytest.fixture
def api_client(cluster: SandboxProcess) -> Iterator[k8s.ApiClient]:
    client = k8s_config.new_client_from_config(config_file=cluster.kubeconfig)
    yield client
    client.close()


@pytest.fixture
def core(api_client: k8s.ApiClient) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api_client)


@pytest.fixture
def custom(api_client: k8s.ApiClient) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(api_client)


@pytest.fixture(scope="session")
def discovery_cache_dir() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="sandbox-discovery-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def dynamic(api_client: k8s.ApiClient, discovery_cache_dir: str) -> DynamicClient:
    """A DynamicClient with a private discovery cache file (fresh per test, since tests create CRDs)."""
    return DynamicClient(api_client, cache_file=os.path.join(discovery_cache_dir, f"{uuid.uuid4().hex}.json"))
