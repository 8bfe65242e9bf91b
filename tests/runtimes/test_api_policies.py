"""REST API: /api/v1/runtimes/ and /api/v1/runtimes/{name}/ — list, create, read, replace, merge-patch, delete.

We test these aspects: the representation, filters and pagination, optimistic concurrency (409, 428, If-Match),
structured 400s for every kind of bad input (never a 500), and query counts on the list.
"""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from runtimes.domain.manifest import dump_yaml
from runtimes.models import PolicyRevision, RuntimePolicy
from runtimes.services import policies as policy_services
from runtimes.services.clusters import default_cluster
from tests.runtimes.test_services import broken, fast_password_hashing, level1, runtime  # noqa: F401 (autouse fixture)

LIST = "/api/v1/runtimes/"


def detail(name: str = "torch-gang") -> str:
    return f"/api/v1/runtimes/{name}/"


@pytest.fixture
def api(alice) -> APIClient:
    """An API client logged in (session) as alice, the platform admin."""
    client = APIClient()
    client.force_login(alice)
    return client


@pytest.fixture
def policy(alice):
    return policy_services.policy_create(manifest=level1(), author=alice, message="first", source="api")


def fields(response) -> dict[str, str]:
    """Return the error's field paths → codes."""
    return {f["path"]: f["code"] for f in response.json()["error"]["fields"]}


# --------------------------------------------------------------------------------------------------- read


def test_it_lists_policies_with_their_summary(db, api, policy):
    response = api.get(LIST)

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1
    item = body["results"][0]
    assert item["name"] == "torch-gang"
    assert item["version"] == 1
    assert item["framework"] == "torch"
    assert item["scheduling"] == {"mode": "level1", "summary": "L1 · gang · rack", "levels": [1]}
    assert item["manifest"] == level1()
    assert item["createdBy"] == item["updatedBy"] == "alice"
    assert item["sync"] == {
        "status": "draft",
        "label": "Draft",
        "state": "draft",
        "appliedRevision": None,
        "resourceVersion": "",
        "lastSyncedAt": None,
        "error": "",
        "clusters": f"not applied on {default_cluster().name}",
    }
    assert item["cluster"] == {"status": "not_applied", "label": "Not applied"}
    assert item["urls"]["self"].endswith(detail())
    assert item["urls"]["export"].endswith(detail() + "export/")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["alpha", "beta", "gamma"]),
        ("?search=alp", ["alpha"]),
        ("?search=rack", ["beta"]),
        ("?scheduling_mode=none", ["alpha", "gamma"]),
        ("?framework=torch", ["alpha", "beta", "gamma"]),
        ("?framework=mpi", []),
        ("?sync_state=draft", ["alpha", "beta", "gamma"]),
        ("?sync_state=synced", []),
        ("?ordering=-name", ["gamma", "beta", "alpha"]),
        ("?ordering=-updated_at", ["gamma", "beta", "alpha"]),
        ("?limit=2", ["alpha", "beta"]),
        ("?limit=2&offset=2", ["gamma"]),
    ],
)
def test_it_filters_orders_and_paginates(db, api, alice, query, expected):
    for manifest in (runtime("alpha"), level1("beta"), runtime("gamma")):
        policy_services.policy_create(manifest=manifest, author=alice, source="api")

    response = api.get(LIST + query)

    assert response.status_code == 200
    assert [item["name"] for item in response.json()["results"]] == expected


@pytest.mark.parametrize("query", ["?ordering=secret", "?sync_state=bogus", "?search=a%00b"])
def test_it_rejects_bad_filters(db, api, query):
    response = api.get(LIST + query)

    assert response.status_code == 400
    assert response.json()["error"]["fields"]


@pytest.mark.parametrize("count", [1, 12])
def test_the_list_costs_a_fixed_number_of_queries(db, api, alice, count, django_assert_max_num_queries):
    for index in range(count):
        policy_services.policy_create(manifest=runtime(f"policy-{index}"), author=alice, source="api")

    # session, user, groups, count, page (creator and editor are joined), sync rows, chosen and enabled clusters.
    with django_assert_max_num_queries(8):
        response = api.get(LIST)

    assert response.json()["count"] == count


