"""REST API: revisions, revision detail, diff between revisions and rollback."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from runtimes.models import RuntimePolicy
from runtimes.services import policies as policy_services
from tests.runtimes.test_services import fast_password_hashing, level1, runtime  # noqa: F401 (autouse fixture)

BASE = "/api/v1/runtimes/torch-gang/"


@pytest.fixture
def api(alice) -> APIClient:
    client = APIClient()
    client.force_login(alice)
    return client


@pytest.fixture
def three_revisions(alice, bob):
    """torch-gang at version 3: plain (alice), level 1 (bob), 2 nodes + level 1 (alice)."""
    policy_services.policy_create(manifest=runtime(), author=alice, message="create", source="form")
    policy_services.policy_update(
        name="torch-gang", manifest=level1(), expected_version=1, author=bob, message="gang", source="yaml"
    )
    two_nodes = level1()
    two_nodes["spec"]["mlPolicy"]["numNodes"] = 2
    return policy_services.policy_update(
        name="torch-gang", manifest=two_nodes, expected_version=2, author=alice, message="scale", source="api"
    )


def test_it_lists_revisions_newest_first(db, api, three_revisions):
    response = api.get(BASE + "revisions/")

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert [(r["number"], r["author"], r["message"], r["source"], r["current"]) for r in body["results"]] == [
        (3, "alice", "scale", "api", True),
        (2, "bob", "gang", "yaml", False),
        (1, "alice", "create", "form", False),
    ]


def test_revision_list_is_paginated(db, api, three_revisions):
    response = api.get(BASE + "revisions/?limit=1&offset=1")

    assert [r["number"] for r in response.json()["results"]] == [2]


def test_it_shows_one_revision_with_its_manifest(db, api, three_revisions):
    response = api.get(BASE + "revisions/1/")

    assert response.status_code == 200
    assert response.json()["manifest"] == runtime()
    assert response.json()["createdAt"]


@pytest.mark.parametrize("path", ["revisions/9/", "revisions/99999999999999/", "../nope/revisions/"])
def test_a_missing_revision_is_404(db, api, three_revisions, path):
    response = api.get(BASE + path)

    assert response.status_code == 404


def test_diff_defaults_to_the_last_change(db, api, three_revisions):
    response = api.get(BASE + "diff/")

    assert response.status_code == 200
    body = response.json()
    assert (body["fromRevision"], body["toRevision"]) == (2, 3)
    assert body["changes"] == [{"path": "spec.mlPolicy.numNodes", "op": "changed", "old": 1, "new": 2}]
    assert "-    numNodes: 1\n+    numNodes: 2\n" in body["unified"]


def test_diff_between_any_two_revisions(db, api, three_revisions):
    response = api.get(BASE + "diff/?from=3&to=1")

    body = response.json()
    assert {c["path"] for c in body["changes"]} == {"spec.mlPolicy.numNodes", "spec.scheduling"}
    assert body["unified"].startswith("--- revision 3\n+++ revision 1\n")


@pytest.mark.parametrize(("query", "status"), [("?from=1&to=9", 404), ("?from=x", 400), ("?to=0", 400)])
def test_diff_rejects_bad_revisions(db, api, three_revisions, query, status):
    assert api.get(BASE + "diff/" + query).status_code == status


def test_rollback_makes_a_new_revision(db, api, three_revisions):
    response = api.post(BASE + "rollback/", {"revision": 1, "version": 3}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert body["version"] == 4
    assert body["manifest"] == runtime()
    assert body["scheduling"]["mode"] == "none"
    latest = api.get(BASE + "revisions/").json()["results"][0]
    assert (latest["number"], latest["source"], latest["message"]) == (4, "rollback", "Roll back to revision 1")


def test_rollback_accepts_if_match(db, api, three_revisions):
    response = api.post(BASE + "rollback/", {"revision": 2}, format="json", HTTP_IF_MATCH='"3"')

    assert response.status_code == 200
    assert response.json()["version"] == 4


def test_rollback_without_a_version_is_428(db, api, three_revisions):
    response = api.post(BASE + "rollback/", {"revision": 1}, format="json")

    assert response.status_code == 428


def test_a_stale_rollback_is_409(db, api, three_revisions):
    response = api.post(BASE + "rollback/", {"revision": 1, "version": 2}, format="json")

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["currentVersion"] == 3
    assert error["changes"] == [{"path": "spec.mlPolicy.numNodes", "op": "changed", "old": 1, "new": 2}]
    assert RuntimePolicy.objects.get().version == 3


@pytest.mark.parametrize(
    ("body", "path"),
    [({"revision": 9, "version": 3}, "revision"), ({"version": 3}, "revision"), ({"revision": "x"}, "revision")],
)
def test_rollback_rejects_bad_revisions(db, api, three_revisions, body, path):
    response = api.post(BASE + "rollback/", body, format="json")

    assert response.status_code == 400
    assert path in {f["path"] for f in response.json()["error"]["fields"]}
