"""Versions are decided by discovery: the same code picks v1beta1 on a 1.37 cluster and v1alpha2 on a 1.36 one."""

from __future__ import annotations

import pytest

from sandbox.testing import SandboxProcess
from trainer_portal import kube
from trainer_portal.kube.client import build_gateway
from trainer_portal.kube.config import KubeSettings


@pytest.fixture(scope="module")
def sandbox_136():
    with SandboxProcess(topology="none", controllers=False, kube_version="1.36") as process:
        yield process


def test_a_136_cluster_gets_v1alpha2_scheduling_objects(sandbox_136):
    gateway = build_gateway(KubeSettings(config_path=sandbox_136.kubeconfig))
    assert gateway.served_versions(kube.SCHEDULING_GROUP) == ["v1", "v1alpha2"]
    assert gateway.resolve(kube.WORKLOAD).version == "v1alpha2"
    assert gateway.resolve(kube.PODGROUP).version == "v1alpha2"
    assert gateway.server_version()["minor"] == "36"


def test_a_137_cluster_gets_v1beta1(gateway):
    assert gateway.resolve(kube.WORKLOAD).version == "v1beta1"
    assert gateway.resolve(kube.PODGROUP).version == "v1beta1"
