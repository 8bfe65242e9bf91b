"""The API answers only what its OpenAPI document declares: every status, every media type, every key.

`tests.contract.assert_conforms` reads the schema strictly (an object's undeclared keys are errors, unlike plain
JSON Schema), so a field added to a response without its serializer fails here. Three sweeps cover new endpoints
without anyone listing them: every GET operation against stored data, every authenticated operation without
credentials (401 with the error body), and every operation's declared error statuses carrying the error body.
The main flows (import, validate, preview, revisions, export, sync, drift, adoption, TrainJobs, tokens) and their
error answers run end to end against the sandbox cluster.
"""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from runtimes.domain.manifest import dump_yaml
from tests.contract import api_schema, assert_conforms, strict
from tests.jobs.factories import live_tracker, tracked_job
from tests.runtimes.test_services import level1
from tests.sync.conftest import runtime_manifest

pytestmark = pytest.mark.django_db

POLICY = "torch-gang"
# Values for path parameters by template, so that every GET operation reads something that exists.
PATH_VALUES = {"name": POLICY, "number": "1", "namespace": "team-a", "token_id": None, "batch_id": None,
               "job_id": None, "whatif_id": None, "cluster_queue": "cq-team-a", "local_queue": "user-queue",
               "channel_id": None, "subscription_id": None}


def _operations(*, method: str | None = None, authenticated: bool | None = None) -> list:
    schema = api_schema()
    found = []
    for path, item in schema["paths"].items():
        for verb, operation in item.items():
            if method and verb != method:
                continue
            if authenticated is not None and bool(operation.get("security")) != authenticated:
                continue
            found.append(pytest.param(verb, path, id=f"{verb.upper()} {path}"))
    return found


class Api:
    """An API client whose every answer is checked against the schema, strictly."""

    def __init__(self, client: APIClient) -> None:
        self.client = client

    def call(self, method: str, path: str, data=None, *, status: int | None = None, **kwargs):
        """Return the checked body of ``method path``; assert the status when given."""
        response = getattr(self.client, method.lower())(path, data, **kwargs)
        if status is not None:
            assert response.status_code == status, (method, path, response.status_code, response.content[:400])
        return assert_conforms(api_schema(), response, method=method, path=path)


@pytest.fixture
def eager_celery():
    from trainer_portal.celery import app

    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, False
    yield app
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


@pytest.fixture
def stored(alice, cluster, eager_celery, django_capture_on_commit_callbacks):
    """A policy (two revisions, synced once), a bulk sync batch, a tracked TrainJob and a token; returns ids."""
    from runtimes import selectors
    from runtimes.services import policies, sync
    from trainer_portal.tokens.services import token_issue

    policy = policies.policy_create(manifest=level1(POLICY), author=alice, message="first")
    changed = level1(POLICY)
    changed["spec"]["mlPolicy"]["numNodes"] = 3
    policies.policy_update(name=POLICY, manifest=changed, expected_version=policy.version, author=alice,
                           message="three nodes")
    with django_capture_on_commit_callbacks(execute=True):
        sync.policy_sync_request(policy=selectors.policy_get(name=POLICY), force=False)
        batch = sync.policies_sync_request(names=[POLICY], actor=alice)
    live_tracker()
    tracked_job("team-a", POLICY, runtime=POLICY)
    token = token_issue(user=alice, name="contract").token
    from forecast.models import WhatIf
    from trainer_portal.cluster.models import Cluster

    whatif = WhatIf.objects.create(cluster=Cluster.objects.get(is_default=True),
                                   candidate={"topology": [{"runtime": POLICY, "topologyLevel": "rack"}]})
    _kueue_queues()
    return {"token_id": str(token.pk), "batch_id": batch.id.hex, "job_id": batch.id.hex, "whatif_id": str(whatif.pk)}


