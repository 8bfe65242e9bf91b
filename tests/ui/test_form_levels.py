"""Every scheduling level and mode the guided form offers saves, built through the form alone (no YAML edits).

Each step posts the form as the browser does on input (form → YAML round trip, the YAML and the form's base
carried to the next step), then the last state is saved: what the form writes must pass the validator.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from runtimes.domain.editing import fields_from_manifest
from runtimes.domain.manifest import dump_yaml, new_runtime
from runtimes.forms.editor import PolicyEditor
from runtimes.selectors import policy_get, revision_list
from tests.ui import editor_post_data

RENDER = reverse("runtimes:render-yaml")
NEW = reverse("runtimes:new")
RACK = "topology.kubernetes.io/rack"
ZONE = "topology.kubernetes.io/zone"


@pytest.fixture
def admin_client(client, alice):
    client.force_login(alice)
    return client


class FormSession:
    """The new-policy page as a browser with JavaScript drives it: each `type` is one htmx form → YAML sync."""

    def __init__(self, client) -> None:
        self.client = client
        editor = PolicyEditor.from_fields(fields_from_manifest(new_runtime("")), creating=True)
        self.data = editor_post_data(editor, yaml=dump_yaml(new_runtime("")), _policy="")

    def type(self, **changes: str | None) -> dict:
        """Apply `changes` to the form (None unticks a checkbox), sync, and return the problems shown."""
        for key, value in changes.items():
            if value is None:
                self.data.pop(key, None)
            else:
                self.data[key] = value
        response = self.client.post(RENDER, self.data, headers={"HX-Request": "true"})
        assert response.status_code == 200
        assert "HX-Reswap" not in response, response.content.decode()[:1000]
        self.data["yaml"] = response.context["yaml_text"]
        self.data["fields_base"] = response.context["fields_base_json"]
        if 'name="form_edited" id="id_form_edited" value="1" hx-swap-oob="true"' in response.content.decode():
            self.data["form_edited"] = "1"
        return response.context["problems"]

    def save(self, message: str = "built with the form"):
        response = self.client.post(NEW, {**self.data, "message": message, "_action": "save"})
        assert response.status_code == 302, _errors(response)
        return response


def _errors(response) -> str:
    problems = response.context.get("problems") if response.context else None
    return str([p for p in problems or [] if p.get("severity", "error") == "error"]) or response.content.decode()[:2000]


def _error_codes(problems: list[dict]) -> list[str]:
    return [p["code"] for p in problems if p.get("severity", "error") == "error"]


def _with_initializer(session: FormSession) -> None:
    session.type(**{"rjobs-TOTAL_FORMS": "2", "rjobs-1-name": "dataset-initializer"})
    session.type(
        **{
            "rjobs-1-ancestor_step": "dataset-initializer",
            "rjobs-1-container_name": "dataset-initializer",
            "rjobs-1-image": "ghcr.io/kubeflow/trainer/dataset-initializer",
            "rjobs-0-depends_on": "dataset-initializer:Complete",
        }
    )


@pytest.mark.django_db
def test_it_saves_a_level1_gang_built_with_the_form(admin_client):
    session = FormSession(admin_client)
    session.type(name="l1-form")
    problems = session.type(scheduling_mode="level1")
    problems = session.type(l1_topology_key=ZONE)
    assert _error_codes(problems) == []
    session.save()
    scheduling = policy_get(name="l1-form").manifest["spec"]["scheduling"]
    assert scheduling == {"schedulingPolicy": {"gang": {}}, "schedulingConstraints": {"topology": [{"key": ZONE}]}}


@pytest.mark.django_db
def test_it_saves_level2_groups_built_with_the_form(admin_client):
    session = FormSession(admin_client)
    session.type(name="l2-form")
    _with_initializer(session)
    session.type(scheduling_mode="level2", **{"l2-TOTAL_FORMS": "2"})
    session.type(**{"l2-0-targets": "dataset-initializer"})
    session.type(**{"l2-0-policy": "basic"})
    session.type(**{"l2-1-targets": "node"})
    problems = session.type(**{"l2-1-topology_key": RACK})
    assert _error_codes(problems) == []
    session.save()
    entries = policy_get(name="l2-form").manifest["spec"]["scheduling"]["replicatedJobs"]
    assert entries == [
        {"targetReplicatedJobs": ["dataset-initializer"], "schedulingPolicy": {"basic": {}}},
        {
            "targetReplicatedJobs": ["node"],
            "schedulingPolicy": {"gang": {}},
            "schedulingConstraints": {"topology": [{"key": RACK}]},
        },
    ]


@pytest.mark.django_db
def test_it_saves_level3_ticked_on_an_existing_level2_group(admin_client):
    session = FormSession(admin_client)
    session.type(name="l3-form")
    _with_initializer(session)
    session.type(scheduling_mode="level2", **{"l2-TOTAL_FORMS": "2"})
    session.type(**{"l2-0-targets": "dataset-initializer", "l2-0-policy": "basic"})
    # The group is written as a level-2 gang first; ticking level 3 then turns it into a per-Job group.
    session.type(**{"l2-1-targets": "node"})
    session.type(**{"l2-1-topology_key": RACK})
    session.type(**{"l2-1-per_job": "on"})
    problems = session.type(**{"l2-1-job_topology_key": RACK})
    assert _error_codes(problems) == []
    session.save()
    entries = policy_get(name="l3-form").manifest["spec"]["scheduling"]["replicatedJobs"]
    assert entries[1] == {
        "targetReplicatedJobs": ["node"],
        "job": {"schedulingPolicy": {"gang": {}}, "schedulingConstraints": {"topology": [{"key": RACK}]}},
    }


@pytest.mark.django_db
def test_it_turns_level3_back_into_a_level2_group(admin_client):
    session = FormSession(admin_client)
    session.type(name="l3-off")
    session.type(scheduling_mode="level2", **{"l2-TOTAL_FORMS": "1"})
    session.type(**{"l2-0-targets": "node", "l2-0-per_job": "on"})
    problems = session.type(**{"l2-0-per_job": None})
    assert _error_codes(problems) == []
    session.save()
    entries = policy_get(name="l3-off").manifest["spec"]["scheduling"]["replicatedJobs"]
    assert entries == [{"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}}]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("mode", "fields", "expected"),
    [
        ("coscheduling", {}, {"coscheduling": {}}),
        ("coscheduling", {"coscheduling_timeout_seconds": "120"}, {"coscheduling": {"scheduleTimeoutSeconds": 120}}),
        ("volcano", {}, {"volcano": {}}),
        (
            "volcano",
            {"volcano_mode": "soft", "volcano_highest_tier_allowed": "2"},
            {"volcano": {"networkTopology": {"mode": "soft", "highestTierAllowed": 2}}},
        ),
    ],
)
def test_it_saves_legacy_pod_group_policies_built_with_the_form(admin_client, mode, fields, expected):
    session = FormSession(admin_client)
    session.type(name=f"legacy-{mode}")
    # Coming from level 2 leaves nothing of spec.scheduling behind.
    session.type(scheduling_mode="level2", **{"l2-TOTAL_FORMS": "1", "l2-0-targets": "node"})
    session.type(scheduling_mode=mode)
    problems = session.type(**fields) if fields else session.type()
    assert _error_codes(problems) == []
    session.save()
    spec = policy_get(name=f"legacy-{mode}").manifest["spec"]
    assert "scheduling" not in spec
    assert spec["podGroupPolicy"] == expected


@pytest.mark.django_db
def test_a_policy_built_with_the_form_is_recorded_as_a_form_revision(admin_client):
    session = FormSession(admin_client)
    session.type(name="form-source")
    session.type(scheduling_mode="level1")
    session.save()
    revision = revision_list(policy=policy_get(name="form-source")).first()
    assert revision.source == "form"


@pytest.mark.django_db
def test_a_policy_typed_into_the_yaml_is_recorded_as_a_yaml_revision(admin_client):
    session = FormSession(admin_client)
    session.data["yaml"] = session.data["yaml"].replace("name: ''", "name: yaml-source")
    session.save()
    assert revision_list(policy=policy_get(name="yaml-source")).first().source == "yaml"
