"""One API dialect: camelCase keys everywhere (the first release's snake_case kept readable for one release),
absolute status URLs, and 401 with a challenge for missing or invalid credentials."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from runtimes.domain.manifest import new_runtime
from runtimes.services.policies import policy_create
from trainer_portal.api.dialect import camel_body, camel_case

pytestmark = pytest.mark.django_db


def test_camel_case_renames_snake_keys_and_keeps_the_old_spelling_only_when_asked():
    data = {"created_at": 1, "items": [{"error_fields": [], "name": "a"}], "alreadyCamel": {"git_version": "x"}}
    assert camel_body(data, legacy=False) == {
        "createdAt": 1,
        "items": [{"errorFields": [], "name": "a"}],
        "alreadyCamel": {"gitVersion": "x"},
    }
    both = camel_body(data)
    assert both["createdAt"] == both["created_at"] == 1
    assert both["items"][0]["errorFields"] == both["items"][0]["error_fields"] == []
    assert camel_case("elapsed_ms") == "elapsedMs" and camel_case("name") == "name"


@pytest.fixture
def as_alice(alice):
    client = APIClient()
    client.force_authenticate(alice)
    return client


def test_the_cluster_status_speaks_camel_case_with_the_old_keys_for_one_release(as_alice, bob):
    body = as_alice.get("/api/v1/cluster/").json()
    assert "fieldManager" in body and "elapsedMs" in body and "schedulingVersions" in body
    assert body["field_manager"] == body["fieldManager"]
    camel = as_alice.get("/api/v1/cluster/?dialect=camel").json()
    assert "fieldManager" in camel and not any("_" in key for key in camel)


def test_bulk_sync_progress_speaks_camel_case_and_its_status_url_is_absolute(as_alice, alice):
    policy_create(manifest=new_runtime("dialect-a"), author=alice, message="first")
    accepted = as_alice.post("/api/v1/runtimes/sync/", {}, format="json")
    assert accepted.status_code == 202
    url = accepted.json()["statusUrl"]
    assert url.startswith("http://testserver/api/v1/sync-batches/") and accepted["Location"] == url
    progress = as_alice.get(url).json()
    assert progress["createdAt"] == progress["created_at"]
    assert set(progress["items"][0]) >= {"name", "revision", "status", "state", "error", "errorFields"}
    camel = as_alice.get(url + "?dialect=camel").json()
    assert "created_at" not in camel and "error_fields" not in camel["items"][0]
    # The deprecated path answers the same.
    assert as_alice.get(url.replace("sync-batches", "sync-jobs")).json() == progress


def test_a_single_sync_status_url_is_absolute(as_alice, alice):
    policy_create(manifest=new_runtime("dialect-one"), author=alice, message="first")
    accepted = as_alice.post("/api/v1/runtimes/dialect-one/sync/", {}, format="json")
    assert accepted.json()["statusUrl"] == "http://testserver/api/v1/runtimes/dialect-one/sync/"
    assert accepted["Location"] == accepted.json()["statusUrl"]


@pytest.mark.parametrize("headers", [{}, {"HTTP_AUTHORIZATION": "Token not-a-token"}])
def test_missing_or_invalid_credentials_get_401_with_a_challenge(headers):
    response = APIClient().get("/api/v1/runtimes/", **headers)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["error"]["status"] == 401


def test_an_authenticated_user_without_a_role_still_gets_403(charlie):
    client = APIClient()
    client.force_authenticate(charlie)
    assert client.get("/api/v1/runtimes/").status_code == 403


def test_validate_and_create_report_a_problem_at_the_same_paths(as_alice):
    manifest = new_runtime("bad-nodes")
    manifest["spec"]["mlPolicy"]["numNodes"] = -1
    validated = as_alice.post("/api/v1/runtimes/validate/", {"manifest": manifest}, format="json").json()
    created = as_alice.post("/api/v1/runtimes/", {"manifest": manifest}, format="json")
    assert created.status_code == 400
    (problem,) = validated["errors"]
    (field,) = [f for f in created.json()["error"]["fields"] if f["code"] == problem["code"]]
    assert problem["path"] == field["path"] == "manifest.spec.mlPolicy.numNodes"
    assert problem["manifestPath"] == field["manifestPath"] == "spec.mlPolicy.numNodes"
    # A manifest sent as the whole body is the body: its paths start at the manifest.
    raw = as_alice.post("/api/v1/runtimes/validate/", manifest, format="json").json()
    assert raw["errors"][0]["path"] == raw["errors"][0]["manifestPath"] == "spec.mlPolicy.numNodes"
