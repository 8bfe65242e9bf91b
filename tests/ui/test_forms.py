"""The guided editor's forms: round trip through POST data, key=value parsing, topology keys, problem mapping."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from runtimes.domain.editing import apply_fields, fields_from_json, fields_from_manifest, fields_to_json, merge_fields
from runtimes.domain.manifest import load_runtime, new_runtime
from runtimes.forms.editor import (
    PolicyEditor,
    problem_field_name,
    problems_by_field,
)
from runtimes.forms.fields import clean_topology_key, parse_key_values
from tests.fixture_paths import REFERENCE_RUNTIMES
from tests.ui import editor_post_data, l2_l3_manifest, torch_manifest

REFERENCE = REFERENCE_RUNTIMES
REFERENCE_FILES = sorted(REFERENCE.glob("*.yaml")) if REFERENCE.is_dir() else []


def _manifests() -> list:
    cases = [
        pytest.param(torch_manifest("torch-demo"), id="skeleton"),
        pytest.param(l2_l3_manifest(), id="level2-level3"),
    ]
    cases += [pytest.param(load_runtime(path.read_text()), id=path.stem) for path in REFERENCE_FILES]
    return cases


@pytest.mark.parametrize("manifest", _manifests())
def test_it_round_trips_fields_through_post_data(manifest):
    fields = fields_from_manifest(manifest)
    shown = PolicyEditor.from_fields(fields, fixed_name=fields.name)

    posted = PolicyEditor(data=editor_post_data(shown), fixed_name=fields.name)

    assert posted.is_valid(), (posted.form.errors, posted.rjobs.errors, posted.level2.errors)
    assert posted.to_fields() == fields
    assert posted.posted_base == fields


@pytest.mark.parametrize("manifest", _manifests())
def test_it_applies_untouched_form_as_a_no_op(manifest):
    fields = fields_from_manifest(manifest)
    posted = PolicyEditor(data=editor_post_data(PolicyEditor.from_fields(fields)), fixed_name=fields.name)
    assert posted.is_valid()
    assert apply_fields(manifest, posted.to_fields()) == manifest


def test_it_reads_a_level3_entry_into_the_per_job_fields():
    editor = PolicyEditor.from_fields(fields_from_manifest(l2_l3_manifest()))
    data = editor_post_data(editor)
    assert data["scheduling_mode"] == "level2"
    assert data["l2-TOTAL_FORMS"] == 2
    assert data["l2-1-targets"] == "node"
    assert data["l2-1-per_job"] == "on"
    assert data["l2-1-job_topology_key"] == "topology.kubernetes.io/rack"
    assert "l2-0-per_job" not in data


def test_it_turns_form_edits_into_fields():
    editor = PolicyEditor.from_fields(fields_from_manifest(new_runtime("demo")), creating=True)
    data = editor_post_data(
        editor,
        labels="team=ml\ncost-center=42",
        scheduling_mode="level1",
        l1_policy="gang",
        l1_topology_key="topology.kubernetes.io/zone",
        **{"rjobs-0-replicas": "1", "rjobs-0-resources": "nvidia.com/gpu=8"},
    )
    posted = PolicyEditor(data=data, creating=True)
    assert posted.is_valid(), posted.form.errors
    fields = posted.to_fields()
    assert fields.labels == {"team": "ml", "cost-center": "42"}
    assert fields.scheduling_mode == "level1"
    assert fields.level1 is not None and fields.level1.topology_key == "topology.kubernetes.io/zone"
    assert fields.replicated_jobs[0].resources == {"nvidia.com/gpu": "8"}


def test_it_drops_rows_marked_for_deletion():
    editor = PolicyEditor.from_fields(fields_from_manifest(l2_l3_manifest()))
    posted = PolicyEditor(data=editor_post_data(editor, **{"l2-0-DELETE": "on"}), fixed_name="mpi-racks")
    assert posted.is_valid()
    assert [entry.targets for entry in posted.to_fields().level2] == [["node"]]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("rjobs-0-replicas", "many", "whole number"),
        ("rjobs-0-depends_on", "node", "name:Status"),
        ("rjobs-0-depends_on", "node:Running", "Ready, Complete"),
        ("l1_topology_key", "not a key!", "node-label key"),
        ("labels", "no-equals-sign", "key=value"),
        ("name", "Not_DNS", "not a valid name"),
    ],
)
def test_it_reports_bad_input_at_the_field(field, value, message):
    editor = PolicyEditor.from_fields(fields_from_manifest(new_runtime("demo")), creating=True)
    posted = PolicyEditor(data=editor_post_data(editor, scheduling_mode="level1", **{field: value}), creating=True)
    assert not posted.is_valid()
    errors = " ".join(
        str(error)
        for form in [posted.form, *posted.rjobs.forms]
        for bound in form
        if bound.html_name == field
        for error in bound.errors
    )
    assert message in errors


def test_it_keeps_unknown_choice_values_valid():
    manifest = l2_l3_manifest()
    manifest["spec"]["mlPolicy"]["mpi"]["mpiImplementation"] = "Intel"
    fields = fields_from_manifest(manifest)
    posted = PolicyEditor(data=editor_post_data(PolicyEditor.from_fields(fields)), fixed_name=fields.name)
    assert posted.is_valid(), posted.form.errors
    assert posted.to_fields().mpi_implementation == "Intel"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("a=1\n\n# comment\nexample.com/b = two", {"a": "1", "example.com/b": "two"}),
        ("empty=", {"empty": ""}),
    ],
)
def test_it_parses_key_value_lines(text, expected):
    assert parse_key_values(text, what="labels", check_values=True) == expected


@pytest.mark.parametrize("text", ["novalue", "a=1\na=2", "bad key=1", "a=<script>"])
def test_it_rejects_bad_key_value_lines(text):
    with pytest.raises(ValidationError):
        parse_key_values(text, what="labels", check_values=True)


@pytest.mark.parametrize("key", ["", "topology.kubernetes.io/rack", "cloud.provider.com/topology-block", "rack"])
def test_it_accepts_label_keys_as_topology_keys(key):
    assert clean_topology_key(f" {key} ") == key


@pytest.mark.parametrize("key", ["a/b/c", "-rack", "Example.com/rack", "x" * 64])
def test_it_rejects_invalid_topology_keys(key):
    with pytest.raises(ValidationError):
        clean_topology_key(key)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("metadata.name", "name"),
        ('metadata.labels["trainer.kubeflow.org/framework"]', "framework"),
        ("metadata.labels.team", "labels"),
        ("spec.mlPolicy.numNodes", "num_nodes"),
        ("spec.mlPolicy.mpi.numProcPerNode", "mpi_num_proc_per_node"),
        ("spec.template.spec.replicatedJobs[2].replicas", "rjobs-2-replicas"),
        ("spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].image", "rjobs-0-image"),
        ("spec.scheduling.replicatedJobs[1].targetReplicatedJobs[0]", "l2-1-targets"),
        ("spec.scheduling.replicatedJobs[1].job.schedulingConstraints.topology[0].key", "l2-1-job_topology_key"),
        ("spec.scheduling.schedulingConstraints.topology", "l1_topology_key"),
        ("spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds", "coscheduling_timeout_seconds"),
        ("spec.template.spec.successPolicy", None),
    ],
)
def test_it_maps_problem_paths_to_fields(path, field):
    assert problem_field_name(path) == field


def test_it_splits_problems_into_field_and_other():
    problems = [{"path": "metadata.name", "message": "a"}, {"path": "spec.template.spec.network", "message": "b"}]
    by_field, other = problems_by_field(problems)
    assert by_field == {"name": [problems[0]]}
    assert other == [problems[1]]


def test_it_merges_form_and_yaml_edits_group_by_group():
    base = fields_from_manifest(l2_l3_manifest())
    form = fields_from_manifest(l2_l3_manifest())
    form.num_nodes = 32
    yaml_side = fields_from_manifest(l2_l3_manifest())
    yaml_side.annotations = {"example.com/note": "from YAML"}
    yaml_side.num_nodes = 2

    merged = merge_fields(base=base, form=form, yaml=yaml_side)

    assert merged.num_nodes == 32  # changed in the form: the form wins
    assert merged.annotations == {"example.com/note": "from YAML"}  # unchanged in the form: the YAML wins


def test_it_takes_the_whole_form_without_a_base():
    form = fields_from_manifest(l2_l3_manifest())
    assert merge_fields(base=None, form=form, yaml=fields_from_manifest(torch_manifest())) is form


@pytest.mark.parametrize("manifest", _manifests())
def test_it_round_trips_fields_through_json(manifest):
    fields = fields_from_manifest(manifest)
    assert fields_from_json(fields_to_json(fields)) == fields


@pytest.mark.parametrize("text", ["", "[]", "{", '{"name": 1, "bogus": 2}', '{"replicated_jobs": [1]}'])
def test_it_ignores_a_tampered_base(text):
    assert fields_from_json(text) is None


def _mode_choices(editor: PolicyEditor) -> list[str]:
    return [value for value, _ in editor.form.fields["scheduling_mode"].choices]


def test_it_offers_composite_only_where_the_gate_is_on(settings):
    editor = PolicyEditor.from_fields(fields_from_manifest(torch_manifest()))
    assert "composite" not in _mode_choices(editor)
    settings.SCHEDULING_COMPOSITE_ENABLED = True
    assert "composite" in _mode_choices(PolicyEditor.from_fields(fields_from_manifest(torch_manifest())))


def test_it_shows_an_existing_composite_policy_as_composite():
    manifest = l2_l3_manifest()
    manifest["spec"]["scheduling"]["schedulingPolicy"] = {"gang": {}}
    fields = fields_from_manifest(manifest)
    editor = PolicyEditor.from_fields(fields)
    assert editor.form["scheduling_mode"].value() == "composite"
    assert "composite" in _mode_choices(editor)
    posted = PolicyEditor(data=editor_post_data(editor), fixed_name=fields.name)
    assert posted.is_valid()
    assert posted.to_fields() == fields
