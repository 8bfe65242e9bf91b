"""Adopting a runtime that an earlier Trainer release accepted but v2.4.0 rejects (a 23-character ReplicatedJob
name) keeps it, with the error shown (decision D18); real sandbox over HTTP."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runtimes.models import RuntimePolicy
from runtimes.services import sync
from trainer_portal import kube
from trainer_portal.kube.client import build_gateway

from .conftest import runtime_manifest

pytestmark = pytest.mark.django_db
LONG_NAME = "evaluation-sidecar-0001"


def _legacy() -> dict:
    manifest = runtime_manifest("adopt-legacy")
    helper = {"name": LONG_NAME, "template": {"spec": {"template": {"spec": {"containers": [
        {"name": "h", "image": "busybox"}]}}}}}
    manifest["spec"]["template"]["spec"]["replicatedJobs"].append(helper)
    return manifest


def _has_crd_variants() -> bool:
    help_text = subprocess.run([sys.executable, "-m", "sandbox", "--help"], capture_output=True, text=True).stdout
    return "--trainer-crd" in help_text


def _adopt_from(gateway, admin):
    gateway.apply(gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME), body=_legacy())
    return sync.policies_adopt(actor=admin, gateway=gateway)


def test_adoption_keeps_a_runtime_broken_only_by_the_v24_rules_with_the_error_shown(cluster, gateway, admin):
    if _has_crd_variants():
        # A v2.4 sandbox refuses the name as a real cluster does; a Trainer v2.3 cluster still holds such runtimes.
        from sandbox.testing import SandboxProcess

        with SandboxProcess(topology="none", controllers=False, extra_args=["--trainer-crd", "v2.3"]) as old:
            result = _adopt_from(build_gateway(kube.KubeSettings(config_path=old.kubeconfig)), admin)
    else:
        result = _adopt_from(gateway, admin)

    assert result.created == ["adopt-legacy"] and not result.failed
    adopted = RuntimePolicy.objects.get(name="adopt-legacy")
    assert [p["code"] for p in adopted.warnings if p["severity"] == "error"] == ["replicated_job.name.too_long"]
    assert adopted.manifest["spec"]["template"]["spec"]["replicatedJobs"][-1]["name"] == LONG_NAME
