"""The DRAWorkloadResourceClaims gate (beta, off by default in Kubernetes 1.37) detected against real sandbox
processes over HTTP: a server-side dry-run PodGroup with one claim comes back without it when the gate is off; then
the validator and the preview warn that level-3 claims will be dropped on this cluster."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from runtimes.services import policies as services
from tests.domain.test_policy_cases import with_scheduling
from tests.domain.test_policy_rules import CLAIMS, node_l3
from trainer_portal.cluster import status

pytestmark = pytest.mark.django_db
GATE = "DRAWorkloadResourceClaims"


@pytest.mark.parametrize(("args", "enabled"), [((), False), (("--gate", f"{GATE}=true"), True)],
                         ids=["default-off", "on"])
def test_the_claims_gate_is_detected_off_by_default_and_on(sandbox_with, args, enabled):
    gateway = sandbox_with(*args)

    gate = status.check_cluster(gateway=gateway, include_permissions=False)["dra_claims_gate"]

    assert gate["enabled"] is enabled
    assert status.scheduling_facts()["dra_claims_gate"] is enabled
    if not enabled:
        assert "silently lost on this cluster" in gate["message"]
        assert f"{GATE}=true on kube-apiserver" in gate["hint"]


def test_with_the_gate_off_the_validator_and_the_preview_warn_that_claims_will_be_dropped(sandbox_with, alice):
    manifest = with_scheduling("torch", node_l3({"resourceClaims": CLAIMS}))
    assert "scheduling.resource_claims.gate_off" not in services.policy_validate(manifest=manifest).codes
    status.check_cluster(gateway=sandbox_with(), include_permissions=False)

    report = services.policy_validate(manifest=manifest)
    assert "scheduling.resource_claims.gate_off" in [p.code for p in report.warnings]

    api = APIClient()
    api.force_authenticate(alice)
    answer = api.post("/api/v1/preview/", {"manifest": manifest, "numNodes": 1}, format="json")
    assert answer.status_code == 200, answer.content
    assert any("will be dropped on this cluster" in warning for warning in answer.json()["warnings"])


def test_the_preview_of_a_saved_policy_warns_too(sandbox_with, alice):
    from runtimes.choices import RevisionSource

    manifest = with_scheduling("torch", node_l3({"resourceClaims": CLAIMS}))
    services.policy_create(manifest=manifest, author=alice, source=RevisionSource.API)
    api = APIClient()
    api.force_authenticate(alice)
    path = f"/api/v1/runtimes/{manifest['metadata']['name']}/preview/"
    before = api.post(path, {"numNodes": 1}, format="json")
    assert before.status_code == 200, before.content
    assert not any("will be dropped" in w for w in before.json()["warnings"])
    status.check_cluster(gateway=sandbox_with(), include_permissions=False)

    after = api.post(path, {"numNodes": 1}, format="json").json()
    assert any("will be dropped on this cluster" in w for w in after["warnings"])


def test_the_status_api_declares_and_returns_the_claims_gate(sandbox_with, alice):
    status.check_cluster(gateway=sandbox_with(), include_permissions=False)  # what the worker's check stores
    api = APIClient()
    api.force_authenticate(alice)
    body = api.get("/api/v1/cluster/?dialect=camel").json()
    assert body["draClaimsGate"]["enabled"] is False


def test_the_cluster_page_says_claims_are_dropped(sandbox_with, alice, client):
    status.check_cluster(gateway=sandbox_with(), include_permissions=False)  # what the worker's check stores
    client.force_login(alice)
    page = client.get("/cluster/").content.decode()
    assert "Level-3 resource claims" in page and "dropped" in page
