"""The policy list and detail pages: columns, filters, empty states, and escaping of user-supplied text."""

from __future__ import annotations

import pytest
from django.urls import reverse

from runtimes.domain.manifest import dump_yaml
from tests.ui import l2_l3_manifest, make_policy, torch_manifest

LIST = reverse("runtimes:list")
SCRIPT = '<script>alert("x")</script>'


@pytest.fixture
def viewer_client(client, bob):
    client.force_login(bob)
    return client


@pytest.mark.django_db
def test_it_shows_name_framework_levels_change_and_sync_state(viewer_client, alice):
    make_policy(l2_l3_manifest(), alice)
    html = viewer_client.get(LIST).content.decode()
    assert reverse("runtimes:detail", kwargs={"name": "mpi-racks"}) in html
    assert ">deepspeed</span>" in html
    assert "badge--l2" in html and "badge--l3" in html
    assert "v1 · alice" in html
    assert ">Draft</span>" in html


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"q": "racks"}, ["mpi-racks"]),
        ({"framework": "torch"}, ["plain"]),
        ({"mode": "none"}, ["plain"]),
        ({"ordering": "-name"}, ["plain", "mpi-racks"]),
        ({"framework": "no-such-framework"}, ["mpi-racks", "plain"]),  # an unknown choice is ignored
    ],
)
def test_it_filters_and_sorts(viewer_client, alice, params, expected):
    make_policy(l2_l3_manifest(), alice)
    make_policy(torch_manifest("plain"), alice)
    response = viewer_client.get(LIST, params)
    assert [p.name for p in response.context["page_obj"].object_list] == expected


@pytest.mark.django_db
def test_it_returns_only_the_results_to_htmx(viewer_client, alice):
    make_policy(torch_manifest("plain"), alice)
    html = viewer_client.get(LIST, {"q": "pl"}, headers={"HX-Request": "true"}).content.decode()
    assert html.lstrip().startswith('<div id="policy-results">')
    assert "<html" not in html


@pytest.mark.django_db
def test_it_guides_admins_from_an_empty_list(client, alice):
    client.force_login(alice)
    html = client.get(LIST).content.decode()
    assert "No policies yet" in html
    assert reverse("runtimes:new") in html and reverse("runtimes:import") in html


@pytest.mark.django_db
def test_it_tells_viewers_who_fills_an_empty_list(viewer_client):
    html = viewer_client.get(LIST).content.decode()
    assert "No policies yet" in html and "A platform admin creates" in html


@pytest.mark.django_db
def test_it_says_when_filters_match_nothing(viewer_client, alice):
    make_policy(torch_manifest("plain"), alice)
    assert "No policy matches these filters" in viewer_client.get(LIST, {"q": "zzz"}).content.decode()


@pytest.mark.django_db
def test_it_shows_the_detail_page_with_yaml_revisions_and_preview_mount(viewer_client, alice):
    make_policy(l2_l3_manifest(), alice)
    html = viewer_client.get(reverse("runtimes:detail", kwargs={"name": "mpi-racks"})).content.decode()
    assert '<section id="preview-panel" data-runtime="mpi-racks"></section>' in html
    assert "kubectl apply --server-side" in html
    assert reverse("runtimes:export", kwargs={"name": "mpi-racks"}) in html
    assert "#1" in html


@pytest.mark.django_db
def test_it_shows_warnings_with_their_paths(viewer_client, alice):
    manifest = torch_manifest("warned")
    manifest["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {}}, "disruptionMode": "PodGroup"}
    policy = make_policy(manifest, alice)
    assert policy.warnings, "the fixture must produce a warning"
    html = viewer_client.get(reverse("runtimes:detail", kwargs={"name": "warned"})).content.decode()
    assert f"<code>{policy.warnings[0]['path']}</code>" in html


# ----------------------------------------------------------------------------------------------- escaping


@pytest.mark.django_db
def test_it_escapes_html_in_annotations_and_messages(viewer_client, alice):
    manifest = torch_manifest("escaped")
    manifest["metadata"]["annotations"] = {"example.com/note": SCRIPT}
    make_policy(manifest, alice, message=SCRIPT)
    for page in ("detail", "history"):
        html = viewer_client.get(reverse(f"runtimes:{page}", kwargs={"name": "escaped"})).content.decode()
        assert SCRIPT not in html
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html


@pytest.mark.django_db
def test_it_escapes_html_in_rejected_names_and_labels(client, alice):
    client.force_login(alice)
    manifest = torch_manifest("placeholder")
    manifest["metadata"]["name"] = SCRIPT
    manifest["metadata"]["labels"]["team"] = "<b>bold</b>"
    for url, data in (
        (reverse("runtimes:import"), {"text": dump_yaml(manifest), "mode": "create-only"}),
        (reverse("runtimes:parse-yaml"), {"yaml": dump_yaml(manifest)}),
    ):
        html = client.post(url, data).content.decode()
        assert SCRIPT not in html and "<b>bold</b>" not in html
        assert "&lt;script&gt;" in html