def _kueue_queues() -> None:
    """A ClusterQueue with a LocalQueue in team-a and one waiting workload, as the queue watcher writes them."""
    from queues.models import ClusterQueue, LocalQueue, QueuedWorkload
    from trainer_portal.cluster.models import Cluster

    cluster = Cluster.objects.get(is_default=True)
    ClusterQueue.objects.create(cluster=cluster, name="cq-team-a", cohort="research", pending=1, usage=[
        {"flavor": "default-flavor", "resource": "nvidia.com/gpu", "nominal": 16.0, "used": 8.0, "borrowed": 0.0,
         "lendable": 8.0, "borrowable": 0.0, "borrowingLimit": None, "lendingLimit": 8.0}])
    LocalQueue.objects.create(cluster=cluster, namespace="team-a", name="user-queue", cluster_queue="cq-team-a",
                              pending=1, usage=[{"flavor": "default-flavor", "resource": "nvidia.com/gpu",
                                                 "used": 8.0}])
    QueuedWorkload.objects.create(cluster=cluster, namespace="team-a", name="trainjob-waiting-1a2b3",
                                  local_queue="user-queue", cluster_queue="cq-team-a", state="pending",
                                  position_in_cluster_queue=0, position_in_local_queue=0, reason="WaitingForQuota",
                                  job_kind="TrainJob", job_name="waiting", job_uid="uid-waiting",
                                  requests={"nvidia.com/gpu": 8.0})


@pytest.fixture
def as_alice(alice) -> Api:
    client = APIClient()
    client.force_authenticate(alice)
    return Api(client)


# --------------------------------------------------------------------------------------------------- the document


def test_every_authenticated_operation_declares_401_and_403_with_the_error_body():
    schema = api_schema()
    for path, item in schema["paths"].items():
        for verb, operation in item.items():
            responses = operation["responses"]
            if operation.get("security"):
                assert {"401", "403"} <= set(responses), f"{verb.upper()} {path}"
            for status, response in responses.items():
                if int(status) >= 400:
                    media = response.get("content", {}).get("application/json", {})
                    assert media.get("schema") == {"$ref": "#/components/schemas/Error"}, f"{verb} {path} {status}"


def test_operations_with_a_body_declare_400_413_415_and_path_parameters_404():
    schema = api_schema()
    for path, item in schema["paths"].items():
        for verb, operation in item.items():
            statuses = set(operation["responses"])
            if "requestBody" in operation and verb in ("post", "put", "patch"):
                assert {"400", "413", "415"} <= statuses, f"{verb.upper()} {path}"
            if "{" in path:
                assert "404" in statuses, f"{verb.upper()} {path}"
            assert "503" in statuses, f"{verb.upper()} {path}"


def test_the_token_exchange_declares_one_body_media_type():
    # Two usable media types made openapi-python-client generate a module that fails to import (and pick the form
    # for every JSON login); the form post still works and the description says so.
    operation = api_schema()["paths"]["/api/v1/auth/token/"]["post"]
    assert list(operation["requestBody"]["content"]) == ["application/json"]
    assert "form" in operation["description"]


def test_the_dialect_parameter_is_declared_where_bodies_repeat_first_release_keys():
    schema = api_schema()
    for path in ("/api/v1/cluster/", "/api/v1/sync-batches/{batch_id}/", "/api/v1/runtimes/{name}/sync/impact/"):
        parameters = {p["name"]: p for p in schema["paths"][path]["get"].get("parameters", [])}
        assert parameters["dialect"]["schema"]["enum"] == ["camel"], path


def test_the_strict_reading_refuses_an_undeclared_key():
    closed = strict({"$ref": "#/components/schemas/PreviewVerdict"}, api_schema()["components"]["schemas"])
    import jsonschema

    good = {"fits": True, "summary": "s", "explanation": [], "bindingLevel": None, "startupDeadlock": False}
    jsonschema.validate(good, closed)
    with pytest.raises(jsonschema.ValidationError, match="surprise"):
        jsonschema.validate({**good, "surprise": 1}, closed)


# --------------------------------------------------------------------------------------------------- sweeps


@pytest.mark.parametrize(("method", "path"), _operations(method="get"))
def test_every_read_answers_only_declared_keys(as_alice, stored, method, path):
    values = {**PATH_VALUES, **stored}
    if path.startswith(("/api/v1/clusters/", "/api/v1/cluster/")):  # the cluster the migration made
        from trainer_portal.cluster.models import Cluster

        values["name"] = Cluster.objects.get(is_default=True).name
    if "{user_id}" in path:  # the caller's own account
        from django.contrib.auth import get_user_model

        values["user_id"] = get_user_model().objects.get(username="alice").pk
    url = path
    for key, value in values.items():
        url = url.replace("{" + key + "}", str(value))
    assert "{" not in url, f"add a value for the path parameter of {path} to PATH_VALUES"
    as_alice.call("get", url, status=200)
    if any(p["name"] == "dialect" for p in api_schema()["paths"][path]["get"].get("parameters", [])):
        as_alice.call("get", url + "?dialect=camel", status=200)


