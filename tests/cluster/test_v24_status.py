"""What Trainer v2.4 can silently lose, detected against the sandbox over HTTP: the Kubernetes version it supports,
the topology gate (server-side dry-run PodGroup), and the installed CRD's spec.scheduling schema; validation follows
what the last check found."""

from __future__ import annotations

import copy

import pytest
import yaml
from rest_framework.test import APIClient

from runtimes.services import policies as services
from tests.domain.test_policy_cases import with_scheduling
from tests.fixture_paths import REFERENCE_CRDS
from trainer_portal import kube
from trainer_portal.cluster import status
from trainer_portal.kube.client import build_gateway

pytestmark = pytest.mark.django_db
CRD_FILE = REFERENCE_CRDS / "trainer.kubeflow.org_clustertrainingruntimes.yaml"
ZONE_GANG = {
    "schedulingPolicy": {"gang": {}},
    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
}


def _installed_crd(gateway) -> dict:
    return gateway.get(gateway.resolve(kube.CRD), name=status.CRD_NAME)


def _replace_crd(gateway, crd: dict) -> None:
    """Install `crd` in place of the sandbox's ClusterTrainingRuntime CRD (as an upgrade or downgrade would)."""
    resource = gateway.resolve(kube.CRD)
    body = {key: crd[key] for key in ("apiVersion", "kind", "spec")}
    body["metadata"] = {"name": status.CRD_NAME}
    live = gateway.get(resource, name=status.CRD_NAME)
    body["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    gateway.request("PUT", resource.path(name=status.CRD_NAME), body=body)
    gateway.forget_discovery()


def _string_disruption_mode(crd: dict) -> dict:
    crd = copy.deepcopy(crd)
    scheduling = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "scheduling"
    ]
    entry = scheduling["properties"]["replicatedJobs"]["items"]
    for group in (scheduling, entry, entry["properties"]["job"]):
        group["properties"]["disruptionMode"] = {"type": "string", "enum": ["Pod", "PodGroup"]}
    return crd


def test_a_1_37_cluster_is_supported_keeps_topology_and_embeds_the_union_form(gateway):
    result = status.check_cluster(gateway=gateway, include_permissions=False)

    assert result["scheduling_support"]["supported"] is True
    assert result["topology_gate"]["enabled"] is True
    assert "kube-scheduler" in result["topology_gate"]["hint"]
    schema = result["crd_schema"]
    assert (schema["present"], schema["disruption_mode"], schema["version"]) == (True, "union", "v1alpha1")
    assert status.scheduling_facts() == {"topology_gate": True, "dra_claims_gate": False, "disruption_mode": "union"}


def test_validation_follows_the_last_check(gateway):
    legacy = with_scheduling("torch", {**ZONE_GANG, "disruptionMode": "PodGroup"})
    before = services.policy_validate(manifest=legacy)
    assert before.ok and "scheduling.disruption_mode.legacy_string" in before.codes

    status.check_cluster(gateway=gateway, include_permissions=False)

    after = services.policy_validate(manifest=legacy)
    assert [p.code for p in after.errors] == ["scheduling.disruption_mode.cluster_form"]


def test_a_crd_with_the_string_form_is_read_and_validation_follows_it(gateway):
    _replace_crd(gateway, _string_disruption_mode(_installed_crd(gateway)))

    schema = status.check_cluster(gateway=gateway, include_permissions=False)["crd_schema"]

    assert schema["disruption_mode"] == "string" and "v1alpha2" in schema["embedded_types"]
    union = with_scheduling("torch", {**ZONE_GANG, "disruptionMode": {"all": {}}})
    (problem,) = services.policy_validate(manifest=union).errors
    assert problem.code == "scheduling.disruption_mode.cluster_form" and "write 'PodGroup'" in problem.message


