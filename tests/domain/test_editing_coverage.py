"""The guided form never leaves a ReplicatedJob untargeted (Trainer v2.4 rejects it): added, renamed and ungrouped
ReplicatedJobs stay covered, while one that was already untargeted is left for the error and its one-click fix."""

from __future__ import annotations

import pytest

from runtimes.domain.editing import Level2Entry, ReplicatedJobFields, apply_fields, fields_from_manifest
from runtimes.domain.policy import untargeted_replicated_jobs, validate_runtime

from .test_policy_cases import with_scheduling

DEEPSPEED_L2 = {
    "replicatedJobs": [
        {"targetReplicatedJobs": ["launcher"], "schedulingPolicy": {"basic": {}}},
        {"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}},
    ]
}


def entries(manifest: dict) -> list[dict]:
    return manifest["spec"]["scheduling"]["replicatedJobs"]


def test_a_replicated_job_added_to_a_level2_policy_gets_a_basic_entry():
    manifest = with_scheduling("deepspeed", DEEPSPEED_L2)
    fields = fields_from_manifest(manifest)
    fields.replicated_jobs.append(ReplicatedJobFields(name="evaluator", image="busybox"))

    edited = apply_fields(manifest, fields)

    assert entries(edited)[-1] == {"targetReplicatedJobs": ["evaluator"], "schedulingPolicy": {"basic": {}}}
    assert validate_runtime(edited).errors == ()


def test_level2_targets_follow_a_rename():
    manifest = with_scheduling("deepspeed", DEEPSPEED_L2)
    fields = fields_from_manifest(manifest)
    (launcher,) = [r for r in fields.replicated_jobs if r.name == "launcher"]
    launcher.name = "mpi-launcher"

    edited = apply_fields(manifest, fields)

    assert [e["targetReplicatedJobs"] for e in entries(edited)] == [["mpi-launcher"], ["node"]]
    assert untargeted_replicated_jobs(edited) == ()


@pytest.mark.parametrize("drop", ["entry", "target"])
def test_a_replicated_job_dropped_from_its_entry_gets_a_basic_entry(drop):
    manifest = with_scheduling(
        "deepspeed",
        {"replicatedJobs": [{"targetReplicatedJobs": ["launcher", "node"], "schedulingPolicy": {"basic": {}}}]},
    )
    fields = fields_from_manifest(manifest)
    if drop == "entry":
        fields.level2 = [Level2Entry(targets=["node"])]
    else:
        fields.level2[0].targets = ["node"]

    edited = apply_fields(manifest, fields)

    assert untargeted_replicated_jobs(edited) == ()
    assert entries(edited)[-1] == {"targetReplicatedJobs": ["launcher"], "schedulingPolicy": {"basic": {}}}


def test_an_already_untargeted_replicated_job_is_left_for_the_error_and_its_fix():
    manifest = with_scheduling("qwen", {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}]})
    fields = fields_from_manifest(manifest)
    fields.num_nodes = 4

    edited = apply_fields(manifest, fields)

    assert entries(edited) == [{"targetReplicatedJobs": ["node"]}]
    assert untargeted_replicated_jobs(edited) == ("dataset-initializer", "model-initializer")


@pytest.mark.parametrize("mode", ["none", "level1"])
def test_policies_without_level2_entries_get_no_entries(mode):
    manifest = with_scheduling("deepspeed", {"schedulingPolicy": {"gang": {}}})
    fields = fields_from_manifest(manifest)
    fields.scheduling_mode = mode
    fields.replicated_jobs.append(ReplicatedJobFields(name="evaluator", image="busybox"))

    edited = apply_fields(manifest, fields)

    assert "replicatedJobs" not in edited["spec"].get("scheduling", {})