@pytest.mark.parametrize(("method", "path"), _operations(authenticated=True))
def test_every_authenticated_operation_refuses_anonymous_callers_as_declared(db, method, path):
    url = path.replace("{token_id}", "1").replace("{number}", "1").replace("{user_id}", "1").replace("{whatif_id}", "1")
    url = url.replace("{channel_id}", "1").replace("{subscription_id}", "1")
    for key in ("name", "namespace", "batch_id", "job_id"):
        url = url.replace("{" + key + "}", "x")
    client = APIClient()
    response = getattr(client, method)(url, {}, format="json")
    body = assert_conforms(api_schema(), response, method=method, path=url)
    assert response.status_code == 401 and body["error"]["code"] == "not_authenticated", body
    assert response["WWW-Authenticate"] == "Token"


# --------------------------------------------------------------------------------------------------- main flows


def test_policy_flows_answer_only_declared_keys(as_alice, alice, cluster, eager_celery,
                                                django_capture_on_commit_callbacks):
    api = as_alice
    stream = dump_yaml(level1(POLICY)) + "---\n" + dump_yaml(runtime_manifest("plain"))
    imported = api.call("post", "/api/v1/runtimes/import/", stream, content_type="application/yaml", status=201)
    assert imported["created"] == [POLICY, "plain"]

    api.call("get", "/api/v1/runtimes/?sync_status=out_of_sync&ordering=-updated_at", status=200)
    policy = api.call("get", f"/api/v1/runtimes/{POLICY}/", status=200)
    report = api.call("post", "/api/v1/runtimes/validate/", {"manifest": level1("x")}, format="json", status=200)
    assert report["ok"] is True
    api.call("post", "/api/v1/runtimes/validate/", "kind: [", content_type="application/yaml", status=200)

    preview_body = {"numNodes": 4, "topology": {"source": "synthetic", "zones": 2, "blocksPerZone": 2,
                                                "racksPerBlock": 2, "nodesPerRack": 4, "gpusPerNode": 8}}
    preview = api.call("post", f"/api/v1/runtimes/{POLICY}/preview/", preview_body, format="json", status=200)
    assert preview["podGroups"][0]["placement"]["fits"] is True
    assert "startupDeadlock" in preview["verdict"]
    api.call("post", "/api/v1/preview/", {**preview_body, "manifest": level1("unsaved")}, format="json", status=200)
    api.call("post", "/api/v1/preview/", {**preview_body, "numNodes": 10**6, "manifest": level1("u")},
             format="json", status=400)

    changed = level1(POLICY)
    changed["spec"]["mlPolicy"]["numNodes"] = 3
    api.call("put", f"/api/v1/runtimes/{POLICY}/", {"manifest": changed, "version": policy["version"]},
             format="json", status=200)
    changed_again = level1(POLICY)
    changed_again["spec"]["mlPolicy"]["numNodes"] = 5
    stale = api.call("put", f"/api/v1/runtimes/{POLICY}/", {"manifest": changed_again, "version": policy["version"]},
                     format="json", status=409)
    assert stale["error"]["currentVersion"] == 2
    api.call("put", f"/api/v1/runtimes/{POLICY}/", {"manifest": changed}, format="json", status=428)
    api.call("patch", f"/api/v1/runtimes/{POLICY}/", {"manifest": {"metadata": {"labels": {"a": "b"}}},
                                                        "version": 2}, format="json", status=200)
    api.call("get", f"/api/v1/runtimes/{POLICY}/revisions/", status=200)
    api.call("get", f"/api/v1/runtimes/{POLICY}/revisions/1/", status=200)
    api.call("get", f"/api/v1/runtimes/{POLICY}/revisions/99/", status=404)
    api.call("get", f"/api/v1/runtimes/{POLICY}/diff/?from=1&to=3", status=200)
    api.call("post", f"/api/v1/runtimes/{POLICY}/rollback/", {"revision": 1, "version": 3}, format="json",
             status=200)
    api.call("get", f"/api/v1/runtimes/{POLICY}/export/", status=200)
    api.call("get", "/api/v1/runtimes/nope/", status=404)
    api.call("post", "/api/v1/runtimes/validate/", "x", content_type="text/plain", status=415)
    api.call("post", "/api/v1/runtimes/validate/", json.dumps({"text": "x" * (1024 * 1024 + 10)}),
             content_type="application/json", status=413)

    with django_capture_on_commit_callbacks(execute=True):
        api.call("post", f"/api/v1/runtimes/{POLICY}/sync/", {}, format="json", status=202)
    status = api.call("get", f"/api/v1/runtimes/{POLICY}/sync/", status=200)
    assert status["state"] == "synced", status
    api.call("get", f"/api/v1/runtimes/{POLICY}/sync/impact/?numNodes=4", status=200)
    api.call("get", f"/api/v1/runtimes/{POLICY}/sync/impact/?numNodes=0", status=400)
    drift = api.call("post", f"/api/v1/runtimes/{POLICY}/drift/check/", status=200)
    assert drift["drifted"] is False
    api.call("post", f"/api/v1/runtimes/{POLICY}/drift/resolve/", {"action": "adopt"}, format="json", status=409)
    api.call("post", "/api/v1/runtimes/plain/drift/check/", status=409)
    with django_capture_on_commit_callbacks(execute=True):
        accepted = api.call("post", "/api/v1/runtimes/sync/", {"names": [POLICY, "plain"]}, format="json",
                            status=202)
    api.call("get", f"/api/v1/sync-batches/{accepted['batch']}/", status=200)
    api.call("get", f"/api/v1/sync-batches/{accepted['batch']}/?dialect=camel", status=200)
    api.call("get", f"/api/v1/sync-jobs/{accepted['batch']}/", status=200)
    api.call("post", "/api/v1/runtimes/sync/", {"names": ["ghost"]}, format="json", status=400)
    api.call("post", "/api/v1/cluster/adopt/", status=200)
    api.call("get", "/api/v1/cluster/", status=200)
    api.call("delete", "/api/v1/runtimes/plain/?version=1", status=204)