def test_it_gets_one_policy_with_an_etag(db, api, policy):
    response = api.get(detail())

    assert response.status_code == 200
    assert response["ETag"] == '"1"'
    assert response.json()["manifest"] == level1()


@pytest.mark.parametrize("name", ["nope", "UPPER", "a" * 300, "a%00b"])
def test_an_unknown_or_impossible_name_is_404(db, api, name):
    response = api.get(detail(name))

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_html_in_annotations_is_returned_verbatim(db, api, alice):
    manifest = runtime("xss")
    manifest["metadata"]["annotations"] = {"note": "<script>alert('x')</script>&amp;"}
    policy_services.policy_create(manifest=manifest, author=alice, source="api")

    response = api.get(detail("xss"))

    assert response["Content-Type"] == "application/json"
    assert response.json()["manifest"]["metadata"]["annotations"]["note"] == "<script>alert('x')</script>&amp;"


# --------------------------------------------------------------------------------------------------- create


def test_it_creates_a_policy(db, api):
    response = api.post(LIST, {"manifest": level1(), "message": "hello"}, format="json")

    assert response.status_code == 201
    assert response["Location"].endswith(detail())
    assert response.json()["version"] == 1
    revision = PolicyRevision.objects.get()
    assert (revision.message, revision.source, revision.author_name) == ("hello", "api", "alice")


def test_it_creates_a_policy_from_a_yaml_body(db, api):
    response = api.post(LIST + "?message=from+yaml", data=dump_yaml(level1()), content_type="application/yaml")

    assert response.status_code == 201
    assert RuntimePolicy.objects.get().manifest == level1()
    assert PolicyRevision.objects.get().message == "from yaml"


