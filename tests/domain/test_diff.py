"""Structural and unified diffs between manifests."""

from __future__ import annotations

import pytest

from runtimes.domain.diff import Change, semantically_equal, structural_diff, unified_diff

from .test_policy_cases import upstream

RJ = "spec.template.spec.replicatedJobs"


def test_identical_manifests_have_no_changes():
    assert structural_diff(upstream("qwen"), upstream("qwen")) == []
    assert semantically_equal(upstream("qwen"), upstream("qwen"))
    assert unified_diff(upstream("qwen"), upstream("qwen"), old_label="a", new_label="b") == ""


def test_list_maps_are_compared_by_name_not_index():
    old = upstream("qwen")
    new = upstream("qwen")
    jobs = new["spec"]["template"]["spec"]["replicatedJobs"]
    node = next(job for job in jobs if job["name"] == "node")
    node["dependsOn"].reverse()
    assert semantically_equal(old, new)
    node["replicas"] = 1
    assert structural_diff(old, new) == [Change(f"{RJ}[name=node].replicas", "added", None, 1)]


def test_env_and_containers_are_keyed_by_name():
    old = upstream("qwen")
    new = upstream("qwen")
    env = new["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    env["env"].insert(0, {"name": "HF_TOKEN", "value": "x"})
    env["env"][1]["value"] = "hf://other"
    changes = structural_diff(old, new)
    prefix = f"{RJ}[name=dataset-initializer].template.spec.template.spec.containers[name=dataset-initializer].env"
    assert changes == [
        Change(f"{prefix}[name=STORAGE_URI].value", "changed", "hf://tatsu-lab/alpaca", "hf://other"),
        Change(f"{prefix}[name=HF_TOKEN]", "added", None, {"name": "HF_TOKEN", "value": "x"}),
    ]


def test_plain_lists_are_compared_by_index():
    old = {"spec": {"args": ["a", "b"]}}
    new = {"spec": {"args": ["a", "c", "d"]}}
    assert structural_diff(old, new) == [
        Change("spec.args[1]", "changed", "b", "c"),
        Change("spec.args[2]", "added", None, "d"),
    ]


def test_lists_with_duplicate_keys_fall_back_to_index():
    old = {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}
    new = {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "3"}]}
    assert structural_diff(old, new) == [Change("env[1].value", "changed", "2", "3")]


@pytest.mark.parametrize(
    ("old", "new", "equal"),
    [
        (1, True, False),
        (True, 1, False),
        (1, 1.0, True),
        ("1", 1, False),
        (None, "", False),
        ({}, None, False),
        ([], {}, False),
    ],
)
def test_scalar_comparison_keeps_types_apart(old, new, equal):
    assert semantically_equal({"v": old}, {"v": new}) is equal


def test_paths_quote_keys_with_dots_and_slashes():
    old = {"metadata": {"labels": {"trainer.kubeflow.org/framework": "torch"}}}
    new = {"metadata": {"labels": {"trainer.kubeflow.org/framework": "jax"}}}
    (change,) = structural_diff(old, new)
    assert change.path == 'metadata.labels["trainer.kubeflow.org/framework"]'
    assert change.as_dict() == {"path": change.path, "op": "changed", "old": "torch", "new": "jax"}


def test_removed_and_added_top_level_keys():
    assert structural_diff({"a": 1}, {"b": 2}) == [Change("a", "removed", 1, None), Change("b", "added", None, 2)]


def test_type_change_between_mapping_and_scalar_is_one_change():
    assert structural_diff({"a": {"b": 1}}, {"a": "x"}) == [Change("a", "changed", {"b": 1}, "x")]


def test_unified_diff_is_over_the_exported_yaml():
    old = upstream("torch")
    new = upstream("torch")
    new["spec"]["mlPolicy"]["numNodes"] = 4
    text = unified_diff(old, new, old_label="revision 1", new_label="revision 2")
    assert text.startswith("--- revision 1\n+++ revision 2\n")
    assert "-    numNodes: 1\n+    numNodes: 4\n" in text


def test_moving_a_replicated_job_is_a_change_of_the_list_other_list_maps_stay_unordered():
    def runtime(names: list[str], containers: list[str]) -> dict:
        pod = {"containers": [{"name": n} for n in containers]}
        rjobs = [{"name": n, "template": {"spec": {"template": {"spec": pod}}}} for n in names]
        return {"spec": {"template": {"spec": {"replicatedJobs": rjobs}}}}

    moved = structural_diff(runtime(["init", "node"], ["a", "b"]), runtime(["node", "init"], ["a", "b"]))
    assert moved == [Change("spec.template.spec.replicatedJobs", "changed", ["init", "node"], ["node", "init"])]
    assert structural_diff(runtime(["init", "node"], ["a", "b"]), runtime(["init", "node"], ["b", "a"])) == []
    # Adding one at the end keeps the others' order: only the addition is reported.
    added = structural_diff(runtime(["node"], ["a"]), runtime(["node", "extra"], ["a"]))
    assert [change.op for change in added] == ["added"]
