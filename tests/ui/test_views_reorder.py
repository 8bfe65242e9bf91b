"""ReplicatedJobs move up and down in the guided form, with and without JavaScript; nothing is saved by a move."""

from __future__ import annotations

import pytest
from django.urls import reverse

from runtimes.domain.manifest import load_runtime
from runtimes.selectors import policy_get
from tests.ui import l2_l3_manifest, make_policy

from .test_views_editor import edit_url, shown_data


@pytest.fixture
def admin_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def racks(alice):
    return make_policy(l2_l3_manifest(), alice)


def rjob_names(manifest: dict) -> list[str]:
    return [r["name"] for r in manifest["spec"]["template"]["spec"]["replicatedJobs"]]


@pytest.mark.django_db
def test_it_moves_a_replicated_job_down_without_javascript_and_the_yaml_follows(admin_client, racks):
    data = shown_data(racks.manifest, version="1", _action="move-rjob-0-down")
    response = admin_client.post(edit_url("mpi-racks"), data)
    assert response.status_code == 200
    rjobs = response.context["editor"].rjobs
    assert [form.initial["name"] for form in rjobs] == ["node", "launcher"]
    manifest = load_runtime(response.context["yaml_text"])
    assert rjob_names(manifest) == ["node", "launcher"]
    # What the form does not model moves with its ReplicatedJob.
    node = manifest["spec"]["template"]["spec"]["replicatedJobs"][0]
    assert node["template"]["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    html = response.content.decode()
    assert 'value="move-rjob-0-down"' in html and 'value="move-rjob-1-up"' in html
    assert 'value="move-rjob-0-up"' not in html and 'value="move-rjob-1-down"' not in html
    racks.refresh_from_db()
    assert racks.version == 1 and rjob_names(racks.manifest) == ["launcher", "node"]


@pytest.mark.django_db
def test_the_moved_order_is_saved_and_recorded_as_a_form_edit(admin_client, racks):
    data = shown_data(racks.manifest, version="1", _action="move-rjob-1-up")
    moved = admin_client.post(edit_url("mpi-racks"), data).context
    save = shown_data(
        load_runtime(moved["yaml_text"]), version="1", _action="save", message="node first", form_edited="1"
    )
    response = admin_client.post(edit_url("mpi-racks"), save)
    assert response.status_code == 302
    policy = policy_get(name="mpi-racks")
    assert rjob_names(policy.manifest) == ["node", "launcher"]
    assert policy.revisions.order_by("-number").first().source == "form"


@pytest.mark.django_db
def test_htmx_gets_the_form_and_the_yaml_in_the_new_order(admin_client, racks):
    data = shown_data(racks.manifest, version="1", _action="move-rjob-0-down")
    response = admin_client.post(edit_url("mpi-racks"), data, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="form-fields">')
    assert '<div id="yaml-pane" hx-swap-oob="true">' in html
    assert 'id="id_form_edited" value="1" hx-swap-oob="true"' in html
    assert rjob_names(load_runtime(response.context["yaml_text"])) == ["node", "launcher"]


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["move-rjob-0-up", "move-rjob-1-down", "move-rjob-7-down"])
def test_a_move_past_either_end_changes_nothing(admin_client, racks, action):
    response = admin_client.post(edit_url("mpi-racks"), shown_data(racks.manifest, version="1", _action=action))
    assert response.status_code == 200
    assert rjob_names(load_runtime(response.context["yaml_text"])) == ["launcher", "node"]


@pytest.mark.django_db
def test_rows_still_move_when_the_yaml_does_not_parse(admin_client, racks):
    data = shown_data(racks.manifest, version="1", yaml="spec: [", _action="move-rjob-0-down")
    response = admin_client.post(edit_url("mpi-racks"), data)
    assert response.status_code == 200
    assert [form["name"].value() for form in response.context["editor"].rjobs] == ["node", "launcher"]
    assert response.context["yaml_text"] == "spec: ["


@pytest.mark.django_db
def test_a_viewer_cannot_move_rows(client, bob, racks):
    client.force_login(bob)
    data = shown_data(racks.manifest, version="1", _action="move-rjob-0-down")
    assert client.post(edit_url("mpi-racks"), data).status_code == 403
    assert client.post(reverse("runtimes:new"), data).status_code == 403
