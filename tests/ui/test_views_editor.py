"""The editor: form → YAML and YAML → form endpoints, the no-JS save path, validation and stale versions."""

from __future__ import annotations

import pytest
from django.urls import reverse

from runtimes.domain.editing import fields_from_manifest
from runtimes.domain.manifest import dump_yaml, load_runtime, new_runtime
from runtimes.forms.editor import PolicyEditor
from runtimes.selectors import policy_get, revision_list
from runtimes.services.policies import policy_update
from tests.ui import editor_post_data, l2_l3_manifest, make_policy, torch_manifest

RENDER = reverse("runtimes:render-yaml")
PARSE = reverse("runtimes:parse-yaml")
NEW = reverse("runtimes:new")


def edit_url(name: str) -> str:
    return reverse("runtimes:edit", kwargs={"name": name})


def shown_data(manifest: dict, *, creating: bool = False, **overrides) -> dict:
    """POST data of the editor as rendered for `manifest` (YAML included), with `overrides` applied."""
    fields = fields_from_manifest(manifest)
    editor = PolicyEditor.from_fields(fields, creating=creating, fixed_name="" if creating else fields.name)
    base = {"yaml": dump_yaml(manifest), "_policy": "" if creating else fields.name}
    return editor_post_data(editor, **{**base, **overrides})


@pytest.fixture
def admin_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def racks(alice):
    return make_policy(l2_l3_manifest(), alice)


# ----------------------------------------------------------------------------------------------- form → YAML


@pytest.mark.django_db
def test_it_renders_form_changes_into_the_yaml_and_keeps_unmodelled_fields(admin_client, racks):
    data = shown_data(racks.manifest, **{"l2-1-job_topology_key": "cloud.provider.com/topology-block"})
    response = admin_client.post(RENDER, data, headers={"HX-Request": "true"})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="yaml-pane"' in html
    assert 'id="problems-panel"' in html and 'hx-swap-oob="true"' in html
    text = response.context["yaml_text"]
    manifest = load_runtime(text)
    job = manifest["spec"]["scheduling"]["replicatedJobs"][1]["job"]
    assert job["schedulingConstraints"]["topology"] == [{"key": "cloud.provider.com/topology-block"}]
    # Fields the form does not model survive the edit.
    assert manifest["spec"]["template"]["spec"]["network"] == {"publishNotReadyAddresses": True}
    node = manifest["spec"]["template"]["spec"]["replicatedJobs"][1]
    assert node["template"]["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] == {
        "tcpSocket": {"port": 2222}
    }


@pytest.mark.django_db
def test_it_leaves_the_yaml_text_alone_when_the_form_matches_it(admin_client, racks):
    text = "# my comment\n" + dump_yaml(racks.manifest)
    response = admin_client.post(RENDER, shown_data(racks.manifest, yaml=text))
    assert response.context["yaml_text"] == text


@pytest.mark.django_db
def test_it_builds_a_three_level_policy_from_the_form(admin_client):
    data = shown_data(
        new_runtime(""),
        creating=True,
        name="three-levels",
        scheduling_mode="level2",
        **{
            "l2-TOTAL_FORMS": "2",
            "l2-0-targets": "node",
            "l2-0-policy": "gang",
            "l2-0-per_job": "on",
            "l2-0-job_policy": "gang",
            "l2-0-job_topology_key": "topology.kubernetes.io/rack",
            "l2-1-targets": "node",
            "l2-1-policy": "basic",
        },
    )
    response = admin_client.post(RENDER, data)
    manifest = load_runtime(response.context["yaml_text"])
    assert manifest["metadata"]["name"] == "three-levels"
    entries = manifest["spec"]["scheduling"]["replicatedJobs"]
    assert entries[0]["job"]["schedulingConstraints"]["topology"][0]["key"] == "topology.kubernetes.io/rack"
    # Targeting `node` twice is a domain error, shown in the checks panel next to the editor.
    codes = {problem["code"] for problem in response.context["problems"]}
    assert any("target" in code for code in codes), codes


