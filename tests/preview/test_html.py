"""HTML preview: the standalone page, the htmx results fragment, the policy-page panel, escaping, permissions."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from runtimes.domain.manifest import dump_yaml
from runtimes.forms.preview import field_errors, form_defaults, request_data_from_form
from runtimes.services import policies as policy_services
from runtimes.templatetags.runtimes_ui import heatmap_html
from tests.preview.test_api import alice, bob, charlie  # noqa: F401 — fast persona fixtures
from tests.preview.test_service import level1, level3

PAGE = "/preview/"
RESULTS = "/preview/results/"
HTMX = {"HTTP_HX_REQUEST": "true"}


def form(**changes) -> dict:
    """Return the form fields as the browser posts them (small synthetic cluster)."""
    values = form_defaults(policy="torch-l1")
    values.update(zones="2", blocksPerZone="2", racksPerBlock="2", nodesPerRack="4", numNodes="4")
    values.update(changes)
    return values


@pytest.fixture
def web(bob) -> Client:  # noqa: F811 — bob is the imported fixture
    client = Client()
    client.force_login(bob)
    return client


@pytest.fixture
def policies(db, alice):  # noqa: F811 — alice is the imported fixture
    for manifest in (level1(), level3()):
        policy_services.policy_create(manifest=manifest, author=alice, message="first", source="api")


def rack_cells(html: str) -> int:
    return len(re.findall(r"<i class=\"?h[0-5x]", html.split('class="pv-heat"', 1)[1]))


# --------------------------------------------------------------------------------------------------- page


def test_it_shows_the_form_with_a_policy_picker(web, policies):
    response = web.get(PAGE)

    html = response.content.decode()
    assert response.status_code == 200
    assert '<option value="torch-l1">torch-l1</option>' in html
    assert 'hx-trigger="input changed delay:300ms' in html
    assert f'hx-post="{RESULTS}"' in html
    assert 'method="post" action="/preview/"' in html
    assert "Choose a policy to preview" in html


def test_it_previews_a_policy_from_the_query_string(web, policies):
    response = web.get(PAGE, {"policy": "torch-l3", "numNodes": "4", **{k: v for k, v in form().items()
                                                                         if k not in ("policy", "numNodes")}})

    html = response.content.decode()
    assert response.status_code == 200
    assert "<h2 id=\"pv-verdict-title\">Fits</h2>" in html
    assert "topology.kubernetes.io/rack" in html
    assert "kind: Workload" in html
    assert "the preview ignores inter-pod affinity" in html.lower()


def test_it_previews_without_javascript_through_a_normal_submit(web, policies):
    response = web.post(PAGE, form(numNodes="8"))

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" in html
    assert "Does not fit" not in html
    assert "minCount: 8" in html
    assert rack_cells(html) == 2 * 2 * 2


def test_it_answers_htmx_with_the_results_fragment_only(web, policies):
    response = web.post(RESULTS, form(), **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert 'id="pv-err-numNodes" hx-swap-oob="true"' in html
    assert "PodGroups" in html


def test_it_answers_an_htmx_post_to_the_page_with_the_fragment_too(web, policies):
    response = web.post(PAGE, form(), **HTMX)

    assert "<html" not in response.content.decode()
    assert "pv-verdict" in response.content.decode()


def test_it_shows_a_near_miss_and_its_explanation(web, policies):
    response = web.post(RESULTS, form(numNodes="16", fragmentation="F5", seed="2"), **HTMX)

    html = response.content.decode()
    assert "Does not fit" in html
    assert "fits 15 of 16" in html
    assert 'class="pv-zone pv-zone--near"' in html


@pytest.mark.parametrize(
    ("changes", "field", "fragment"),
    [
        ({"numNodes": "0"}, "numNodes", "from 1 to 100,000"),
        ({"numNodes": "100001"}, "numNodes", "got 100,001"),
        ({"gpu": "4Gi"}, "gpu", "whole units"),
        ({"cpu": "abc"}, "cpu", "not a Kubernetes quantity"),
        ({"memory": "lots"}, "memory", "not a Kubernetes quantity"),
        ({"zones": "0"}, "zones", "from 1 to 64"),
        ({"fragmentation": "F7"}, "fragmentation", "must be one of"),
        ({"policy": "ghost"}, "policy", "No policy named 'ghost'"),
        ({"policy": ""}, "policy", "choose a saved policy"),
    ],
)
def test_it_shows_bad_input_next_to_the_field(web, policies, changes, field, fragment):
    for url, headers in ((RESULTS, HTMX), (PAGE, {})):
        response = web.post(url, form(**changes), **headers)

        html = response.content.decode()
        assert response.status_code == 200
        slot = re.search(rf'<div class="field__error" id="pv-err-{field}"[^>]*>([^<]*)</div>', html)
        assert slot is not None, html[:500]
        assert fragment in slot.group(1).replace("&#x27;", "'")


def test_it_previews_a_pasted_manifest(web, policies):
    response = web.post(RESULTS, form(policy="", manifest=dump_yaml(level1(name="pasted"))), **HTMX)

    assert "pv-verdict--fits" in response.content.decode()


def test_it_reports_problems_of_a_pasted_manifest(web, policies):
    broken = web.post(RESULTS, form(policy="", manifest="kind: [broken"), **HTMX).content.decode()
    invalid = level1(name="pasted")
    invalid["spec"]["scheduling"]["schedulingPolicy"] = {"gang": {"minCount": 3}}
    refused = web.post(RESULTS, form(policy="", manifest=dump_yaml(invalid)), **HTMX).content.decode()

    assert re.search(r'id="pv-err-manifest"[^>]*>line 1, column \d+: invalid YAML', broken)
    assert "The preview could not be computed" in refused
    assert "manifest.spec.scheduling.schedulingPolicy.gang.minCount" in refused


def test_it_escapes_what_the_user_typed(web, policies):
    attack = '"><script>alert(1)</script>'

    response = web.post(PAGE, form(numNodes=attack, manifest="", cpu=attack))

    html = response.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_it_escapes_pasted_manifests_in_the_textarea(web, policies):
    attack = "</textarea><script>alert(1)</script>"

    response = web.post(PAGE, form(policy="", manifest=attack))

    assert "<script>alert(1)</script>" not in response.content.decode()


def test_it_escapes_domain_names_in_the_heat_map():
    heatmap = {"zones": [{"name": "<z>", "free": 1, "total": 8, "placed": 0, "blocks": [
        {"name": "b&1", "free": 1, "total": 8, "placed": 0, "racks": [
            {"name": '"r"', "free": 1, "total": 8, "bucket": 1, "placed": 3, "near": False}]}]}]}

    html = str(heatmap_html(heatmap))

    assert "<z>" not in html and "&lt;z&gt;" in html
    assert "b&amp;1" in html
    assert 'title="rack &quot;r&quot;: 1 of 8 GPUs free, 3 pods placed"' in html
    # Zones and blocks are labelled as such, with their free GPUs.
    assert "zone <b>&lt;z&gt;</b>" in html and "block b&amp;1<small>1/8 free</small>" in html


# --------------------------------------------------------------------------------------------------- panel


def test_it_serves_the_panel_for_a_policy_page(web, policies):
    response = web.get("/preview/panel/torch-l3/")

    html = response.content.decode()
    assert response.status_code == 200
    assert '<input type="hidden" name="policy" value="torch-l3">' in html
    assert 'id="preview-results"' in html
    assert "<html" not in html
    assert "pv-verdict" in html


def test_it_answers_404_for_the_panel_of_an_unknown_policy(web, policies):
    assert web.get("/preview/panel/ghost/").status_code == 404


def test_the_panel_loader_points_the_script_at_the_panel_url(web):
    from django.template.loader import render_to_string

    html = render_to_string("preview/_panel_loader.html")

    assert 'src="/static/js/preview.js"' in html
    assert 'data-panel-url="/preview/panel/__name__/"' in html
    assert "css/preview.css" in html


# --------------------------------------------------------------------------------------------------- scale


def test_it_draws_a_50k_node_cluster_as_about_3000_rack_cells(web, policies):
    big = form(policy="torch-l1", numNodes="1000", zones="3", blocksPerZone="8", racksPerBlock="130",
               nodesPerRack="16")

    response = web.post(RESULTS, big, **HTMX)

    html = response.content.decode()
    cells = rack_cells(html)
    assert 3_000 <= cells <= 3_200
    assert html.count('<div class="pv-block') == 24
    assert len(re.findall(r'<i class="h[0-5x] p"', html)) >= 1000 // (16 * 8 // 8)  # 1000 pods over 16-node racks


# --------------------------------------------------------------------------------------------------- permissions


@pytest.mark.parametrize(("persona", "expected"), [("charlie", 403), ("bob", 200), ("alice", 200)])
def test_it_lets_every_role_use_the_pages(request, policies, persona, expected):
    client = Client()
    client.force_login(request.getfixturevalue(persona))

    assert client.get(PAGE).status_code == expected
    assert client.post(RESULTS, form(), **HTMX).status_code == expected
    assert client.get("/preview/panel/torch-l1/").status_code == expected


def test_it_sends_anonymous_users_to_the_login_page(db):
    client = Client()

    for response in (client.get(PAGE), client.post(RESULTS, form()), client.get("/preview/panel/torch-l1/")):
        assert response.status_code == 302
        assert response["Location"].startswith("/login/")


# --------------------------------------------------------------------------------------------------- form mapping


@pytest.mark.django_db  # the form's default source asks whether a live snapshot is stored
def test_it_maps_form_fields_to_the_api_shape_and_errors_back():
    data = request_data_from_form(form(gpu="4", composite="on"))

    assert data["resourcesPerNode"]["nvidia.com/gpu"] == "4"
    assert data["composite"] is True
    assert data["topology"]["zones"] == "2"
    by_field, other = field_errors([
        {"path": "resourcesPerNode.memory", "message": "m"},
        {"path": "topology.seed", "message": "s"},
        {"path": "manifest.spec.scheduling", "message": "x"},
    ])
    assert by_field == {"memory": ["m"], "seed": ["s"]}
    assert other == [{"path": "manifest.spec.scheduling", "message": "x"}]
