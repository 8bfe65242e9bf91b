"""Changing one form field changes exactly the manifest path it owns (checked with structural_diff)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtimes.domain.constants import MAX_TARGETS_PER_ENTRY
from runtimes.domain.diff import Change, structural_diff
from runtimes.domain.editing import (
    GroupFields,
    Level2Entry,
    PolicyFields,
    ReplicatedJobFields,
    apply_fields,
    fields_from_manifest,
)
from runtimes.domain.manifest import dump_yaml, load_runtime, new_runtime
from runtimes.domain.policy import scheduling_summary, validate_runtime

from .test_policy_cases import upstream, with_scheduling

RJ = "spec.template.spec.replicatedJobs"
FRAMEWORK = 'metadata.labels["trainer.kubeflow.org/framework"]'
ANCESTOR = '["trainer.kubeflow.org/trainjob-ancestor-step"]'


def rjob_named(fields: PolicyFields, name: str) -> ReplicatedJobFields:
    return next(r for r in fields.replicated_jobs if r.name == name)


def edit(base: str | dict, change: Callable[[PolicyFields], None]) -> tuple[dict, dict]:
    original = upstream(base) if isinstance(base, str) else base
    fields = fields_from_manifest(original)
    change(fields)
    return original, apply_fields(original, fields)


def summary(changes: list[Change]) -> list[tuple[str, str]]:
    return sorted((c.path, c.op) for c in changes)


CASES: list[tuple[str, str, Callable[[PolicyFields], None], list[tuple[str, str]]]] = [
    ("name", "torch", lambda f: setattr(f, "name", "torch-v2"), [("metadata.name", "changed")]),
    ("framework", "torch", lambda f: setattr(f, "framework", "pytorch"), [(FRAMEWORK, "changed")]),
    ("framework-cleared", "torch", lambda f: setattr(f, "framework", ""), [("metadata.labels", "removed")]),
    ("label-added", "torch", lambda f: f.labels.update(team="ml"), [("metadata.labels.team", "added")]),
    ("annotation-added", "torch", lambda f: f.annotations.update(note="hi"), [("metadata.annotations", "added")]),
    ("num-nodes", "torch", lambda f: setattr(f, "num_nodes", 8), [("spec.mlPolicy.numNodes", "changed")]),
    ("num-nodes-cleared", "torch", lambda f: setattr(f, "num_nodes", None), [("spec.mlPolicy.numNodes", "removed")]),
    (
        "ml-policy-switched",
        "torch",
        lambda f: setattr(f, "ml_policy", "jax"),
        [("spec.mlPolicy.jax", "added"), ("spec.mlPolicy.torch", "removed")],
    ),
    (
        "mpi-num-proc",
        "deepspeed",
        lambda f: setattr(f, "mpi_num_proc_per_node", 8),
        [("spec.mlPolicy.mpi.numProcPerNode", "changed")],
    ),
    (
        "mpi-launcher-as-node-cleared",
        "deepspeed",
        lambda f: setattr(f, "mpi_run_launcher_as_node", None),
        [("spec.mlPolicy.mpi.runLauncherAsNode", "removed")],
    ),
    (
        "mpi-implementation-cleared",
        "deepspeed",
        lambda f: setattr(f, "mpi_implementation", ""),
        [("spec.mlPolicy.mpi.mpiImplementation", "removed")],
    ),
    (
        "replicas",
        "qwen",
        lambda f: setattr(rjob_named(f, "model-initializer"), "replicas", 2),
        [(f"{RJ}[name=model-initializer].replicas", "added")],
    ),
    (
        "image",
        "deepspeed",
        lambda f: setattr(rjob_named(f, "launcher"), "image", "deepspeed:2"),
        [(f"{RJ}[name=launcher].template.spec.template.spec.containers[name=node].image", "changed")],
    ),
    (
        "resources",
        "qwen",
        lambda f: rjob_named(f, "node").resources.update({"nvidia.com/gpu": "4"}),
        [
            (
                f'{RJ}[name=node].template.spec.template.spec.containers[name=node].resources.limits["nvidia.com/gpu"]',
                "changed",
            )
        ],
    ),
    (
        "resources-added",
        "torch",
        lambda f: rjob_named(f, "node").resources.update(cpu="4"),
        [(f"{RJ}[name=node].template.spec.template.spec.containers[name=node].resources", "added")],
    ),
    (
        "ancestor-cleared",
        "torch",
        lambda f: setattr(rjob_named(f, "node"), "ancestor_step", ""),
        [(f"{RJ}[name=node].template.metadata", "removed")],
    ),
    (
        "ancestor-set",
        "deepspeed",
        lambda f: setattr(rjob_named(f, "node"), "ancestor_step", "model-initializer"),
        [(f"{RJ}[name=node].template.metadata", "added")],
    ),
    (
        "depends-on-status",
        "deepspeed",
        lambda f: setattr(rjob_named(f, "launcher"), "depends_on", [("node", "Complete")]),
        [(f"{RJ}[name=launcher].dependsOn[name=node].status", "changed")],
    ),
    (
        "depends-on-cleared",
        "qwen",
        lambda f: setattr(rjob_named(f, "node"), "depends_on", []),
        [(f"{RJ}[name=node].dependsOn", "removed")],
    ),
    (
        "container-renamed",
        "torch",
        lambda f: setattr(rjob_named(f, "node"), "container_name", "trainer"),
        [
            (f"{RJ}[name=node].template.spec.template.spec.containers[name=node]", "removed"),
            (f"{RJ}[name=node].template.spec.template.spec.containers[name=trainer]", "added"),
        ],
    ),
    (
        "rjob-removed",
        "qwen",
        lambda f: f.replicated_jobs.pop(0),
        [(f"{RJ}[name=dataset-initializer]", "removed")],
    ),
    (
        "rjob-added",
        "torch",
        lambda f: f.replicated_jobs.append(ReplicatedJobFields(name="aux", image="busybox", container_name="aux")),
        [(f"{RJ}[name=aux]", "added")],
    ),
    (
        "level1",
        "torch",
        lambda f: (
            setattr(f, "scheduling_mode", "level1"),
            setattr(f, "level1", GroupFields(topology_key="topology.kubernetes.io/zone")),
        ),
        [("spec.scheduling", "added")],
    ),
    (
        "coscheduling",
        "torch",
        lambda f: (setattr(f, "scheduling_mode", "coscheduling"), setattr(f, "coscheduling_timeout_seconds", 90)),
        [("spec.podGroupPolicy", "added")],
    ),
]


@pytest.mark.parametrize(("base", "change", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_form_field_changes_exactly_its_path(base, change, expected):
    original, edited = edit(base, change)
    assert summary(structural_diff(original, edited)) == sorted(expected)


def test_apply_fields_does_not_modify_its_input():
    original = upstream("qwen")
    snapshot = dump_yaml(original)
    fields = fields_from_manifest(original)
    fields.num_nodes = 3
    fields.replicated_jobs.reverse()
    apply_fields(original, fields)
    assert dump_yaml(original) == snapshot


def test_reordering_replicated_jobs_keeps_each_job_intact():
    original, edited = edit("qwen", lambda f: f.replicated_jobs.reverse())
    # The order is the only change (JobSet starts ReplicatedJobs in list order); every item is as it was.
    names = ["node", "model-initializer", "dataset-initializer"]
    assert structural_diff(original, edited) == [Change(RJ, "changed", names[::-1], names)]
    assert [r["name"] for r in edited["spec"]["template"]["spec"]["replicatedJobs"]] == names


def test_renaming_a_replicated_job_follows_success_policy_and_keeps_its_template():
    def rename(fields: PolicyFields) -> None:
        rjob_named(fields, "launcher").name = "driver"

    original, edited = edit("deepspeed", rename)
    jobset = edited["spec"]["template"]["spec"]
    assert jobset["successPolicy"]["targetReplicatedJobs"] == ["driver"]
    driver = jobset["replicatedJobs"][1]
    assert driver["name"] == "driver"
    assert driver["template"] == original["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]


def test_level2_entries_written_from_the_form_validate_and_summarise():
    def gang_trainer(fields: PolicyFields) -> None:
        fields.scheduling_mode = "level2"
        fields.level2 = [
            Level2Entry(targets=["dataset-initializer", "model-initializer"], group=GroupFields(policy="basic")),
            Level2Entry(targets=["node"], group=GroupFields(topology_key="cloud.example.com/block")),
        ]

    _, edited = edit("qwen", gang_trainer)
    assert edited["spec"]["scheduling"] == {
        "replicatedJobs": [
            {"targetReplicatedJobs": ["dataset-initializer", "model-initializer"], "schedulingPolicy": {"basic": {}}},
            {
                "targetReplicatedJobs": ["node"],
                "schedulingPolicy": {"gang": {}},
                "schedulingConstraints": {"topology": [{"key": "cloud.example.com/block"}]},
            },
        ]
    }
    assert validate_runtime(edited).problems == ()
    assert scheduling_summary(edited).text == "L2 · 2 groups (basic, gang) · block"


def test_a_three_level_policy_built_through_the_form():
    def three_levels(fields: PolicyFields) -> None:
        fields.scheduling_mode = "level2"
        fields.level1 = GroupFields(topology_key="topology.kubernetes.io/zone")
        fields.level2 = [
            Level2Entry(
                targets=["node"],
                group=GroupFields(topology_key="cloud.example.com/block"),
                job=GroupFields(topology_key="topology.kubernetes.io/rack", disruption_mode="all"),
            )
        ]

    _, edited = edit("torch", three_levels)
    assert edited["spec"]["scheduling"] == {
        "schedulingPolicy": {"gang": {}},
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
        "replicatedJobs": [
            {
                "targetReplicatedJobs": ["node"],
                "schedulingPolicy": {"gang": {}},
                "schedulingConstraints": {"topology": [{"key": "cloud.example.com/block"}]},
                "job": {
                    "schedulingPolicy": {"gang": {}},
                    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
                    "disruptionMode": {"all": {}},
                },
            }
        ],
    }
    from runtimes.domain.policy import ValidationOptions

    assert validate_runtime(edited, ValidationOptions(composite_enabled=True)).errors == ()
    assert "scheduling.levels_exclusive" in validate_runtime(edited).codes
    assert scheduling_summary(edited).mode == "composite"
    assert scheduling_summary(edited).levels == (1, 2, 3)


def test_a_level3_entry_without_composite_writes_only_the_job():
    def level3(fields: PolicyFields) -> None:
        fields.scheduling_mode = "level2"
        fields.level2 = [Level2Entry(targets=["node"], job=GroupFields(topology_key="topology.kubernetes.io/rack"))]

    _, edited = edit("torch", level3)
    assert edited["spec"]["scheduling"]["replicatedJobs"] == [
        {
            "targetReplicatedJobs": ["node"],
            "job": {
                "schedulingPolicy": {"gang": {}},
                "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
            },
        }
    ]
    assert validate_runtime(edited).problems == ()
    assert scheduling_summary(edited).text == "L3 · node (gang) · rack"


def test_editing_a_scheduling_group_keeps_fields_the_form_does_not_model():
    claims = [{"name": "tpu", "resourceClaimTemplateName": "tpu-template"}]
    base = with_scheduling(
        "torch",
        {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "job": {"resourceClaims": claims, "futureField": 1}}]},
    )

    def set_rack(fields: PolicyFields) -> None:
        assert fields.level2[0].job is not None
        fields.level2[0].job.topology_key = "topology.kubernetes.io/rack"

    original, edited = edit(base, set_rack)
    prefix = "spec.scheduling.replicatedJobs[0].job"
    assert summary(structural_diff(original, edited)) == [(f"{prefix}.schedulingConstraints", "added")]
    assert edited["spec"]["scheduling"]["replicatedJobs"][0]["job"]["resourceClaims"] == claims


def test_switching_from_scheduling_to_none_removes_it_and_legacy_policies_are_exclusive():
    base = with_scheduling("torch", {"schedulingPolicy": {"gang": {}}})
    _, cleared = edit(base, lambda f: setattr(f, "scheduling_mode", "none"))
    assert "scheduling" not in cleared["spec"]
    _, volcano = edit(
        base,
        lambda f: (setattr(f, "scheduling_mode", "volcano"), setattr(f, "volcano_mode", "soft")),
    )
    assert "scheduling" not in volcano["spec"]
    assert volcano["spec"]["podGroupPolicy"] == {"volcano": {"networkTopology": {"mode": "soft"}}}
    _, level1 = edit(volcano, lambda f: (setattr(f, "scheduling_mode", "level1"), setattr(f, "level1", GroupFields())))
    assert "podGroupPolicy" not in level1["spec"]
    assert level1["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {}}}


def test_new_keys_are_inserted_in_kubectl_order():
    _, edited = edit(
        "torch",
        lambda f: (setattr(f, "scheduling_mode", "coscheduling"), f.annotations.update(note="x")),
    )
    assert list(edited["spec"]) == ["mlPolicy", "podGroupPolicy", "template"]
    assert list(edited["metadata"]) == ["name", "labels", "annotations"]


def test_apply_fields_on_nothing_builds_a_valid_runtime():
    fields = fields_from_manifest(new_runtime("from-form"))
    built = apply_fields(None, fields)
    assert validate_runtime(built).problems == ()
    assert built["metadata"]["name"] == "from-form"
    assert list(built) == ["apiVersion", "kind", "metadata", "spec"]


def test_cleared_optional_values_are_removed_not_nulled():
    def clear(fields: PolicyFields) -> None:
        fields.framework = ""
        fields.num_nodes = None
        fields.ml_policy = ""
        rjob_named(fields, "node").image = ""

    _, edited = edit("torch", clear)
    text = dump_yaml(edited)
    assert "null" not in text and "{}" not in text and "''" not in text
    assert "mlPolicy" not in edited["spec"]
    assert "labels" not in edited["metadata"]


def test_level1_mode_ignores_stale_level2_entries_and_writes_level1_explicitly():
    base = with_scheduling("torch", {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}]})

    def to_level1(fields: PolicyFields) -> None:
        fields.scheduling_mode = "level1"  # level2 still holds the old entry, as a form switching mode would

    _, edited = edit(base, to_level1)
    assert edited["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {}}}
    assert fields_from_manifest(edited).level2 == []


def test_level2_mode_with_level1_set_is_composite():
    def composite(fields: PolicyFields) -> None:
        fields.scheduling_mode = "level2"
        fields.level1 = GroupFields(policy="basic")
        fields.level2 = [Level2Entry(targets=["node"])]

    _, edited = edit("torch", composite)
    assert edited["spec"]["scheduling"] == {
        "schedulingPolicy": {"basic": {}},
        "replicatedJobs": [{"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}}],
    }
    assert scheduling_summary(edited).mode == "composite"


def test_removing_level1_from_a_composite_keeps_the_entries():
    base = with_scheduling(
        "torch",
        {
            "schedulingPolicy": {"gang": {}},
            "resourceClaims": [],
            "replicatedJobs": [{"targetReplicatedJobs": ["node"]}],
        },
    )
    _, edited = edit(base, lambda f: setattr(f, "level1", None))
    assert edited["spec"]["scheduling"] == {"replicatedJobs": [{"targetReplicatedJobs": ["node"]}]}


# --- property: whatever the form asks for is what the manifest then says -------------------------------------

_NAMES = st.sampled_from(["node", "launcher", "aux", "dataset-initializer", "model-initializer"])
_GROUPS = st.builds(
    GroupFields,
    policy=st.sampled_from(["gang", "basic"]),
    topology_key=st.sampled_from(["", "topology.kubernetes.io/zone", "cloud.example.com/block"]),
    disruption_mode=st.sampled_from(["", "single", "all"]),
)
_RJOBS = st.builds(
    ReplicatedJobFields,
    name=_NAMES,
    replicas=st.integers(0, 3),
    ancestor_step=st.sampled_from(["", "trainer", "model-initializer"]),
    depends_on=st.lists(
        st.tuples(_NAMES, st.sampled_from(["Ready", "Complete"])), max_size=2, unique_by=lambda t: t[0]
    ),
    image=st.sampled_from(["", "busybox", "trainer:2"]),
    container_name=st.sampled_from(["", "node", "main"]),
    resources=st.dictionaries(st.sampled_from(["cpu", "nvidia.com/gpu"]), st.sampled_from(["1", "2"]), max_size=2),
)
_CHANGES = {
    "name": st.sampled_from(["n1", "n2"]),
    "framework": st.sampled_from(["", "torch", "jax"]),
    "labels": st.dictionaries(st.sampled_from(["team", "tier"]), st.sampled_from(["a", "b"]), max_size=2),
    "annotations": st.dictionaries(st.sampled_from(["note", "doc"]), st.sampled_from(["", "x"]), max_size=2),
    "num_nodes": st.none() | st.integers(1, 4),
    "ml_policy": st.sampled_from(["", "torch", "mpi", "jax", "flux"]),
    "mpi_num_proc_per_node": st.none() | st.integers(1, 3),
    "mpi_implementation": st.sampled_from(["", "OpenMPI"]),
    "mpi_ssh_auth_mount_path": st.sampled_from(["", "/ssh"]),
    "mpi_run_launcher_as_node": st.none() | st.booleans(),
    "flux_num_proc_per_node": st.none() | st.integers(1, 3),
    "scheduling_mode": st.sampled_from(["none", "level1", "level2", "coscheduling", "volcano"]),
    "level1": st.none() | _GROUPS,
    "level2": st.lists(
        st.builds(
            Level2Entry, targets=st.lists(_NAMES, max_size=2, unique=True), group=_GROUPS, job=st.none() | _GROUPS
        ),
        max_size=3,
    ),
    "coscheduling_timeout_seconds": st.none() | st.integers(1, 100),
    "volcano_mode": st.sampled_from(["", "hard", "soft"]),
    "volcano_highest_tier_allowed": st.none() | st.integers(1, 3),
    "replicated_jobs": st.lists(_RJOBS, max_size=4, unique_by=lambda r: r.name),
}


def _untargeted_names(fields: PolicyFields) -> list[str]:
    if fields.scheduling_mode != "level2" or not fields.level2:
        return []
    targeted = {t for entry in fields.level2 for t in entry.targets}
    return [r.name for r in fields.replicated_jobs if r.name and r.name not in targeted]


def _expected(fields: PolicyFields, before: PolicyFields) -> PolicyFields:
    """What reading the edited manifest back must give: fields of an unselected ML policy or mode are dropped, and
    a ReplicatedJob the edit left untargeted at level 2 gets a basic entry (Trainer v2.4 rejects untargeted ones;
    one already untargeted `before` the edit is left for the form's error and its one-click fix)."""
    f = copy.deepcopy(fields)
    already = set(_untargeted_names(before))
    missing = [name for name in _untargeted_names(f) if name not in already]
    for start in range(0, len(missing), MAX_TARGETS_PER_ENTRY):
        f.level2.append(Level2Entry(targets=missing[start : start + MAX_TARGETS_PER_ENTRY],
                                    group=GroupFields(policy="basic")))
    if f.ml_policy != "mpi":
        f.mpi_num_proc_per_node, f.mpi_implementation, f.mpi_ssh_auth_mount_path = None, "", ""
        f.mpi_run_launcher_as_node = None
    if f.ml_policy != "flux":
        f.flux_num_proc_per_node = None
    if f.scheduling_mode in ("none", "coscheduling", "volcano"):
        f.level1, f.level2 = None, []
    if f.scheduling_mode == "level1" or (f.scheduling_mode == "level2" and not f.level2):
        f.scheduling_mode, f.level1, f.level2 = "level1", f.level1 or GroupFields(), []
    if f.scheduling_mode != "coscheduling":
        f.coscheduling_timeout_seconds = None
    if f.scheduling_mode != "volcano":
        f.volcano_mode, f.volcano_highest_tier_allowed = "", None
    for rjob in f.replicated_jobs:
        rjob.original_name = rjob.name
    return f


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(["torch", "deepspeed", "qwen"]), data=st.data())
def test_the_manifest_says_what_the_form_asked_for(base, data):
    original = upstream(base)
    fields = fields_from_manifest(original)
    for name in data.draw(st.sets(st.sampled_from(sorted(_CHANGES)), max_size=6)):
        setattr(fields, name, data.draw(_CHANGES[name]))
    edited = apply_fields(original, fields)
    assert original == upstream(base)
    assert load_runtime(dump_yaml(edited)) == edited
    back = fields_from_manifest(edited)
    want = _expected(fields, fields_from_manifest(original))
    for read, asked in zip(back.replicated_jobs, want.replicated_jobs, strict=False):
        if not asked.container_name:  # an empty container name keeps the existing one
            read.container_name = ""
    assert back == want