@pytest.mark.django_db
def test_it_reports_form_errors_without_touching_the_yaml(admin_client, racks):
    response = admin_client.post(RENDER, shown_data(racks.manifest, **{"rjobs-0-replicas": "lots"}))
    assert response.status_code == 200
    assert response["HX-Reswap"] == "none"
    html = response.content.decode()
    assert "The form has errors" in html and "whole number" in html


@pytest.mark.django_db
def test_it_does_not_apply_the_form_onto_invalid_yaml(admin_client, racks):
    response = admin_client.post(RENDER, shown_data(racks.manifest, yaml="spec: [\n"))
    assert response["HX-Reswap"] == "none"
    assert "Fix the YAML first" in response.content.decode()


# ----------------------------------------------------------------------------------------------- YAML → form


@pytest.mark.django_db
def test_it_refills_the_form_from_valid_yaml(admin_client, racks):
    manifest = l2_l3_manifest()
    manifest["spec"]["mlPolicy"]["numNodes"] = 16
    manifest["spec"]["scheduling"]["replicatedJobs"][1]["job"]["schedulingConstraints"]["topology"][0]["key"] = (
        "topology.kubernetes.io/zone"
    )
    response = admin_client.post(PARSE, {"yaml": dump_yaml(manifest), "_policy": "mpi-racks"})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="form-fields"' in html
    assert 'name="num_nodes" value="16"' in html
    assert 'value="topology.kubernetes.io/zone"' in html
    assert 'id="sync-status"' in html and "YAML is valid" in html