def test_it_refuses_an_invalid_manifest_with_field_paths(db, api):
    response = api.post(LIST, {"manifest": broken()}, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert fields(response)["manifest.spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]"] == (
        "scheduling.targets.unknown"
    )
    assert not RuntimePolicy.objects.exists()


def test_a_taken_name_is_409(db, api, policy):
    response = api.post(LIST, {"manifest": level1()}, format="json")

    assert response.status_code == 409
    assert fields(response) == {"manifest.metadata.name": "name_taken"}


NESTED = "[" * 100_000 + "]" * 100_000
NESTED_MANIFEST = '{"manifest": {"spec": ' + "[" * 800 + "]" * 800 + "}}"


@pytest.mark.parametrize(
    ("body", "content_type", "path"),
    [
        ("{bad json", "application/json", None),
        (NESTED, "application/json", None),
        (NESTED_MANIFEST, "application/json", "manifest"),
        ('{"manifest": NaN}', "application/json", None),
        ("[1, 2]", "application/json", ""),
        ('"just a string"', "application/json", ""),
        ("{}", "application/json", "manifest"),
        ('{"manifest": [1]}', "application/json", "manifest"),
        ('{"manifest": "text"}', "application/json", "manifest"),
        ('{"manifest": null}', "application/json", "manifest"),
        (json.dumps({"manifest": runtime(), "message": "m" * 501}), "application/json", "message"),
        (json.dumps({"manifest": runtime() | {"x": "a\u0000b"}}), "application/json", "manifest.x"),
        (json.dumps({"manifest": runtime() | {"x": "\ud800"}}), "application/json", None),
        (json.dumps({"manifest": runtime() | {"kind": "ConfigMap"}}), "application/json", "manifest.kind"),
        ("kind: [\n", "application/yaml", "manifest"),
        ("a: &x 1\nb: *x\n", "application/yaml", "manifest"),
        ("apiVersion: v1\nkind: ConfigMap\n", "text/yaml", "manifest.kind"),
        (b"kind: \xff\xfe\n", "application/yaml", None),
    ],
    ids=[
        "malformed-json",
        "deep-json",
        "deep-manifest",
        "nan",
        "array-body",
        "string-body",
        "missing-manifest",
        "manifest-list",
        "manifest-string",
        "manifest-null",
        "long-message",
        "nul-char",
        "lone-surrogate",
        "wrong-kind",
        "yaml-syntax",
        "yaml-alias",
        "yaml-wrong-kind",
        "not-utf8",
    ],
)
def test_bad_input_is_a_structured_400(db, api, body, content_type, path):
    response = api.post(LIST, data=body, content_type=content_type)

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["message"]
    if path is not None:
        assert path in fields(response), error
    assert not RuntimePolicy.objects.exists()


def test_yaml_errors_carry_line_and_column(db, api):
    text = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n\tname: x\n"

    response = api.post(LIST, data=text, content_type="application/yaml")

    assert response.status_code == 400
    field = response.json()["error"]["fields"][0]
    assert (field["line"], field["column"]) == (4, 1)


def test_a_body_over_one_mebibyte_is_refused(db, api):
    manifest = runtime()
    manifest["metadata"]["annotations"] = {"big": "x" * (1024 * 1024)}

    response = api.post(LIST, {"manifest": manifest}, format="json")

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert not RuntimePolicy.objects.exists()


def test_an_unsupported_media_type_is_415(db, api):
    response = api.post(LIST, data="a,b", content_type="text/csv")

    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


# --------------------------------------------------------------------------------------------------- put


def test_put_replaces_the_manifest(db, api, policy):
    response = api.put(detail(), {"manifest": runtime(num_nodes=4), "version": 1, "message": "more"}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert body["version"] == 2
    assert body["scheduling"]["mode"] == "none"
    assert response["ETag"] == '"2"'
    assert PolicyRevision.objects.get(number=2).message == "more"


@pytest.mark.parametrize("if_match", ['"1"', "1", 'W/"1"'])
def test_put_accepts_the_version_in_if_match(db, api, policy, if_match):
    response = api.put(detail(), {"manifest": runtime(num_nodes=4)}, format="json", HTTP_IF_MATCH=if_match)

    assert response.status_code == 200
    assert response.json()["version"] == 2


def test_put_accepts_a_yaml_body_with_if_match(db, api, policy):
    response = api.put(
        detail(), data=dump_yaml(runtime(num_nodes=4)), content_type="application/yaml", HTTP_IF_MATCH='"1"'
    )

    assert response.status_code == 200
    assert response.json()["manifest"]["spec"]["mlPolicy"]["numNodes"] == 4


def test_put_without_a_version_is_428(db, api, policy):
    response = api.put(detail(), {"manifest": runtime(num_nodes=4)}, format="json")

    assert response.status_code == 428
    assert fields(response) == {"version": "required"}
    assert RuntimePolicy.objects.get().version == 1


@pytest.mark.parametrize(
    ("body_version", "if_match", "path"),
    [
        (None, "*", "If-Match"),
        (None, '"abc"', "If-Match"),
        (None, '"1", "2"', "If-Match"),
        (None, '"99999999999"', "If-Match"),
        (2, '"1"', "version"),
        ("abc", None, "version"),
        (0, None, "version"),
        (10**20, None, "version"),
    ],
)
def test_put_with_a_malformed_version_is_400(db, api, policy, body_version, if_match, path):
    body = {"manifest": runtime(num_nodes=4)}
    if body_version is not None:
        body["version"] = body_version
    headers = {"HTTP_IF_MATCH": if_match} if if_match is not None else {}

    response = api.put(detail(), body, format="json", **headers)

    assert response.status_code == 400
    assert path in fields(response)


def test_a_stale_put_is_409_with_the_changes_since(db, api, policy):
    first = api.put(detail(), {"manifest": runtime(num_nodes=2), "version": 1}, format="json")
    assert first.status_code == 200

    response = api.put(detail(), {"manifest": runtime(num_nodes=3), "version": 1}, format="json")

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "conflict"
    assert (error["currentVersion"], error["expectedVersion"]) == (2, 1)
    assert {"path": "spec.mlPolicy.numNodes", "op": "changed", "old": 1, "new": 2} in error["changes"]
    assert RuntimePolicy.objects.get().manifest["spec"]["mlPolicy"]["numNodes"] == 2


def test_put_of_an_unchanged_manifest_keeps_the_version(db, api, policy):
    response = api.put(detail(), {"manifest": level1(), "version": 1}, format="json")

    assert response.status_code == 200
    assert response.json()["version"] == 1
    assert PolicyRevision.objects.count() == 1


def test_put_cannot_rename(db, api, policy):
    response = api.put(detail(), {"manifest": level1("renamed"), "version": 1}, format="json")

    assert response.status_code == 400
    assert fields(response) == {"manifest.metadata.name": "immutable"}


def test_put_of_an_invalid_manifest_is_400_with_paths(db, api, policy):
    response = api.put(detail(), {"manifest": broken(), "version": 1}, format="json")

    assert response.status_code == 400
    assert "manifest.spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]" in fields(response)


def test_put_on_a_missing_policy_is_404(db, api):
    response = api.put(detail("nope"), {"manifest": runtime("nope"), "version": 1}, format="json")

    assert response.status_code == 404


# --------------------------------------------------------------------------------------------------- patch


def test_patch_applies_a_json_merge_patch(db, api, policy):
    patch = {"spec": {"mlPolicy": {"numNodes": 8}, "scheduling": None}}

    response = api.patch(detail(), {"manifest": patch, "version": 1}, format="json")

    assert response.status_code == 200
    manifest = response.json()["manifest"]
    assert manifest["spec"]["mlPolicy"] == {"numNodes": 8, "torch": {}}
    assert "scheduling" not in manifest["spec"]
    assert manifest["spec"]["template"] == level1()["spec"]["template"]


def test_patch_accepts_merge_patch_media_type_with_if_match(db, api, policy):
    response = api.patch(
        detail(),
        data=json.dumps({"metadata": {"labels": {"team": "ml"}}}),
        content_type="application/merge-patch+json",
        HTTP_IF_MATCH='"1"',
    )

    assert response.status_code == 200
    assert response.json()["manifest"]["metadata"]["labels"]["team"] == "ml"


def test_patch_producing_an_invalid_manifest_is_400(db, api, policy):
    response = api.patch(detail(), {"manifest": {"spec": {"mlPolicy": {"numNodes": 0}}}, "version": 1}, format="json")

    assert response.status_code == 400
    assert "manifest.spec.mlPolicy.numNodes" in fields(response)


def test_a_stale_patch_is_409(db, api, policy):
    api.patch(detail(), {"manifest": {"spec": {"mlPolicy": {"numNodes": 2}}}, "version": 1}, format="json")

    response = api.patch(detail(), {"manifest": {"spec": {"mlPolicy": {"numNodes": 3}}}, "version": 1}, format="json")

    assert response.status_code == 409
    assert response.json()["error"]["currentVersion"] == 2


def test_patch_without_a_version_is_428(db, api, policy):
    response = api.patch(detail(), {"manifest": {"spec": {"mlPolicy": {"numNodes": 3}}}}, format="json")

    assert response.status_code == 428


# --------------------------------------------------------------------------------------------------- delete


@pytest.mark.parametrize("how", ["body", "if-match", "query"])
def test_delete_with_the_current_version(db, api, policy, how):
    if how == "body":
        response = api.delete(detail(), {"version": 1}, format="json")
    elif how == "if-match":
        response = api.delete(detail(), HTTP_IF_MATCH='"1"')
    else:
        response = api.delete(detail() + "?version=1")

    assert response.status_code == 204
    assert not RuntimePolicy.objects.exists()


def test_delete_without_a_version_is_428(db, api, policy):
    response = api.delete(detail())

    assert response.status_code == 428
    assert RuntimePolicy.objects.exists()


def test_a_stale_delete_is_409(db, api, policy):
    api.put(detail(), {"manifest": runtime(), "version": 1}, format="json")

    response = api.delete(detail(), HTTP_IF_MATCH='"1"')

    assert response.status_code == 409
    assert RuntimePolicy.objects.exists()
