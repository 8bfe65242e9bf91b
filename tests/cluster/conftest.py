"""Fixtures shared by the cluster app's tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def sandbox_with(settings):
    """Start API-only sandboxes with extra arguments (``start(*args)``) and point the portal's gateway at the last
    one; returns that gateway. Every sandbox started is stopped after the test."""
    from sandbox.testing import SandboxProcess
    from trainer_portal.kube.client import get_gateway, reset_gateway

    started = []

    def start(*args: str):
        process = SandboxProcess(topology="none", controllers=False, extra_args=list(args)).start()
        started.append(process)
        settings.KUBE_CONFIG_PATH = process.kubeconfig
        settings.KUBE_CONTEXT = ""
        settings.KUBE_IN_CLUSTER = False
        reset_gateway()
        return get_gateway()

    yield start
    for process in started:
        process.stop()
    reset_gateway()
