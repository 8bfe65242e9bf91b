"""Reading spec.scheduling facts from the installed ClusterTrainingRuntime CRD: each variant a cluster can serve."""

from __future__ import annotations

import copy
from functools import cache

import pytest
import yaml

from tests.fixture_paths import REFERENCE_CRDS
from trainer_portal.cluster.domain.crd_schema import scheduling_schema

POLICY_WITH_MIN_COUNT = {
    "type": "object",
    "properties": {
        "basic": {"type": "object"},
        "gang": {"type": "object", "properties": {"minCount": {"type": "integer"}}},
    },
}
POLICY_WITHOUT_MIN_COUNT = {"type": "object", "properties": {"basic": {"type": "object"}, "gang": {"type": "object"}}}
UNION = {"type": "object", "properties": {"single": {"type": "object"}, "all": {"type": "object"}}}
STRING = {"type": "string", "enum": ["Pod", "PodGroup"]}
CLAIMS = {"type": "array", "maxItems": 4, "items": {"type": "object"}}


@cache
def _released_crd() -> dict:
    return yaml.safe_load((REFERENCE_CRDS / "trainer.kubeflow.org_clustertrainingruntimes.yaml").read_text())


def crd(*, disruption: dict | None, policy: dict, claims_at: tuple[int, ...] = (3,)) -> dict:
    """Return the released CRD with a v2.4 `spec.scheduling` schema grafted in."""

    def group(level: int) -> dict:
        properties = {"schedulingPolicy": policy, "schedulingConstraints": {"type": "object"}}
        if disruption is not None:
            properties["disruptionMode"] = disruption
        if level in claims_at:
            properties["resourceClaims"] = CLAIMS
        return {"type": "object", "properties": properties}

    entry = group(2)
    entry["properties"]["targetReplicatedJobs"] = {"type": "array", "items": {"type": "string"}}
    entry["properties"]["job"] = group(3)
    scheduling = group(1)
    scheduling["properties"]["replicatedJobs"] = {"type": "array", "items": entry}
    result = copy.deepcopy(_released_crd())
    result["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["scheduling"] = (
        scheduling
    )
    return result


def test_the_released_crd_has_no_spec_scheduling():
    schema = scheduling_schema(_released_crd())
    assert (schema.present, schema.version) == (False, "v1alpha1")
    assert "Trainer < v2.4 or the TrainJobWorkloadAwareScheduling gate is off" in schema.summary


@pytest.mark.parametrize(
    ("variant", "disruption", "min_count", "types"),
    [
        (crd(disruption=UNION, policy=POLICY_WITHOUT_MIN_COUNT), "union", False, "Kubernetes 1.37"),
        (crd(disruption=UNION, policy=POLICY_WITH_MIN_COUNT), "union", True, "Kubernetes 1.37"),
        (crd(disruption=STRING, policy=POLICY_WITH_MIN_COUNT), "string", True, "v1alpha2"),
        (crd(disruption={"type": "string"}, policy=POLICY_WITH_MIN_COUNT), "string", True, "v1alpha2"),
        (crd(disruption=None, policy=POLICY_WITHOUT_MIN_COUNT), "", False, ""),
    ],
    ids=["v1alpha3-blocks", "v1beta1-types", "v1alpha2-types", "string-without-enum", "no-disruption-mode"],
)
def test_it_reads_the_embedded_type_version(variant, disruption, min_count, types):
    schema = scheduling_schema(variant)
    assert schema.present
    assert (schema.disruption_mode, schema.min_count) == (disruption, min_count)
    assert types in schema.embedded_types
    assert schema.summary.startswith("spec.scheduling is served (v1alpha1)")


def test_levels_that_disagree_leave_the_form_unknown():
    variant = crd(disruption=UNION, policy=POLICY_WITH_MIN_COUNT)
    scheduling = variant["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "scheduling"
    ]
    scheduling["properties"]["disruptionMode"] = STRING
    assert scheduling_schema(variant).disruption_mode == ""


@pytest.mark.parametrize(("claims_at", "levels"), [((3,), (3,)), ((1, 2, 3), (1, 2, 3)), ((), ())])
def test_it_reports_where_the_schema_has_resource_claims(claims_at, levels):
    variant = crd(disruption=UNION, policy=POLICY_WITHOUT_MIN_COUNT, claims_at=claims_at)
    assert scheduling_schema(variant).claim_levels == levels


def test_the_storage_version_is_read_first():
    variant = crd(disruption=STRING, policy=POLICY_WITH_MIN_COUNT)
    served = copy.deepcopy(_released_crd()["spec"]["versions"][0])
    served.update(name="v1alpha0", storage=False)
    variant["spec"]["versions"].insert(0, served)
    schema = scheduling_schema(variant)
    assert (schema.version, schema.disruption_mode) == ("v1alpha1", "string")


@pytest.mark.parametrize(
    "value", [None, [], "crd", {"spec": {"versions": "x"}}, {"spec": {"versions": [{"schema": []}, 3]}}]
)
def test_it_never_raises_on_unreadable_crds(value):
    assert scheduling_schema(value).present is False