def test_bulk_export_is_one_yaml_stream_or_one_json_list_honouring_the_filters(as_alice, bob, alice):
    from runtimes.services import policies

    for name in ("a-one", "a-two", "b-three"):
        policies.policy_create(manifest=level1(name), author=alice, message="")
    viewer = APIClient()
    viewer.force_authenticate(bob)
    api = Api(viewer)

    response = viewer.get("/api/v1/runtimes/export/")
    assert response["Content-Type"].startswith("application/yaml")
    text = api.call("get", "/api/v1/runtimes/export/", status=200)
    assert text.count("---\n") == 3 and "name: b-three" in text

    listed = api.call("get", "/api/v1/runtimes/export/?format=json&search=a-&ordering=-name", status=200)
    assert listed["kind"] == "List"
    assert [item["metadata"]["name"] for item in listed["items"]] == ["a-two", "a-one"]

    only = api.call("get", "/api/v1/runtimes/export/?format=yaml&search=b-", status=200)
    assert only.count("---\n") == 1 and "b-three" in only
    api.call("get", "/api/v1/runtimes/export/?format=xml", status=400)

    # What it writes imports unchanged (both forms), as an upsert that changes nothing.
    for body, media in ((text, "application/yaml"), (json.dumps(listed), "application/json")):
        result = as_alice.call("post", "/api/v1/runtimes/import/?mode=upsert", body, content_type=media, status=200)
        assert not result["created"], result


def test_trainjob_and_token_flows_answer_only_declared_keys(as_alice, alice, client):
    live_tracker()
    tracked_job("team-a", "job-x")
    as_alice.call("get", "/api/v1/trainjobs/?state=gang-pending&limit=1", status=200)
    as_alice.call("get", "/api/v1/trainjobs/summary/", status=200)
    as_alice.call("get", "/api/v1/trainjobs/team-a/job-x/", status=200)
    as_alice.call("get", "/api/v1/trainjobs/team-a/nope/", status=404)
    as_alice.call("get", "/api/v1/trainjobs/?limit=0", status=400)

    anonymous = Api(APIClient())
    issued = anonymous.call("post", "/api/v1/auth/token/", {"username": "alice", "password": "alice-password-1"},
                            format="json", status=200)
    anonymous.call("post", "/api/v1/auth/token/", {"username": "alice", "password": "wrong"}, format="json",
                   status=400)
    by_token = APIClient()
    by_token.credentials(HTTP_AUTHORIZATION=f"Token {issued['token']}")
    tokens = Api(by_token)
    tokens.call("get", "/api/v1/auth/tokens/", status=200)
    created = tokens.call("post", "/api/v1/auth/tokens/", {"name": "ci", "days": 2}, format="json", status=201)
    tokens.call("delete", f"/api/v1/auth/tokens/{created['id']}/", status=204)
    tokens.call("delete", f"/api/v1/auth/tokens/{created['id']}/", status=404)