def test_a_new_trainer_job_gets_the_container_the_webhook_requires():
    def add_trainer(fields: PolicyFields) -> None:
        fields.replicated_jobs = [ReplicatedJobFields(name="trainer", ancestor_step="trainer", image="pytorch:2")]

    _, edited = edit("torch", add_trainer)
    (job,) = edited["spec"]["template"]["spec"]["replicatedJobs"]
    assert job == {
        "name": "trainer",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "pytorch:2"}]}}},
        },
    }
    assert validate_runtime(edited).problems == ()


def _level2_gang_on_node() -> dict:
    manifest = new_runtime("gang-node")
    fields = fields_from_manifest(manifest)
    fields.scheduling_mode = "level2"
    fields.level2 = [Level2Entry(targets=["node"])]
    return apply_fields(manifest, fields)


def test_turning_on_level3_moves_the_group_under_job_and_leaves_no_level2_default_beside_it():
    manifest = _level2_gang_on_node()
    assert manifest["spec"]["scheduling"]["replicatedJobs"] == [
        {"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}}
    ]
    fields = fields_from_manifest(manifest)
    fields.level2[0].job = GroupFields(topology_key="topology.kubernetes.io/rack")

    result = apply_fields(manifest, fields)

    assert result["spec"]["scheduling"]["replicatedJobs"] == [
        {
            "targetReplicatedJobs": ["node"],
            "job": {
                "schedulingPolicy": {"gang": {}},
                "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
            },
        }
    ]
    assert not validate_runtime(result).errors


def test_turning_off_level3_writes_the_level2_group_in_full():
    manifest = _level2_gang_on_node()
    fields = fields_from_manifest(manifest)
    fields.level2[0].job = GroupFields()
    with_job = apply_fields(manifest, fields)
    fields = fields_from_manifest(with_job)
    fields.level2[0].job = None

    result = apply_fields(with_job, fields)

    assert result == manifest


def test_an_entry_with_explicit_level2_fields_and_a_job_is_left_alone_when_untouched():
    manifest = _level2_gang_on_node()
    entry = manifest["spec"]["scheduling"]["replicatedJobs"][0]
    entry["job"] = {"schedulingPolicy": {"gang": {}}}

    assert apply_fields(manifest, fields_from_manifest(manifest)) == manifest
