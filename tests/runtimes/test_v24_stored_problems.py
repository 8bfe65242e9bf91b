"""Runtimes broken only by the Trainer v2.4.0 rules still import and adopt, with their errors shown (decision D18);
any other error still refuses them, and the form/API refuse to save them until they are fixed."""

from __future__ import annotations

import pytest

from runtimes.choices import RevisionSource
from runtimes.domain.manifest import dump_many, dump_yaml
from runtimes.errors import ImportInvalid, PolicyInvalid
from runtimes.models import RuntimePolicy
from runtimes.services import policies as services
from tests.runtimes.test_services import runtime

pytestmark = pytest.mark.django_db
IMPORT = "/api/v1/runtimes/import/"
RJOBS = ("spec", "template", "spec", "replicatedJobs")


def _rjobs(manifest: dict) -> list:
    node = manifest
    for key in RJOBS:
        node = node[key]
    return node


def long_name(name: str = "legacy-long") -> dict:
    """A runtime whose extra ReplicatedJob has a 23-character name (fine before v2.4.0)."""
    manifest = runtime(name)
    helper = {
        "name": "evaluation-sidecar-0001",
        "template": {"spec": {"template": {"spec": {"containers": [{"name": "h", "image": "busybox"}]}}}},
    }
    _rjobs(manifest).append(helper)
    return manifest


def untargeted(name: str = "legacy-untargeted") -> dict:
    manifest = long_name(name)
    _rjobs(manifest)[-1]["name"] = "helper"
    manifest["spec"]["scheduling"] = {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}
    return manifest


def claims_at_level1(name: str = "legacy-claims") -> dict:
    manifest = runtime(name)
    manifest["spec"]["scheduling"] = {"resourceClaims": [{"name": "tpu", "resourceClaimTemplateName": "tpu-t"}]}
    return manifest


CASES = [
    (long_name, "replicated_job.name.too_long"),
    (untargeted, "scheduling.untargeted_replicated_job"),
    (claims_at_level1, "scheduling.resource_claims.level"),
]


@pytest.mark.parametrize(("build", "code"), CASES, ids=[c[1] for c in CASES])
def test_an_import_stores_the_runtime_with_its_v24_error_shown(alice, build, code):
    manifest = build()

    result = services.policies_import(text=dump_yaml(manifest), author=alice)

    name = manifest["metadata"]["name"]
    assert result.created == [name]
    (doc,) = result.documents
    assert [(p["code"], p["severity"]) for p in doc.problems if p["severity"] == "error"] == [(code, "error")]
    stored = RuntimePolicy.objects.get(name=name)
    assert stored.manifest == manifest  # nothing lost
    assert code in [p["code"] for p in stored.warnings if p["severity"] == "error"]


@pytest.mark.parametrize(("build", "code"), CASES, ids=[c[1] for c in CASES])
def test_the_form_and_api_refuse_to_save_it_until_fixed(alice, build, code):
    manifest = build()
    with pytest.raises(PolicyInvalid) as caught:
        services.policy_create(manifest=manifest, author=alice, source=RevisionSource.API)
    assert code in [p["code"] for p in caught.value.errors]

    services.policies_import(text=dump_yaml(manifest), author=alice)
    manifest["spec"]["mlPolicy"]["numNodes"] = 3
    with pytest.raises(PolicyInvalid):
        services.policy_update(
            name=manifest["metadata"]["name"],
            manifest=manifest,
            expected_version=1,
            author=alice,
            source=RevisionSource.FORM,
        )


def test_any_other_error_still_refuses_the_whole_import(alice):
    broken = long_name("also-broken")
    broken["spec"]["mlPolicy"]["numNodes"] = 0

    with pytest.raises(ImportInvalid) as caught:
        services.policies_import(text=dump_many([long_name(), broken]), author=alice)

    (failing,) = caught.value.documents
    assert failing["name"] == "also-broken"
    assert [p["code"] for p in failing["problems"]] == ["ml_policy.num_nodes.invalid"]
    assert not RuntimePolicy.objects.exists()


def test_the_import_api_answers_201_and_shows_the_error(alice, client):
    client.force_login(alice)
    response = client.post(IMPORT, data=dump_yaml(long_name()), content_type="application/yaml")

    assert response.status_code == 201, response.content
    (problem,) = [p for p in response.json()["documents"][0]["warnings"] if p["severity"] == "error"]
    assert problem["path"] == "spec.template.spec.replicatedJobs[1].name"
    assert "20" in problem["message"]
    detail = client.get(f"/api/v1/runtimes/{long_name()['metadata']['name']}/").json()
    assert "replicated_job.name.too_long" in [p["code"] for p in detail["warnings"]]
