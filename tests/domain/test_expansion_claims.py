"""Level-3 resourceClaims reach the generated PodGroups, and every pod of the group shares them (Trainer v2.4)."""

from __future__ import annotations

import pytest

from runtimes.domain.expansion import V1ALPHA2, V1BETA1, ExpansionError, expand

from .test_policy_cases import upstream, with_scheduling

TPU = {"name": "tpu-slice", "resourceClaimTemplateName": "tpu-slice-template"}
NIC = {"name": "rdma", "resourceClaimName": "shared-rdma"}


def _level3(claims: list[dict]) -> dict:
    return with_scheduling(
        "torch", {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "job": {"resourceClaims": claims}}]}
    )


@pytest.mark.parametrize("api_version", [V1BETA1, V1ALPHA2])
def test_claims_of_a_level3_job_are_copied_into_its_pod_group_and_template(api_version):
    expansion = expand(_level3([TPU, NIC]), trainjob_name="llm", num_nodes=4, api_version=api_version)

    (group,) = expansion.leaf_groups
    (pod_group,) = expansion.podgroup_manifests()
    (template,) = expansion.workload_manifest()["spec"]["podGroupTemplates"]
    assert pod_group["spec"]["resourceClaims"] == [TPU, NIC]
    assert template["resourceClaims"] == [TPU, NIC]
    assert [c.name for c in group.resource_claims] == ["tpu-slice", "rdma"]


def test_every_pod_of_the_group_shares_the_claims():
    expansion = expand(_level3([TPU]), trainjob_name="llm", num_nodes=4)
    (group,) = expansion.leaf_groups

    assert expansion.pod_claims("node", 0) == [{"podGroup": group.name, "name": "tpu-slice"}]
    summary = expansion.to_dict()
    (pod_set,) = summary["podSets"]
    assert pod_set["count"] == 4 and pod_set["sharedClaims"] == [{"podGroup": group.name, "name": "tpu-slice"}]
    assert summary["podGroups"][0]["resourceClaims"] == [TPU]


def test_groups_without_claims_carry_none():
    expansion = expand(upstream("torch"), trainjob_name="llm")
    assert expansion.pod_claims("node", 0) == []
    manifest = with_scheduling("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "job": {}}]})
    expansion = expand(manifest, trainjob_name="llm")
    assert "resourceClaims" not in expansion.podgroup_manifests()[0]["spec"]
    assert expansion.to_dict()["podSets"][0]["sharedClaims"] == []


@pytest.mark.parametrize(
    ("scheduling", "path"),
    [
        ({"resourceClaims": [TPU]}, "spec.scheduling.resourceClaims"),
        (
            {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "resourceClaims": [TPU]}]},
            "spec.scheduling.replicatedJobs[0].resourceClaims",
        ),
    ],
    ids=["level1", "level2"],
)
def test_claims_outside_job_are_refused_with_where_they_belong(scheduling, path):
    with pytest.raises(ExpansionError) as caught:
        expand(with_scheduling("torch", scheduling), trainjob_name="llm")
    assert caught.value.path == path and "under job (level 3)" in caught.value.message


@pytest.mark.parametrize(
    ("claim", "path"),
    [
        ({"resourceClaimName": "x"}, "resourceClaims[0].name"),
        ({"name": "a"}, "resourceClaims[0]"),
        ({"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}, "resourceClaims[0]"),
        ("tpu", "resourceClaims[0]"),
    ],
)
def test_malformed_claims_are_an_expansion_error_naming_the_field(claim, path):
    with pytest.raises(ExpansionError) as caught:
        expand(_level3([claim]), trainjob_name="llm")
    assert caught.value.path == f"spec.scheduling.replicatedJobs[0].job.{path}"
