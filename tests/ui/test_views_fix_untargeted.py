"""The editor's one-click fix for an untargeted ReplicatedJob (Trainer v2.4 rejects it): the button next to the
error adds a basic entry, nothing is saved until Save."""

from __future__ import annotations

import pytest
from django.urls import reverse

from runtimes.domain.manifest import dump_yaml, load_runtime
from runtimes.selectors import policy_get
from runtimes.services import policies as services
from tests.domain.test_policy_cases import with_scheduling
from tests.ui.test_views_editor import shown_data

pytestmark = pytest.mark.django_db
EDIT = reverse("runtimes:edit", kwargs={"name": "torchtune-qwen2.5-1.5b"})


@pytest.fixture
def imported(alice):
    """The upstream torchtune runtime with only its trainer in a gang: imported with the v2.4 errors shown."""
    manifest = with_scheduling(
        "qwen", {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}}]}
    )
    services.policies_import(text=dump_yaml(manifest), author=alice)
    return policy_get(name=manifest["metadata"]["name"])


@pytest.fixture
def admin_client(client, alice):
    client.force_login(alice)
    return client


def test_the_error_offers_the_fix(admin_client, imported):
    html = admin_client.get(EDIT).content.decode()
    assert 'name="_action" value="fix-untargeted"' in html
    assert "add an entry `targetReplicatedJobs: [dataset-initializer]`" in html


def test_one_click_adds_the_basic_entry_without_saving(admin_client, imported):
    response = admin_client.post(EDIT, shown_data(imported.manifest, version="1", _action="fix-untargeted"))

    assert response.status_code == 200
    fixed = load_runtime(response.context["yaml_text"])
    assert fixed["spec"]["scheduling"]["replicatedJobs"][-1] == {
        "targetReplicatedJobs": ["dataset-initializer", "model-initializer"],
        "schedulingPolicy": {"basic": {}},
    }
    assert [p for p in response.context["problems"] if p["severity"] == "error"] == []
    assert 'value="fix-untargeted"' not in response.content.decode()
    assert policy_get(name=imported.name).version == 1  # nothing saved yet

    saved = admin_client.post(EDIT, {**shown_data(fixed, version="1"), "_action": "save"})
    assert saved.status_code == 302
    assert policy_get(name=imported.name).manifest == fixed


def test_the_fix_says_when_there_is_nothing_to_fix(admin_client, alice):
    manifest = with_scheduling("torch", {"schedulingPolicy": {"gang": {}}})
    services.policy_create(manifest=manifest, author=alice)
    url = reverse("runtimes:edit", kwargs={"name": manifest["metadata"]["name"]})

    response = admin_client.post(url, shown_data(manifest, version="1", _action="fix-untargeted"))

    assert response.status_code == 200
    assert "Nothing to fix" in response.content.decode()
