"""Golden tests for the 9 ClusterTrainingRuntimes upstream ships (kubeflow/trainer `manifests/base/runtimes/**`,
vendored in tests/fixtures/reference/runtimes/, see SOURCE.md): the validator's report and the preview's expansion
(as shipped, with a v2.4 `spec.scheduling` gang over the trainer, and with a level-1 gang over the whole TrainJob)
must stay exactly as recorded.

A change in the output fails here with a diff; when the change is intended, regenerate the files with
`UPDATE_GOLDEN=1 python -m pytest tests/domain/test_upstream_runtimes_golden.py` and review the diff.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
import yaml

from runtimes.domain.expansion import expand
from runtimes.domain.policy import validate_runtime
from tests.fixture_paths import FIXTURES, REFERENCE_RUNTIMES

GOLDEN = FIXTURES / "golden" / "upstream_runtimes"
RUNTIMES = sorted(REFERENCE_RUNTIMES.glob("*.yaml"))
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
PER_NODE = {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8"}


def _with_scheduling(runtime: dict) -> dict:
    """The runtime with level 2: one gang over the trainer's ReplicatedJobs (MPI: launcher and node), every other
    ReplicatedJob in its own basic entry — every ReplicatedJob targeted once, as v2.4 requires."""
    runtime = copy.deepcopy(runtime)
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    mpi = "mpi" in (runtime["spec"].get("mlPolicy") or {})
    gang = [r["name"] for r in rjobs if (r.get("template", {}).get("metadata", {}).get("labels", {}).get(ANCESTOR)
                                         == "trainer") or (mpi and r["name"] in ("launcher", "node"))]
    entries = [{"targetReplicatedJobs": gang, "schedulingPolicy": {"gang": {}}}] if gang else []
    entries += [{"targetReplicatedJobs": [r["name"]], "schedulingPolicy": {"basic": {}}}
                for r in rjobs if r["name"] not in gang]
    runtime["spec"]["scheduling"] = {"replicatedJobs": entries}
    return runtime


def _with_level1_gang(runtime: dict) -> dict:
    """The runtime with level 1: one gang over the whole TrainJob (`spec.scheduling.schedulingPolicy.gang`)."""
    runtime = copy.deepcopy(runtime)
    runtime["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {}}}
    return runtime


def _expansion(runtime: dict) -> dict:
    expansion = expand(runtime, trainjob_name="golden-job", namespace="team-a", num_nodes=4,
                       resources_per_node=PER_NODE)
    return {"summary": expansion.to_dict(), "workload": expansion.workload_manifest(),
            "podGroups": expansion.podgroup_manifests()}


def _golden_of(path: Path) -> dict:
    runtime = yaml.safe_load(path.read_text())
    scheduled = _with_scheduling(runtime)
    level1 = _with_level1_gang(runtime)
    return {
        "runtime": runtime["metadata"]["name"],
        "validation": [[p.severity, p.code, p.path] for p in validate_runtime(runtime).problems],
        "preview": _expansion(runtime),
        "withScheduling": {
            "scheduling": scheduled["spec"]["scheduling"],
            "validation": [[p.severity, p.code, p.path] for p in validate_runtime(scheduled).problems],
            "preview": _expansion(scheduled),
        },
        "withLevel1Gang": {
            "validation": [[p.severity, p.code, p.path] for p in validate_runtime(level1).problems],
            "startupDeadlocks": [p.code for p in validate_runtime(level1).startup_deadlocks],
            "podGroups": [{"name": g["metadata"]["name"], "minCount": g["spec"]["schedulingPolicy"].get("gang", {})
                           .get("minCount")} for g in _expansion(level1)["podGroups"]],
        },
    }


def test_all_nine_upstream_runtimes_are_vendored():
    names = {yaml.safe_load(p.read_text())["metadata"]["name"] for p in RUNTIMES}
    assert len(RUNTIMES) == 9 and len(names) == 9


@pytest.mark.parametrize("path", RUNTIMES, ids=[p.stem for p in RUNTIMES])
def test_validation_and_preview_of_an_upstream_runtime_match_the_golden_file(path):
    actual = json.loads(json.dumps(_golden_of(path)))
    golden = GOLDEN / f"{path.stem}.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(json.dumps(actual, indent=1, sort_keys=True) + "\n")
    assert golden.is_file(), f"no golden file {golden.name}; run with UPDATE_GOLDEN=1 to record it"
    assert actual == json.loads(golden.read_text())


@pytest.mark.parametrize("path", RUNTIMES, ids=[p.stem for p in RUNTIMES])
def test_upstream_runtimes_are_valid_as_shipped_and_with_a_v2_4_gang(path):
    golden = _golden_of(path)
    assert [p for p in golden["validation"] if p[0] == "error"] == []
    assert [p for p in golden["withScheduling"]["validation"] if p[0] == "error"] == []
    preview = golden["withScheduling"]["preview"]
    names = [preview["workload"]["metadata"]["name"], *(g["metadata"]["name"] for g in preview["podGroups"])]
    assert all(len(name) <= 63 for name in names)
    assert all("labels" not in obj["metadata"] for obj in [preview["workload"], *preview["podGroups"]])


SEQUENCED = {"deepspeed_distributed", "mlx_distributed", "torch_distributed_with_cache", "llama3_2_1B", "llama3_2_3B",
             "qwen2_5_1.5B"}


@pytest.mark.parametrize("path", RUNTIMES, ids=[p.stem for p in RUNTIMES])
def test_a_level1_gang_on_an_upstream_runtime_is_never_a_startup_deadlock(path):
    """KEP-3015: level 1 with sequenced startup becomes one gang per ReplicatedJob — a warning, never a deadlock."""
    golden = _golden_of(path)["withLevel1Gang"]
    assert golden["startupDeadlocks"] == []
    assert [p for p in golden["validation"] if p[0] == "error"] == []
    split = [p for p in golden["validation"] if p[1] == "scheduling.level1_gang_per_replicated_job"]
    assert bool(split) is (path.stem in SEQUENCED)
    runtime = yaml.safe_load(path.read_text())
    rjobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    # Sequenced: one PodGroup per ReplicatedJob; otherwise one gang over the whole TrainJob.
    assert len(golden["podGroups"]) == (len(rjobs) if path.stem in SEQUENCED else 1)