@pytest.mark.django_db
def test_it_reports_invalid_yaml_with_line_and_column_and_keeps_the_form(admin_client, racks):
    text = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n  name: [x\n"
    response = admin_client.post(PARSE, {"yaml": text, "_policy": "mpi-racks"})
    assert response.status_code == 200
    assert response["HX-Reswap"] == "none"
    html = response.content.decode()
    assert 'id="form-fields"' not in html
    assert "YAML error at line" in html and "column" in html
    assert 'data-error-line="' in html


@pytest.mark.django_db
def test_it_explains_a_wrong_kind(admin_client):
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
    html = admin_client.post(PARSE, {"yaml": text}).content.decode()
    assert "ClusterTrainingRuntime" in html


# ----------------------------------------------------------------------------------------------- saving (no JS)


@pytest.mark.django_db
def test_it_creates_a_policy_from_the_form_alone(admin_client):
    data = shown_data(
        new_runtime(""),
        creating=True,
        name="from-form",
        scheduling_mode="level1",
        l1_policy="gang",
        l1_topology_key="topology.kubernetes.io/zone",
        message="first cut",
    )
    response = admin_client.post(NEW, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert response["Location"] == reverse("runtimes:detail", kwargs={"name": "from-form"})
    policy = policy_get(name="from-form")
    assert policy.manifest["spec"]["scheduling"]["schedulingConstraints"]["topology"] == [
        {"key": "topology.kubernetes.io/zone"}
    ]
    revision = revision_list(policy=policy).first()
    assert (revision.message, revision.source, revision.author_name) == ("first cut", "form", "alice")


@pytest.mark.django_db
def test_it_creates_a_policy_from_the_yaml_alone(admin_client):
    manifest = l2_l3_manifest("from-yaml")
    # The form is as rendered for the blank skeleton; only the YAML was edited (no JavaScript).
    data = shown_data(new_runtime(""), creating=True, yaml=dump_yaml(manifest))
    response = admin_client.post(NEW, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    policy = policy_get(name="from-yaml")
    assert policy.manifest == manifest
    assert revision_list(policy=policy).first().source == "yaml"


@pytest.mark.django_db
def test_it_merges_form_edits_into_edited_yaml(admin_client, racks):
    manifest = l2_l3_manifest()
    manifest["metadata"]["annotations"] = {"example.com/note": "edited in YAML"}
    data = shown_data(racks.manifest, yaml=dump_yaml(manifest), num_nodes="32", version="1")
    response = admin_client.post(edit_url("mpi-racks"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    racks.refresh_from_db()
    assert racks.version == 2
    assert racks.manifest["spec"]["mlPolicy"]["numNodes"] == 32
    assert racks.manifest["metadata"]["annotations"] == {"example.com/note": "edited in YAML"}


@pytest.mark.django_db
def test_it_says_so_when_nothing_changed(admin_client, racks):
    response = admin_client.post(edit_url("mpi-racks"), shown_data(racks.manifest, version="1"), follow=True)
    assert "No changes to save" in response.content.decode()
    racks.refresh_from_db()
    assert racks.version == 1


@pytest.mark.django_db
def test_it_shows_validation_errors_at_the_field_and_saves_nothing(admin_client, racks):
    data = shown_data(racks.manifest, version="1", **{"rjobs-1-name": "Bad_Name"})
    response = admin_client.post(edit_url("mpi-racks"), data)
    assert response.status_code == 200
    html = response.content.decode()
    assert "nothing was saved" in html
    field_problems = response.context["field_problems"]
    assert any(name.startswith("rjobs-1-") or name.startswith("l2-") for name in field_problems), field_problems
    assert 'class="field__problem' in html
    racks.refresh_from_db()
    assert racks.version == 1


@pytest.mark.django_db
def test_it_shows_invalid_yaml_on_save(admin_client, racks):
    response = admin_client.post(edit_url("mpi-racks"), shown_data(racks.manifest, yaml="a: [", version="1"))
    assert response.status_code == 200
    assert "YAML error at line 1" in response.content.decode()


@pytest.mark.django_db
def test_it_refuses_a_taken_name(admin_client, racks):
    data = shown_data(new_runtime(""), creating=True, name="mpi-racks")
    response = admin_client.post(NEW, data)
    assert response.status_code == 200
    assert "already exists" in response.content.decode()


@pytest.mark.django_db
def test_it_rejects_a_stale_version_and_shows_what_changed(admin_client, racks, alice):
    changed = l2_l3_manifest()
    changed["spec"]["mlPolicy"]["numNodes"] = 64
    policy_update(name="mpi-racks", manifest=changed, expected_version=1, author=alice, message="meanwhile")

    data = shown_data(l2_l3_manifest(), num_nodes="8", version="1", message="mine")
    response = admin_client.post(edit_url("mpi-racks"), data)

    assert response.status_code == 409
    html = response.content.decode()
    assert "changed since you loaded it" in html
    assert "diff__line--add" in html and "64" in html
    # The user's input is kept and the next Save is based on the current version.
    assert str(response.context["editor"].form["num_nodes"].value()) == "8"
    assert response.context["version"] == 2
    racks.refresh_from_db()
    assert racks.manifest["spec"]["mlPolicy"]["numNodes"] == 64


@pytest.mark.django_db
def test_it_adds_a_blank_row_without_javascript(admin_client, racks):
    data = shown_data(racks.manifest, version="1", _action="add-rjob")
    response = admin_client.post(edit_url("mpi-racks"), data)
    assert response.status_code == 200
    assert response.context["editor"].rjobs.total_form_count() == 3
    racks.refresh_from_db()
    assert racks.version == 1


@pytest.mark.django_db
def test_it_prefills_the_new_page_with_a_skeleton(admin_client):
    response = admin_client.get(NEW)
    assert response.status_code == 200
    assert load_runtime(response.context["yaml_text"])["kind"] == "ClusterTrainingRuntime"
    html = response.content.decode()
    assert 'list="topology-keys"' in html
    assert "cloud.provider.com/topology-block" in html  # settings.TOPOLOGY_BLOCK_KEY is offered


@pytest.mark.django_db
def test_it_shows_current_warnings_when_editing(admin_client, alice):
    manifest = torch_manifest("warned")
    manifest["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {}}, "disruptionMode": "PodGroup"}
    make_policy(manifest, alice)
    response = admin_client.get(edit_url("warned"))
    assert response.context["warning_count"] >= 1


@pytest.mark.django_db
def test_it_returns_just_the_form_when_htmx_adds_a_row(admin_client, racks):
    data = shown_data(racks.manifest, version="1", _action="add-l2")
    response = admin_client.post(edit_url("mpi-racks"), data, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="form-fields">')
    assert response.context["editor"].level2.total_form_count() == 3
    # The form's own buttons keep posting to the edit page, whichever endpoint rendered the fragment.
    assert f'hx-post="{edit_url("mpi-racks")}"' in html


@pytest.mark.django_db
def test_it_keeps_add_buttons_on_the_page_url_in_parsed_fragments(admin_client, racks):
    html = admin_client.post(PARSE, {"yaml": dump_yaml(racks.manifest), "_policy": "mpi-racks"}).content.decode()
    assert f'hx-post="{edit_url("mpi-racks")}"' in html


@pytest.mark.django_db
def test_it_refuses_an_edit_without_a_version(admin_client, racks):
    response = admin_client.post(edit_url("mpi-racks"), shown_data(racks.manifest, num_nodes="2"))
    assert response.status_code == 400
    assert "reload the page" in response.content.decode()


@pytest.mark.django_db
def test_it_lets_a_no_js_user_fix_in_the_yaml_what_the_form_broke(admin_client, racks):
    # The launcher is the trainer ancestor step, which must have exactly one replica.
    data = shown_data(racks.manifest, version="1", num_nodes="3", **{"rjobs-0-replicas": "5"})
    broken = admin_client.post(edit_url("mpi-racks"), data)
    assert broken.status_code == 200
    assert "nothing was saved" in broken.content.decode()
    shown_yaml = broken.context["yaml_text"]
    assert "replicas: 5" in shown_yaml

    # Resubmit the page as shown, with the YAML corrected by hand.
    data = editor_post_data(
        broken.context["editor"], yaml=shown_yaml.replace("replicas: 5", "replicas: 1"), version="1", _policy=""
    )
    fixed = admin_client.post(edit_url("mpi-racks"), data)

    assert fixed.status_code == 302, fixed.content.decode()[:2000]
    racks.refresh_from_db()
    assert racks.manifest["spec"]["mlPolicy"]["numNodes"] == 3


def test_the_topology_key_picker_offers_the_label_keys_on_the_clusters_nodes(client, alice):
    from sandbox.topology import make_node
    from trainer_portal.cluster import snapshots
    from trainer_portal.placement.tracker import TopologyTracker

    tracker = TopologyTracker(snapshots.topology_keys())
    nodes = [make_node(f"n{i}", zone="zone-a", block="b1", rack=f"r{i % 2}") for i in range(3)]
    nodes[0]["metadata"]["labels"]["example.com/pod-of-racks"] = "pod-7"
    tracker.relist_nodes(nodes, "1")
    snapshots.save_live_snapshot(tracker.to_live(source="list"))
    client.force_login(alice)

    page = client.get("/runtimes/new/").content.decode()

    assert '<option value="example.com/pod-of-racks" label="1 node, 1 value: pod-7 (1)">' in page
    assert '<option value="topology.kubernetes.io/rack" label="3 nodes, 2 values: r0 (2), r1 (1)">' in page


@pytest.mark.django_db
def test_the_topology_key_picker_counts_every_node_and_value_beyond_the_listed_ones(client, alice):
    from sandbox.topology import make_node
    from trainer_portal.cluster import snapshots
    from trainer_portal.placement.tracker import MAX_LABEL_VALUES, TopologyTracker

    tracker = TopologyTracker(snapshots.topology_keys())
    count = MAX_LABEL_VALUES * 2 + 10
    nodes = [make_node(f"n{i}", zone="zone-a", block="b1", rack=f"r{i:03d}") for i in range(count)]
    tracker.relist_nodes(nodes, "1")
    snapshots.save_live_snapshot(tracker.to_live(source="list"))
    client.force_login(alice)

    page = client.get("/runtimes/new/").content.decode()

    assert f'<option value="topology.kubernetes.io/rack" label="{count} nodes, {count} values: ' in page
    assert f'<option value="topology.kubernetes.io/zone" label="{count} nodes, 1 value: zone-a ({count})">' in page
