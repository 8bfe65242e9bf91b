"""validate_runtime, scheduling_summary and fields_from_manifest never raise, whatever dict they get."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtimes.domain.editing import apply_fields, fields_from_manifest
from runtimes.domain.manifest import dump_yaml, load_documents
from runtimes.domain.policy import ValidationOptions, ValidationReport, scheduling_summary, validate_runtime

from .test_policy_cases import upstream

# Keys the validator looks at, so random documents reach deep into its rules.
KEYS = st.sampled_from(
    [
        "apiVersion",
        "kind",
        "metadata",
        "name",
        "labels",
        "annotations",
        "spec",
        "mlPolicy",
        "numNodes",
        "torch",
        "mpi",
        "flux",
        "envInjection",
        "targets",
        "jobName",
        "containerNames",
        "podGroupPolicy",
        "coscheduling",
        "volcano",
        "networkTopology",
        "mode",
        "template",
        "replicatedJobs",
        "replicas",
        "dependsOn",
        "status",
        "successPolicy",
        "operator",
        "targetReplicatedJobs",
        "startupPolicy",
        "scheduling",
        "schedulingPolicy",
        "gang",
        "basic",
        "minCount",
        "schedulingConstraints",
        "topology",
        "key",
        "disruptionMode",
        "job",
        "resourceClaims",
        "containers",
        "trainer.kubeflow.org/trainjob-ancestor-step",
        "volumeClaimPolicies",
    ]
) | st.text(max_size=8)
SCALARS = st.none() | st.booleans() | st.integers(-3, 300) | st.floats(allow_nan=False) | st.text(max_size=12)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=40,
)
OPTIONS = st.builds(
    ValidationOptions,
    composite_enabled=st.booleans(),
    max_level3_replicas=st.integers(0, 4),
    known_topology_keys=st.lists(st.text(max_size=10), max_size=2).map(tuple),
    disruption_mode_form=st.sampled_from(["", "union", "string"]),
    topology_gate=st.sampled_from([None, True, False]),
)


def _graft(tree: Any, value: Any, choices: list[int]) -> Any:
    """Replace one subtree of `tree` (picked by `choices`) with `value`."""
    node = tree
    for choice in choices:
        if isinstance(node, dict) and node:
            key = list(node)[choice % len(node)]
            if not isinstance(node[key], dict | list) or not node[key]:
                node[key] = value
                return tree
            node = node[key]
        elif isinstance(node, list) and node:
            index = choice % len(node)
            if not isinstance(node[index], dict | list) or not node[index]:
                node[index] = value
                return tree
            node = node[index]
    return tree


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=st.dictionaries(KEYS, JSON, max_size=6), options=OPTIONS)
def test_it_never_raises_on_arbitrary_json_like_dicts(document, options):
    report = validate_runtime(document, options)
    assert isinstance(report, ValidationReport)
    scheduling_summary(document)
    fields_from_manifest(document)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(["torch", "deepspeed", "qwen"]),
    value=JSON,
    choices=st.lists(st.integers(0, 50), min_size=1, max_size=12),
    options=OPTIONS,
)
def test_it_never_raises_on_damaged_runtimes(base, value, choices, options):
    manifest = _graft(upstream(base), value, choices)
    report = validate_runtime(manifest, options)
    assert all(p.severity in ("error", "warning") for p in report.problems)
    assert set(report.import_blocking_errors) <= set(report.errors)
    assert set(report.startup_deadlocks) <= set(report.warnings)
    scheduling_summary(manifest)
    fields = fields_from_manifest(manifest)
    # the form's own read-back applied to the same manifest changes nothing
    assert apply_fields(manifest, fields) == manifest


@settings(max_examples=100, deadline=None)
@given(document=st.dictionaries(st.text(max_size=10), JSON, max_size=6))
def test_dump_then_load_is_identity_for_json_like_dicts(document):
    document = copy.deepcopy(document)
    assert load_documents(dump_yaml(document)) == [document]


def test_it_never_raises_on_non_dict_input():
    for value in (None, [], "x", 3, [{"a": 1}]):
        assert not validate_runtime(value).ok  # type: ignore[arg-type]
        assert scheduling_summary(value).mode == "none"  # type: ignore[arg-type]


WEIRD = [
    {"metadata": {"labels": {1: "x", None: 2}, "annotations": {3: "\ud800", "k": "\ud800"}}},
    {
        "spec": {
            "template": {"spec": {"successPolicy": {"operator": ["All"], "targetReplicatedJobs": [["x"], {"a": 1}]}}}
        }
    },
    {"spec": {"template": {"spec": {"replicatedJobs": [{"name": ["n"], "dependsOn": [{"name": {"x": 1}}]}]}}}},
    {"spec": {"scheduling": {"replicatedJobs": [{"targetReplicatedJobs": [["a"]], "job": []}], "disruptionMode": []}}},
    {"spec": {"mlPolicy": {"torch": {"envInjection": {"targets": [{"jobName": ["x"], "containerNames": [[1]]}]}}}}},
    {"spec": {"podGroupPolicy": {"volcano": {"networkTopology": {"mode": ["hard"]}}}}},
]


def test_it_never_raises_on_python_values_json_cannot_express():
    for document in WEIRD:
        assert not validate_runtime(document).ok
        scheduling_summary(document)
        fields = fields_from_manifest(document)
        apply_fields(document, fields)
