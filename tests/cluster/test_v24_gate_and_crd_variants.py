"""The topology-gate detection with the sandbox's gate on and off, and the CRD detection on each Trainer CRD variant
the sandbox can install (v2.4 with the 1.37 types, v2.4 with the 1.36 types, v2.3): real sandbox processes over HTTP."""

from __future__ import annotations

import subprocess
import sys
from functools import cache

import pytest

from runtimes.choices import RevisionSource
from runtimes.services import policies as services
from tests.domain.test_policy_cases import with_scheduling
from trainer_portal.cluster import status

pytestmark = pytest.mark.django_db
GATE_OFF = ["--gate", "TopologyAwareWorkloadScheduling=false"]
ZONE_GANG = {
    "schedulingPolicy": {"gang": {}},
    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
}


@cache
def _sandbox_help() -> str:
    return subprocess.run([sys.executable, "-m", "sandbox", "--help"], capture_output=True, text=True).stdout


def _needs(flag: str):
    return pytest.mark.skipif(flag not in _sandbox_help(), reason=f"this sandbox has no {flag} option")


@_needs("--gate")
@pytest.mark.parametrize(
    ("args", "enabled"), [(GATE_OFF, False), (["--gate", "TopologyAwareWorkloadScheduling=true"], True)]
)
def test_the_topology_gate_is_detected_on_and_off(sandbox_with, args, enabled):
    gateway = sandbox_with(*args)

    gate = status.check_cluster(gateway=gateway, include_permissions=False)["topology_gate"]

    assert gate["enabled"] is enabled
    if not enabled:
        assert "silently ignored by this cluster" in gate["message"]
        assert "TopologyAwareWorkloadScheduling=true on kube-apiserver and kube-scheduler" in gate["hint"]


@_needs("--gate")
def test_with_the_gate_off_every_policy_using_a_topology_key_is_warned(sandbox_with, alice, client):
    services.policy_create(manifest=with_scheduling("torch", ZONE_GANG), author=alice, source=RevisionSource.API)
    plain = with_scheduling("torch", {"schedulingPolicy": {"gang": {}}})
    plain["metadata"]["name"] = "no-topology"
    services.policy_create(manifest=plain, author=alice, source=RevisionSource.API)
    sandbox_with(*GATE_OFF)
    status.check_cluster()
    client.force_login(alice)

    page = client.get("/cluster/").content.decode()

    assert "Topology ignored by this cluster" in page
    assert "constraint is ignored by this cluster" in page
    assert "torch-distributed" in page and "no-topology" not in page.split("Topology ignored by this cluster")[1]
    report = services.policy_validate(manifest=with_scheduling("torch", ZONE_GANG))
    assert "scheduling.topology.gate_off" in [p.code for p in report.warnings]


@_needs("--trainer-crd")
@pytest.mark.parametrize(
    ("variant", "present", "form"),
    [("v2.4-v1beta1", True, "union"), ("v2.4-v1alpha2", True, "string"), ("v2.3", False, "")],
)
def test_the_crd_variant_is_read_from_the_installed_schema(sandbox_with, variant, present, form):
    gateway = sandbox_with("--trainer-crd", variant)

    schema = status.check_cluster(gateway=gateway, include_permissions=False)["crd_schema"]

    assert (schema["present"], schema["disruption_mode"]) == (present, form)
    if not present:
        assert "Trainer < v2.4 or the TrainJobWorkloadAwareScheduling gate is off" in schema["summary"]
    else:
        assert schema["claim_levels"] == [3]
