"""The preview follows Trainer v2.4: startup-order deadlocks never schedule, 1.36 is marked unsupported, and level-3
resourceClaims show on their PodGroups."""

from __future__ import annotations

import pytest
from django.test import Client

from runtimes.domain.preview import NOT_SUPPORTED_BY_TRAINER, STARTUP_ORDER_VERDICT, UNSUPPORTED_API_WARNING
from runtimes.services import policies as services
from tests.domain.test_policy_cases import with_scheduling
from tests.preview.test_api import UNSAVED, alice, api, bob, body, saved  # noqa: F401 — fixtures
from tests.preview.test_html import HTMX, RESULTS, form

LAUNCHER_NODE_GANG = {
    "replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"], "schedulingPolicy": {"gang": {}}}]
}
LAUNCHER_NODE_BASIC = {
    "replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"], "schedulingPolicy": {"basic": {}}}]
}
TPU = {"name": "tpu-slice", "resourceClaimTemplateName": "tpu-slice-template"}


def deepspeed(scheduling: dict, name: str = "ds-gang") -> dict:
    manifest = with_scheduling("deepspeed", scheduling)
    manifest["metadata"]["name"] = name
    return manifest


LEVEL1_GANG = {"schedulingPolicy": {"gang": {}}}


@pytest.mark.parametrize(
    ("scheduling", "deadlock"), [(LAUNCHER_NODE_GANG, True), (LAUNCHER_NODE_BASIC, False), (LEVEL1_GANG, False)]
)
def test_a_gang_with_a_depends_on_pair_never_schedules(api, db, scheduling, deadlock):  # noqa: F811
    response = api.post(UNSAVED, {**body(4), "manifest": deepspeed(scheduling)}, format="json")

    assert response.status_code == 200, response.content
    verdict = response.json()["verdict"]
    assert verdict["startupDeadlock"] is deadlock
    if deadlock:
        assert verdict["fits"] is False
        assert STARTUP_ORDER_VERDICT in verdict["summary"] and "there would be room for it" in verdict["summary"]
        assert any("dependsOn" in line for line in verdict["explanation"])
    else:
        assert verdict["fits"] is True and verdict["summary"].startswith("The TrainJob fits")


def test_a_saved_deadlocked_policy_never_schedules_either(api, db, alice):  # noqa: F811
    services.policy_create(manifest=deepspeed(LAUNCHER_NODE_GANG), author=alice, message="first", source="api")

    verdict = api.post(saved("ds-gang"), body(4), format="json").json()["verdict"]

    assert (verdict["fits"], verdict["startupDeadlock"]) == (False, True)


def test_the_html_verdict_says_never_schedules(db, alice, bob):  # noqa: F811
    services.policy_create(manifest=deepspeed(LAUNCHER_NODE_GANG), author=alice, message="first", source="api")
    web = Client()
    web.force_login(bob)

    html = web.post(RESULTS, form(policy="ds-gang"), **HTMX).content.decode()

    assert '<h2 id="pv-verdict-title">Never schedules (startup order)</h2>' in html
    assert STARTUP_ORDER_VERDICT in html


@pytest.mark.parametrize(
    ("api_version", "warned"), [("scheduling.k8s.io/v1alpha2", True), ("scheduling.k8s.io/v1beta1", False)]
)
def test_kubernetes_1_36_is_marked_not_supported_by_trainer(api, db, api_version, warned):  # noqa: F811
    manifest = with_scheduling("torch", {"schedulingPolicy": {"gang": {}}})
    response = api.post(UNSAVED, {**body(4), "manifest": manifest, "apiVersion": api_version}, format="json")

    assert response.status_code == 200, response.content
    assert (UNSUPPORTED_API_WARNING in response.json()["warnings"]) is warned
    assert response.json()["yaml"].startswith(f"apiVersion: {api_version}\n")


def test_the_preview_form_labels_1_36_as_not_supported(db, bob):  # noqa: F811
    web = Client()
    web.force_login(bob)
    html = web.get("/preview/").content.decode()
    assert f"Kubernetes 1.36 (scheduling.k8s.io/v1alpha2) — {NOT_SUPPORTED_BY_TRAINER}" in html


def test_level3_claims_show_on_their_pod_group(api, db):  # noqa: F811
    manifest = with_scheduling(
        "torch", {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "job": {"resourceClaims": [TPU]}}]}
    )
    result = api.post(UNSAVED, {**body(4), "manifest": manifest}, format="json").json()

    (group,) = result["podGroups"]
    assert group["resourceClaims"] == [TPU]
    assert result["expansion"]["podSets"][0]["sharedClaims"] == [{"podGroup": group["name"], "name": "tpu-slice"}]
    assert "resourceClaimTemplateName: tpu-slice-template" in result["yaml"]