def test_a_crd_without_spec_scheduling_is_reported_as_trainer_before_v24(gateway):
    _replace_crd(gateway, yaml.safe_load(CRD_FILE.read_text()))

    result = status.check_cluster(gateway=gateway, include_permissions=False)

    assert result["crd_schema"]["present"] is False
    assert "Trainer < v2.4 or the TrainJobWorkloadAwareScheduling gate is off" in result["crd_schema"]["summary"]
    assert "TrainJobWorkloadAwareScheduling" in result["crd_schema"]["hint"]


def test_a_cluster_serving_only_1_36_is_reported_as_such():
    from sandbox.testing import SandboxProcess

    with SandboxProcess(topology="none", controllers=False, kube_version="1.36") as sandbox:
        gateway = build_gateway(kube.KubeSettings(config_path=sandbox.kubeconfig))
        result = status.check_cluster(gateway=gateway, include_permissions=False)

    support = result["scheduling_support"]
    assert support["supported"] is False
    assert "only the Kubernetes 1.36 scheduling APIs (scheduling.k8s.io/v1alpha2)" in support["message"]
    assert "1.37" in support["hint"]
    assert result["topology_gate"]["enabled"] is True  # the probe runs on v1alpha2 PodGroups too


def test_the_api_and_the_page_show_the_checks(cluster, bob):
    status.check_cluster()
    api = APIClient()
    api.force_authenticate(bob)
    body = api.get("/api/v1/cluster/").json()
    assert body["scheduling_support"]["supported"] is True
    assert body["topology_gate"]["enabled"] is True
    assert body["crd_schema"]["disruption_mode"] == "union"

    api.force_login(bob)
    page = api.get("/cluster/").content.decode()
    assert "TopologyAwareWorkloadScheduling" in page and "Installed CRD schema" in page
    assert "Kubernetes version for Trainer v2.4" in page


def test_exports_write_disruption_mode_in_the_clusters_form(gateway, alice, client):
    manifest = with_scheduling("torch", {**ZONE_GANG, "disruptionMode": {"all": {}}})
    services.policy_create(manifest=manifest, author=alice)
    name = manifest["metadata"]["name"]
    client.force_login(alice)
    assert "all: {}" in client.get(f"/runtimes/{name}/export/").content.decode()

    _replace_crd(gateway, _string_disruption_mode(_installed_crd(gateway)))
    status.check_cluster(gateway=gateway, include_permissions=False)

    for url in (f"/runtimes/{name}/export/", f"/api/v1/runtimes/{name}/export/", "/runtimes/export/"):
        text = client.get(url).content.decode()
        assert "disruptionMode: PodGroup" in text, url


def test_the_editor_checks_follow_the_last_cluster_check(gateway, alice, client):
    manifest = with_scheduling("torch", {**ZONE_GANG, "disruptionMode": {"all": {}}})
    services.policy_create(manifest=manifest, author=alice)
    client.force_login(alice)
    edit = f"/runtimes/{manifest['metadata']['name']}/edit/"
    assert "scheduling.disruption_mode.cluster_form" not in str(client.get(edit).context["problems"])

    _replace_crd(gateway, _string_disruption_mode(_installed_crd(gateway)))
    status.check_cluster(gateway=gateway, include_permissions=False)

    codes = [p["code"] for p in client.get(edit).context["problems"]]
    assert "scheduling.disruption_mode.cluster_form" in codes


def test_the_guided_form_writes_the_clusters_disruption_mode_form(gateway, alice, client):
    from django.urls import reverse

    from tests.ui.test_views_editor import shown_data

    manifest = with_scheduling("torch", ZONE_GANG)
    services.policy_create(manifest=manifest, author=alice)
    _replace_crd(gateway, _string_disruption_mode(_installed_crd(gateway)))
    status.check_cluster(gateway=gateway, include_permissions=False)
    client.force_login(alice)

    data = shown_data(manifest, l1_disruption_mode="all")
    response = client.post(reverse("runtimes:render-yaml"), data, headers={"HX-Request": "true"})

    written = yaml.safe_load(response.context["yaml_text"])["spec"]["scheduling"]
    assert written["disruptionMode"] == "PodGroup"
    assert "scheduling.disruption_mode.cluster_form" not in [p["code"] for p in response.context["problems"]]
