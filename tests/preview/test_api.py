"""REST API: POST /api/v1/runtimes/{name}/preview/ and POST /api/v1/preview/ (unsaved manifest in the body).

Aspects: happy paths for saved and unsaved policies at levels 1–3, the verdict with its explanation, every kind of
bad input → 400 naming the field, 404 for an unknown policy, the permission matrix, and the OpenAPI schema.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from runtimes.domain.manifest import dump_yaml
from runtimes.services import policies as policy_services
from tests.preview.test_service import BLOCK, RACK, SMALL, ZONE, level1, level2, level3

UNSAVED = "/api/v1/preview/"


def saved(name: str) -> str:
    return f"/api/v1/runtimes/{name}/preview/"


def body(num_nodes: int = 4, **extra) -> dict:
    return {
        "numNodes": num_nodes,
        "resourcesPerNode": {"nvidia.com/gpu": "8", "cpu": "32", "memory": "256Gi"},
        "topology": {"source": "synthetic", **SMALL},
        **extra,
    }


def _persona(django_user_model, username: str, group: str | None):
    from django.contrib.auth.models import Group

    # No password: the tests log in with force_login, and skipping the hasher saves ~0.4 s per user.
    user = django_user_model.objects.create_user(username, password=None)
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def alice(django_user_model):
    """A platform admin (same persona as tests/conftest.py, without a password hash)."""
    return _persona(django_user_model, "alice", "platform-admin")


@pytest.fixture
def bob(django_user_model):
    """A viewer (read-only)."""
    return _persona(django_user_model, "bob", "viewer")


@pytest.fixture
def charlie(django_user_model):
    """A logged-in user with no portal role."""
    return _persona(django_user_model, "charlie", None)


def client_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def api(bob) -> APIClient:
    """A client logged in as bob, a viewer: previews are read-only, so viewers may run them."""
    return client_for(bob)


@pytest.fixture
def policies(db, alice):
    """Saved policies at levels 1, 2 and 3."""
    for manifest in (level1(), level2(), level3()):
        policy_services.policy_create(manifest=manifest, author=alice, message="first", source="api")


def field_paths(response) -> dict[str, str]:
    return {f["path"]: f["message"] for f in response.json()["error"]["fields"]}


# --------------------------------------------------------------------------------------------------- happy paths


@pytest.mark.parametrize(
    ("name", "num_nodes", "levels", "keys"),
    [("torch-l1", 8, [1], [ZONE]), ("torch-l2", 6, [2, 2], [None, BLOCK]), ("torch-l3", 4, [3], [RACK])],
)
def test_it_previews_a_saved_policy(api, policies, name, num_nodes, levels, keys):
    response = api.post(saved(name), body(num_nodes), format="json")

    assert response.status_code == 200, response.content
    result = response.json()
    assert result["policy"] == {"name": name, "saved": True}
    assert [g["level"] for g in result["podGroups"]] == levels
    assert [g["topologyKey"] for g in result["podGroups"]] == keys
    assert result["podGroups"][-1]["minCount"] == num_nodes
    assert result["verdict"]["fits"] is True
    assert result["request"]["numNodes"] == num_nodes
    assert result["yaml"].startswith("apiVersion: scheduling.k8s.io/v1beta1\nkind: Workload\n")
    assert "inter-pod affinity, DRA claims, volume topology and scheduler plugins" in result["caveat"]


def test_it_previews_an_unsaved_manifest_object(api, db):
    response = api.post(UNSAVED, {**body(8), "manifest": level1(name="draft")}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["policy"] == {"name": "draft", "saved": False}
    assert response.json()["podGroups"][0]["minCount"] == 8


def test_it_previews_unsaved_yaml_text(api, db):
    response = api.post(UNSAVED, {**body(4), "manifest": dump_yaml(level3(name="draft-yaml"))}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["podGroups"][0]["level"] == 3


def test_it_explains_why_a_near_miss_gang_does_not_fit(api, policies):
    request = body(64, topology={"source": "synthetic", "zones": 2, "blocksPerZone": 2, "racksPerBlock": 4,
                                 "nodesPerRack": 16, "gpusPerNode": 8, "fragmentation": "F5", "seed": 1})

    response = api.post(saved("torch-l1"), request, format="json")

    assert response.status_code == 200
    verdict = response.json()["verdict"]
    assert verdict["fits"] is False
    assert verdict["bindingLevel"] == "zone"
    assert "the best, zone zone-a, fits 63 of 64" in verdict["explanation"][0]
    group = response.json()["placement"]["groups"][0]
    assert group["explanation"]["have"] == 63
    assert group["explanation"]["need"] == 64
    assert group["explanation"]["excluded"]["insufficient nvidia.com/gpu"] > 0


def test_it_shows_where_a_fitting_gang_goes(api, policies):
    response = api.post(saved("torch-l3"), body(4), format="json")

    group = response.json()["placement"]["groups"][0]
    assert group["fits"] is True
    assert group["domain"]["level"] == "rack"
    assert group["span"] == {"zones": 1, "blocks": 1, "racks": 1, "nodes": 4}
    assert response.json()["heatmap"]["placedRacks"] == 1


# --------------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"numNodes": 0}, "numNodes"),
        ({"numNodes": -1}, "numNodes"),
        ({"numNodes": 100_001}, "numNodes"),
        ({"numNodes": "abc"}, "numNodes"),
        ({"numNodes": None}, "numNodes"),
        ({"resourcesPerNode": {"nvidia.com/gpu": "4Gi"}}, "resourcesPerNode.nvidia.com/gpu"),
        ({"resourcesPerNode": {"nvidia.com/gpu": "abc"}}, "resourcesPerNode.nvidia.com/gpu"),
        ({"resourcesPerNode": {"cpu": "abc"}}, "resourcesPerNode.cpu"),
        ({"resourcesPerNode": {"memory": "12 GB"}}, "resourcesPerNode.memory"),
        ({"resourcesPerNode": "8"}, "resourcesPerNode"),
        ({"resourcesPerNode": {"nvidia.com/gpu": "1e30"}}, "resourcesPerNode.nvidia.com/gpu"),
        ({"resourcesPerNode": {"memory": "1e30"}}, "resourcesPerNode.memory"),
        ({"apiVersion": "v2"}, "apiVersion"),
        ({"composite": "perhaps"}, "composite"),
        ({"topology": {"source": "cloud"}}, "topology.source"),
        ({"topology": {"fragmentation": "F6"}}, "topology.fragmentation"),
        ({"topology": {"zones": 100}}, "topology.zones"),
        ({"topology": {"racksPerBlock": 0}}, "topology.racksPerBlock"),
        ({"topology": {"gpusPerNode": -1}}, "topology.gpusPerNode"),
    ],
)
def test_it_answers_400_naming_the_field(api, policies, change, path):
    for url, extra in ((saved("torch-l1"), {}), (UNSAVED, {"manifest": level1()})):
        response = api.post(url, {**body(), **extra, **change}, format="json")

        assert response.status_code == 400, response.content
        assert path in field_paths(response)
        assert response.json()["error"]["code"] == "invalid"


def test_it_answers_400_for_an_unknown_topology_key(api, policies):
    response = api.post(UNSAVED, {**body(), "manifest": level1(key="example.com/superpod")}, format="json")

    assert response.status_code == 400
    paths = field_paths(response)
    assert "manifest.spec.scheduling.schedulingConstraints.topology[0].key" in paths
    assert "unknown topology key 'example.com/superpod'" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("manifest", "path"),
    [
        (None, "manifest"),
        ("", "manifest"),
        (["not", "an", "object"], "manifest"),
        ("kind: [unclosed", "manifest"),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, "manifest"),
    ],
)
def test_it_answers_400_for_an_unusable_manifest(api, db, manifest, path):
    response = api.post(UNSAVED, {**body(), "manifest": manifest}, format="json")

    assert response.status_code == 400, response.content
    assert any(p.startswith(path) for p in field_paths(response))


def test_it_answers_400_for_an_invalid_manifest_with_its_field_paths(api, db):
    manifest = level2()
    manifest["spec"]["scheduling"]["replicatedJobs"][1]["targetReplicatedJobs"] = ["ghost"]

    response = api.post(UNSAVED, {**body(), "manifest": manifest}, format="json")

    assert response.status_code == 400
    assert all(p.startswith("manifest.spec.scheduling.replicatedJobs") for p in field_paths(response))


def test_it_answers_400_not_500_for_absurd_container_requests_in_the_manifest(api, db):
    manifest = level2()
    initializer = manifest["spec"]["template"]["spec"]["replicatedJobs"][0]
    initializer["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"memory": "1e30"}}

    response = api.post(UNSAVED, {**body(), "manifest": manifest}, format="json")

    assert response.status_code == 400, response.content
    assert any(path.startswith("manifest.spec.template") for path in field_paths(response))


def test_it_answers_400_for_a_body_that_is_not_an_object(api, policies):
    response = api.post(saved("torch-l1"), [1, 2], format="json")

    assert response.status_code == 400


def test_it_answers_404_for_an_unknown_policy(api, db):
    response = api.post(saved("nope"), body(), format="json")

    assert response.status_code == 404
    assert "nope" in response.json()["error"]["message"]


# --------------------------------------------------------------------------------------------------- permissions


@pytest.mark.parametrize(
    ("persona", "expected"),
    [("anonymous", {401, 403}), ("charlie", {403}), ("bob", {200}), ("alice", {200})],
)
def test_it_lets_every_role_preview_and_nobody_else(request, policies, persona, expected):
    user = None if persona == "anonymous" else request.getfixturevalue(persona)
    client = client_for(user)

    for url, extra in ((saved("torch-l1"), {}), (UNSAVED, {"manifest": level1()})):
        response = client.post(url, {**body(), **extra}, format="json")

        assert response.status_code in expected


# --------------------------------------------------------------------------------------------------- OpenAPI


def test_it_documents_both_endpoints_in_the_schema(api, db):
    response = api.get("/api/schema/", {"format": "json"})

    assert response.status_code == 200
    schema = response.json()
    operations = {
        path: methods["post"]["operationId"]
        for path, methods in schema["paths"].items()
        if path.endswith("/preview/")
    }
    assert operations == {"/api/v1/runtimes/{name}/preview/": "runtimes_preview", "/api/v1/preview/": "preview_unsaved"}
    components = schema["components"]["schemas"]
    assert {"numNodes", "resourcesPerNode", "topology"} <= set(components["PreviewRequestRequest"]["properties"])
    assert "manifest" in components["UnsavedPreviewRequestRequest"]["properties"]
    assert {"verdict", "podGroups", "heatmap", "yaml", "caveat"} <= set(components["PreviewResult"]["properties"])


# --------------------------------------------------------------------------------------------------- live source


def _nodes_without_rack_labels(count: int) -> list[dict]:
    return [
        {
            "metadata": {"name": f"gpu-{index}", "labels": {ZONE: "zone-a", BLOCK: "block-1",
                                                           "kubernetes.io/hostname": f"gpu-{index}"}},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]},
        }
        for index in range(count)
    ]


def test_it_previews_on_the_live_cluster_once_a_snapshot_exists(api, policies, settings, tmp_path):
    import time

    from trainer_portal.cluster.snapshots import save_live_snapshot, topology_keys
    from trainer_portal.placement.snapshot import ClusterSnapshot
    from trainer_portal.placement.tracker import LiveSnapshot

    settings.VAR_DIR = tmp_path
    live_body = {**body(2), "topology": {"source": "live"}}

    before = api.post(saved("torch-l3"), live_body, format="json")
    snapshot = ClusterSnapshot.from_objects(_nodes_without_rack_labels(4), keys=topology_keys())
    save_live_snapshot(LiveSnapshot(snapshot=snapshot, taken_at=time.time(), label_counts={}, source="list"))
    after = api.post(saved("torch-l3"), live_body, format="json")
    block_gang = api.post(saved("torch-l2"), live_body, format="json")

    assert before.status_code == 400
    assert "topology.source" in field_paths(before)
    assert after.status_code == 200, after.content
    result = after.json()
    assert result["topology"]["source"] == "live"
    assert result["topology"]["nodes"] == 4
    assert result["topology"]["ageSeconds"] is not None
    # The rack key is known to the portal but carried by no node: an explanation, not an error.
    assert result["verdict"]["fits"] is False
    assert f"no node carries the rack label '{RACK}'" in result["verdict"]["explanation"][0]
    assert block_gang.json()["verdict"]["fits"] is True


def test_the_default_topology_is_the_live_cluster_when_a_snapshot_exists_as_on_the_page(
    api, policies, settings, tmp_path
):
    import time

    from runtimes.forms.preview import form_defaults
    from trainer_portal.cluster.snapshots import save_live_snapshot, topology_keys
    from trainer_portal.placement.snapshot import ClusterSnapshot
    from trainer_portal.placement.tracker import LiveSnapshot

    settings.VAR_DIR = tmp_path
    no_source = {**body(2), "topology": dict(SMALL)}

    before = api.post(saved("torch-l2"), no_source, format="json")
    assert before.status_code == 200, before.content
    assert before.json()["topologySource"] == "synthetic" == form_defaults()["source"]

    snapshot = ClusterSnapshot.from_objects(_nodes_without_rack_labels(4), keys=topology_keys())
    save_live_snapshot(LiveSnapshot(snapshot=snapshot, taken_at=time.time(), label_counts={}, source="list"))
    after = api.post(saved("torch-l2"), no_source, format="json")
    assert after.status_code == 200, after.content
    assert after.json()["topologySource"] == "live" == form_defaults()["source"]
    assert after.json()["topology"]["nodes"] == 4
    # Asking for the synthetic cluster still gets it, and says so.
    chosen = api.post(saved("torch-l2"), body(2), format="json").json()
    assert chosen["topologySource"] == "synthetic"
