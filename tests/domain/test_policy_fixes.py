"""One-click fixes: the basic entry for untargeted ReplicatedJobs, and disruptionMode written in the cluster's form."""

from __future__ import annotations

import pytest

from runtimes.domain.policy import (
    add_basic_entry,
    convert_disruption_modes,
    untargeted_replicated_jobs,
    validate_runtime,
)

from .test_policy_cases import RJOBS, put, rjob, upstream, with_scheduling

NODE_GANG = {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}}]}


@pytest.mark.parametrize(
    ("base", "scheduling", "expected"),
    [
        ("qwen", NODE_GANG, ("dataset-initializer", "model-initializer")),
        ("qwen", {"schedulingPolicy": {"gang": {}}}, ()),
        ("torch", NODE_GANG, ()),
        ("deepspeed", NODE_GANG, ("launcher",)),
        ("deepspeed", {"replicatedJobs": []}, ()),
        ("deepspeed", {"replicatedJobs": [{"targetReplicatedJobs": "node"}, 3]}, ("node", "launcher")),
    ],
    ids=["qwen", "level1", "covered", "deepspeed", "empty-list", "malformed-entries"],
)
def test_it_lists_the_untargeted_replicated_jobs_in_template_order(base, scheduling, expected):
    assert untargeted_replicated_jobs(with_scheduling(base, scheduling)) == expected


@pytest.mark.parametrize("value", [None, [], "x", {"spec": []}, {"spec": {"scheduling": {"replicatedJobs": "x"}}}])
def test_it_never_raises_on_malformed_input(value):
    assert untargeted_replicated_jobs(value) == ()


def test_the_fix_adds_one_basic_entry_and_the_runtime_becomes_valid():
    manifest = with_scheduling("qwen", NODE_GANG)
    assert "scheduling.untargeted_replicated_job" in validate_runtime(manifest).codes

    fixed = add_basic_entry(manifest)

    assert fixed["spec"]["scheduling"]["replicatedJobs"][-1] == {
        "targetReplicatedJobs": ["dataset-initializer", "model-initializer"],
        "schedulingPolicy": {"basic": {}},
    }
    assert validate_runtime(fixed).problems == ()
    assert manifest["spec"]["scheduling"] == NODE_GANG  # the input is not changed


def test_the_fix_can_target_chosen_names_only():
    fixed = add_basic_entry(with_scheduling("qwen", NODE_GANG), ["model-initializer"])
    assert untargeted_replicated_jobs(fixed) == ("dataset-initializer",)


def test_more_than_eight_untargeted_names_are_split_over_entries():
    manifest = with_scheduling("torch", NODE_GANG)
    put(manifest, RJOBS, [rjob("node", step="trainer"), *(rjob(f"side-{i}") for i in range(9))])
    entries = add_basic_entry(manifest)["spec"]["scheduling"]["replicatedJobs"]
    assert [len(e["targetReplicatedJobs"]) for e in entries] == [1, 8, 1]


@pytest.mark.parametrize(
    ("scheduling", "names", "message"),
    [
        (NODE_GANG, None, "already targeted"),
        ({"schedulingPolicy": {"gang": {}}}, None, "already targeted"),
        (NODE_GANG, ["node"], "node is not an untargeted ReplicatedJob"),
    ],
)
def test_the_fix_refuses_when_there_is_nothing_to_fix(scheduling, names, message):
    with pytest.raises(ValueError, match=message):
        add_basic_entry(with_scheduling("torch", scheduling), names)


def _modes(manifest: dict) -> list:
    scheduling = manifest["spec"]["scheduling"]
    entries = scheduling.get("replicatedJobs", [])
    found = [scheduling.get("disruptionMode")]
    for entry in entries:
        found += [entry.get("disruptionMode"), (entry.get("job") or {}).get("disruptionMode")]
    return [m for m in found if m is not None]


MODES = {
    "disruptionMode": "PodGroup",
    "replicatedJobs": [
        {"targetReplicatedJobs": ["launcher"], "disruptionMode": {"single": {}}},
        {"targetReplicatedJobs": ["node"], "job": {"disruptionMode": "Pod"}},
    ],
}


@pytest.mark.parametrize(
    ("form", "expected"),
    [
        ("union", [{"all": {}}, {"single": {}}, {"single": {}}]),
        ("string", ["PodGroup", "Pod", "Pod"]),
        ("", ["PodGroup", {"single": {}}, "Pod"]),
    ],
)
def test_disruption_modes_are_written_in_the_clusters_form(form, expected):
    manifest = with_scheduling("deepspeed", MODES)
    assert _modes(convert_disruption_modes(manifest, form)) == expected
    assert _modes(manifest) == ["PodGroup", {"single": {}}, "Pod"]


def test_conversion_leaves_unknown_values_and_other_manifests_alone():
    manifest = with_scheduling("torch", {"disruptionMode": "Sometimes"})
    assert convert_disruption_modes(manifest, "union") == manifest
    assert convert_disruption_modes(upstream("torch"), "string") == upstream("torch")
    assert convert_disruption_modes(["x"], "union") == ["x"]
