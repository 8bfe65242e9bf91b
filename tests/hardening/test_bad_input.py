"""A bad-input corpus over every API endpoint and every HTML form: never a 5xx, a 4xx names the field, and nothing
stored changes.

The corpus crosses hostile values (number look-alikes, 5,000-digit numbers, 1e309, NUL, lone surrogates, RTL,
combining marks, 10,000-deep nesting, wrong types) with the places they go (each field of each request body), plus
wrong content types, bodies around the 1 MiB limit, hostile query strings and path segments, OPTIONS on every route
and the browsable API. Every case starts from the same stored state (two policies) and must leave it unchanged:
each value is invalid where it is put, so a 2xx is as much a defect as a 500.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from runtimes.choices import RevisionSource
from runtimes.domain.manifest import dump_yaml
from runtimes.models import RuntimePolicy
from runtimes.services import policies as services
from tests.hardening.conftest import stored_digest
from tests.runtimes.test_services import level1
from tests.ui import editor_post_data, l2_l3_manifest

pytestmark = pytest.mark.django_db

MIB = 1024 * 1024
NAME = "torch-gang"
SENTINEL = "__BAD_VALUE__"


def _nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


def _nested_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


# Raw JSON fragments, each put where a scalar, a string or an object is expected.
VALUES: dict[str, str] = {
    "plus-minus": '"+-5"',
    "superscript-two": '"²"',
    "arabic-three": '"٣"',
    "digits-5000-string": '"' + "9" * 5000 + '"',
    "digits-5000": "9" * 5000,
    "two-to-the-64": str(2**64),
    "1e309": "1e309",
    "minus-1e309": "-1e309",
    "minus-zero": "-0",
    "negative": "-1",
    "float": "1.5",
    "float-integral": "4.0",
    "true": "true",
    "null": "null",
    "list": "[1, 2]",
    "object": '{"a": 1}',
    "empty-object": "{}",
    "empty-string": '""',
    "nul": '"\\u0000"',
    "nul-inside": '"ab\\u0000cd"',
    "lone-high-surrogate": '"\\ud800"',
    "rtl-override": '"\\u202egnp.exe"',
    "combining-marks": '"e' + "\\u0301" * 64 + '"',
    "emoji": '"\U0001f680\U0001f525"',
    "long-string": '"' + "x" * 70_000 + '"',
    "deep-list": _nested_list(10_000),
    "deep-object": _nested_object(10_000),
    # Below Python's recursion limit: the parser accepts it, so whatever walks the document must bound its depth.
    "deep-list-900": _nested_list(900),
    "deep-object-900": _nested_object(900),
}
# Fragments that are well-formed text: a valid revision message.
FREE_TEXT = {"rtl-override", "combining-marks", "emoji", "empty-string", "plus-minus", "superscript-two",
             "arabic-three", "digits-5000-string", "lone-high-surrogate"}
ALL = set(VALUES)


def _new_manifest() -> dict:
    return level1("fresh-policy")


def _changed_manifest() -> dict:
    manifest = level1(NAME)
    manifest["spec"]["mlPolicy"]["numNodes"] = 2
    return manifest


def _preview_body() -> dict:
    return {
        "numNodes": 2,
        "resourcesPerNode": {"nvidia.com/gpu": "8", "cpu": "4"},
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "composite": False,
        "trainJobName": "job",
        "topology": {"source": "synthetic", "zones": 1, "blocksPerZone": 1, "racksPerBlock": 2, "nodesPerRack": 2,
                     "gpusPerNode": 8, "fragmentation": "F0", "seed": 1},
    }


MANIFEST_PATHS = [
    (),
    ("apiVersion",),
    ("kind",),
    ("metadata",),
    ("metadata", "name"),
    ("metadata", "labels"),
    ("spec",),
    ("spec", "mlPolicy", "numNodes"),
    ("spec", "scheduling", "schedulingConstraints", "topology", 0, "key"),
    ("spec", "template", "spec", "replicatedJobs"),
]

# Preview fields that take a whole number (no look-alikes, no floats, no booleans); other preview fields have
# defaults or free choices, and a preview saves nothing, so an answer there is only checked for 5xx.
PREVIEW_NUMBERS = {("numNodes",), ("topology", "zones"), ("topology", "nodesPerRack"), ("topology", "seed"),
                   ("resourcesPerNode", "nvidia.com/gpu")}
PREVIEW_NUMBER_OK = {"null", "empty-string", "minus-zero"}  # null, "": the default; -0 is 0 (a valid seed)
# A Kubernetes quantity may be a JSON number: 4.0 GPUs are 4 GPUs, 1.5 CPUs are 1500m.
PREVIEW_QUANTITY_OK = PREVIEW_NUMBER_OK | {"float", "float-integral"}


def _may_succeed(allowed, path: tuple, value_id: str) -> bool:
    """Return True when `value_id` at `path` is a valid input the endpoint may accept (2xx)."""
    if allowed == "read-only":
        return True
    if allowed == "preview":
        number_path = path in PREVIEW_NUMBERS or (len(path) > 1 and path[1:] in PREVIEW_NUMBERS)
        if path and path[-2:-1] == ("resourcesPerNode",):
            return value_id in PREVIEW_QUANTITY_OK
        return not number_path or value_id in PREVIEW_NUMBER_OK
    return value_id in allowed.get(path, set())


# (endpoint id, method, url, body, [paths], {path: values that are valid there} | "read-only" | "preview", extra)
API_BODIES = [
    ("create", "post", "/api/v1/runtimes/", {"manifest": _new_manifest(), "message": "m"},
     [("manifest", *p) for p in MANIFEST_PATHS] + [("message",)],
     {("message",): FREE_TEXT, ("manifest", "metadata", "labels"): {"empty-object"}}, {}),
    ("replace", "put", f"/api/v1/runtimes/{NAME}/", {"manifest": _changed_manifest(), "version": 1, "message": "m"},
     [("manifest", *p) for p in MANIFEST_PATHS[:8]] + [("version",), ("message",)],
     {("message",): FREE_TEXT, ("manifest", "metadata", "labels"): {"empty-object"}}, {}),
    ("patch", "patch", f"/api/v1/runtimes/{NAME}/",
     {"manifest": {"spec": {"mlPolicy": {"numNodes": 3}}}, "version": 1, "message": "m"},
     [("manifest",), ("manifest", "spec"), ("manifest", "spec", "mlPolicy", "numNodes"), ("manifest", "metadata"),
      ("manifest", "metadata", "name"), ("version",), ("message",)], {("message",): FREE_TEXT}, {}),
    ("merge-patch", "patch", f"/api/v1/runtimes/{NAME}/", {"spec": {"mlPolicy": {"numNodes": 3}}},
     [(), ("spec",), ("spec", "mlPolicy"), ("spec", "mlPolicy", "numNodes"), ("metadata", "name"), ("kind",)],
     {}, {"content_type": "application/merge-patch+json", "headers": {"If-Match": '"1"'}}),
    ("delete", "delete", f"/api/v1/runtimes/{NAME}/", {"version": 1}, [(), ("version",)], {}, {}),
    ("rollback", "post", f"/api/v1/runtimes/{NAME}/rollback/", {"revision": 1, "version": 2},
     [(), ("revision",), ("version",)], {}, {}),
    ("import", "post", "/api/v1/runtimes/import/", {"text": dump_yaml(_new_manifest()), "mode": "create-only",
                                                      "message": "m"},
     [(), ("text",), ("mode",), ("message",)], {("message",): FREE_TEXT}, {}),
    ("validate", "post", "/api/v1/runtimes/validate/", {"manifest": _new_manifest()},
     [(), ("manifest",), *[("manifest", *p) for p in MANIFEST_PATHS[1:]]], "read-only", {}),
    ("preview", "post", f"/api/v1/runtimes/{NAME}/preview/", _preview_body(),
     [(), ("numNodes",), ("resourcesPerNode",), ("resourcesPerNode", "nvidia.com/gpu"), ("resourcesPerNode", "cpu"),
      ("apiVersion",), ("composite",), ("trainJobName",), ("topology",), ("topology", "zones"),
      ("topology", "nodesPerRack"), ("topology", "seed"), ("topology", "fragmentation"), ("topology", "source")],
     "preview", {}),
    ("unsaved-preview", "post", "/api/v1/preview/", {**_preview_body(), "manifest": _new_manifest()},
     [("manifest",), ("manifest", "spec", "mlPolicy", "numNodes"), ("manifest", "metadata", "name"), ("numNodes",),
      ("apiVersion",)], "preview", {}),
    ("bulk-sync", "post", "/api/v1/runtimes/sync/", {"names": [NAME]}, [(), ("names",), ("names", 0)],
     {(): {"empty-object", "object"}}, {}),
    ("drift-resolve", "post", f"/api/v1/runtimes/{NAME}/drift/resolve/", {"action": "adopt"}, [(), ("action",)],
     {}, {}),
    ("token", "post", "/api/v1/auth/token/", {"username": "alice", "password": "wrong"},
     [(), ("username",), ("password",)], {}, {"anonymous": True}),
]


def _set(body, path, value):
    if not path:
        return value
    node = body
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    node[path[-1]] = value
    return body


def _raw_body(body: dict, path: tuple, fragment: str) -> bytes:
    text = json.dumps(_set(copy.deepcopy(body), path, SENTINEL), ensure_ascii=False)
    return text.replace(json.dumps(SENTINEL), fragment).encode("utf-8", "surrogatepass")


def _body_cases():
    for endpoint, method, url, body, paths, allowed, extra in API_BODIES:
        for path in paths:
            for value_id, fragment in VALUES.items():
                free_text = _may_succeed(allowed, path, value_id)
                case_id = f"{endpoint}:{'.'.join(map(str, path)) or '<body>'}={value_id}"
                yield pytest.param(method, url, _raw_body(body, path, fragment), extra, free_text, id=case_id)


def _store_policies() -> None:
    """Store the corpus' starting state: an admin, `torch-gang` at version 2 (so a rollback has a target) and
    `mpi-racks`."""
    from django.contrib.auth.models import Group, User

    admin = User.objects.create_user("corpus-admin")
    admin.groups.add(Group.objects.get_or_create(name="platform-admin")[0])
    services.policy_create(manifest=level1(NAME), author=admin, message="first", source=RevisionSource.API)
    services.policy_update(name=NAME, manifest=_changed_manifest(), expected_version=1, author=admin,
                           message="second", source=RevisionSource.API)
    services.policy_create(manifest=l2_l3_manifest(), author=admin, message="first", source=RevisionSource.API)


@pytest.fixture(scope="module")
def _stored_once(django_db_setup, django_db_blocker):
    # Stored once for the module (thousands of cases); each case runs in a transaction that is rolled back.
    from django.contrib.auth.models import User

    with django_db_blocker.unblock():
        _store_policies()
        yield
        RuntimePolicy.objects.all().delete()
        User.objects.filter(username="corpus-admin").delete()


@pytest.fixture
def policies(_stored_once) -> str:
    """Return the digest of the starting state (stored again if a transactional test elsewhere flushed it)."""
    if not RuntimePolicy.objects.filter(name=NAME).exists():
        _store_policies()
    return stored_digest()


@pytest.fixture
def admin_api(policies):
    from django.contrib.auth.models import User
    from rest_framework.test import APIClient

    client = APIClient(raise_request_exception=False)
    client.force_login(User.objects.get(username="corpus-admin"))  # a session: the HTML pages are probed too
    return client


@pytest.fixture
def admin_html(policies):
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client(raise_request_exception=False)
    client.force_login(User.objects.get(username="corpus-admin"))
    return client


def _error_fields(response) -> list[dict]:
    body = response.json()
    assert set(body) == {"error"}, body
    fields = body["error"]["fields"]
    assert isinstance(fields, list)
    return fields


def assert_refused(response, before: str, *, allow_success: bool = False, json_api: bool = True) -> None:
    """Assert `response` is no server error; a 4xx names at least one field path and nothing stored changed."""
    status = response.status_code
    assert status < 500, f"{status}: {response.content[:300]!r}"
    if 200 <= status < 300 and allow_success:
        return
    assert not 200 <= status < 300 or response.request["REQUEST_METHOD"] == "GET" or not json_api, (
        f"accepted bad input: {status} {response.content[:200]!r}"
    )
    if json_api and status in (400, 413):
        fields = _error_fields(response)
        assert fields and all("path" in f and f.get("message") for f in fields), response.json()
    if json_api and status == 413:
        assert response.json()["error"]["code"] == "too_large"
    assert stored_digest() == before, "the request changed stored data"


@pytest.mark.parametrize(("method", "url", "body", "extra", "free_text"), list(_body_cases()))
def test_bad_values_in_api_bodies_are_refused(admin_api, anonymous_api, policies, method, url, body, extra, free_text):
    client = anonymous_api if extra.get("anonymous") else admin_api
    content_type = extra.get("content_type", "application/json")
    response = getattr(client, method)(url, body, content_type=content_type, headers=extra.get("headers", {}))

    if free_text and response.status_code < 300:
        return  # a valid value where it was put
    assert_refused(response, policies)


# ----------------------------------------------------------------------------------------- content types, sizes

WRITE_ENDPOINTS = [
    ("post", "/api/v1/runtimes/"),
    ("put", f"/api/v1/runtimes/{NAME}/"),
    ("patch", f"/api/v1/runtimes/{NAME}/"),
    ("delete", f"/api/v1/runtimes/{NAME}/"),
    ("post", f"/api/v1/runtimes/{NAME}/rollback/"),
    ("post", "/api/v1/runtimes/import/"),
    ("post", "/api/v1/runtimes/validate/"),
    ("post", f"/api/v1/runtimes/{NAME}/preview/"),
    ("post", "/api/v1/preview/"),
    ("post", "/api/v1/runtimes/sync/"),
    ("post", f"/api/v1/runtimes/{NAME}/drift/resolve/"),
    ("post", "/api/v1/auth/token/"),
]
BOUNDARY = "BoUnDaRy"
CONTENT_TYPES = {
    "form": ("application/x-www-form-urlencoded", b"manifest=x&version=%FF&names=a&action=%00"),
    "multipart": (f"multipart/form-data; boundary={BOUNDARY}",
                  f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="manifest"\r\n\r\nx\r\n--{BOUNDARY}--\r\n'
                  .encode()),
    "multipart-no-boundary": ("multipart/form-data", b"garbage"),
    "multipart-truncated": (f"multipart/form-data; boundary={BOUNDARY}", f"--{BOUNDARY}\r\nContent-Disp".encode()),
    "yaml-garbage": ("application/yaml", b"{{{: : :\n  - ]"),
    "yaml-nul": ("application/yaml", b"kind: \x00\n"),
    "yaml-billion-laughs": ("application/yaml",
                            b'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
                            b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                            b"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"),
    "yaml-deep": ("application/yaml", b"[" * 10_000 + b"]" * 10_000),
    "yaml-invalid-utf8": ("application/yaml", b"kind: \xff\xfe\n"),
    "yaml-python-tag": ("application/yaml", b"!!python/object/apply:os.system ['true']\n"),
    "text": ("text/plain", b"hello"),
    "xml": ("application/xml", b"<a/>"),
    "no-content-type": ("", b'{"a": 1}'),
    "json-empty": ("application/json", b""),
    "json-whitespace": ("application/json", b"   \n"),
    "json-invalid-utf8": ("application/json", b'{"manifest": "\xff\xfe"}'),
    "json-bogus-charset": ("application/json; charset=bogus-9", b"{}"),
    "json-utf16-charset": ("application/json; charset=utf-16", b'{"a": 1}'),
    "json-bom": ("application/json", b'\xef\xbb\xbf{"a": 1}'),
    "json-top-list": ("application/json", b"[]"),
    "json-top-string": ("application/json", b'"x"'),
    "json-top-null": ("application/json", b"null"),
    "json-top-number": ("application/json", b"5"),
    "json-trailing": ("application/json", b"{} {}"),
    "json-nan": ("application/json", b'{"version": NaN}'),
    "json-duplicate-keys": ("application/json", b'{"version": 1, "version": "x"}'),
    "json-deep": ("application/json", _nested_list(100_000).encode()),
    "json-deep-object": ("application/json", _nested_object(50_000).encode()),
    "merge-patch-list": ("application/merge-patch+json", b"[]"),
    "merge-patch-deep": ("application/merge-patch+json", _nested_object(50_000).encode()),
    "merge-patch-deep-900": ("application/merge-patch+json", ('{"spec":' + _nested_object(900) + "}").encode()),
    "json-deep-900": ("application/json", ('{"manifest":' + _nested_object(900) + "}").encode()),
}


@pytest.mark.parametrize(("method", "url"), WRITE_ENDPOINTS, ids=[f"{m}:{u}" for m, u in WRITE_ENDPOINTS])
@pytest.mark.parametrize("kind", list(CONTENT_TYPES))
def test_wrong_content_types_are_refused(admin_api, anonymous_api, policies, method, url, kind):
    content_type, body = CONTENT_TYPES[kind]
    client = anonymous_api if "token" in url else admin_api
    response = client.generic(method.upper(), url, body, content_type=content_type)

    if _harmless_success(url, kind, response):
        return
    assert response.status_code in (400, 401, 403, 404, 405, 409, 413, 415, 428), (
        response.status_code, response.content[:300])
    assert_refused(response, policies)


# Bodies that are well-formed JSON objects: bulk sync without `names` syncs every policy (as documented).
JSON_OBJECTS = {"json-empty", "json-bogus-charset", "json-duplicate-keys", "json-bom", "no-content-type"}


def _harmless_success(url: str, kind: str, response) -> bool:
    """Return True for a 2xx that is right: validate reports a bad YAML body as `ok: false`; bulk sync of `{}`."""
    if response.status_code >= 300:
        return False
    if url.endswith("/validate/") and kind.startswith("yaml-"):
        return response.json()["ok"] is False
    return url.endswith("/runtimes/sync/") and kind in JSON_OBJECTS


def _padded(size: int) -> bytes:
    """Return a JSON object of exactly `size` bytes (a long message in an otherwise invalid body)."""
    head, tail = b'{"message": "', b'", "version": "not-a-number"}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


SIZES = {"just-under": MIB - 1, "at-limit": MIB, "just-over": MIB + 1, "two-mib-plus": 2 * MIB + 10,
         "three-mib": 3 * MIB}


@pytest.mark.parametrize(("method", "url"), WRITE_ENDPOINTS, ids=[f"{m}:{u}" for m, u in WRITE_ENDPOINTS])
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("content_type", ["application/json", "application/yaml", "application/x-www-form-urlencoded"])
def test_bodies_over_the_limit_answer_413(admin_api, anonymous_api, policies, method, url, size, content_type):
    client = anonymous_api if "token" in url else admin_api
    body = _padded(SIZES[size])
    if content_type == "application/x-www-form-urlencoded":
        body = b"message=" + b"x" * (SIZES[size] - 8)

    response = client.generic(method.upper(), url, body, content_type=content_type)

    if SIZES[size] > MIB:
        assert response.status_code == 413, (response.status_code, response.content[:300])
    else:
        assert response.status_code != 413, response.content[:300]
        if _harmless_success(url, "json-empty" if content_type != "application/yaml" else "yaml-", response):
            return
    assert_refused(response, policies)


# ----------------------------------------------------------------------------------------- query strings, paths

HUGE = "9" * 5000
API_QUERIES = [
    f"/api/v1/runtimes/?limit={HUGE}", "/api/v1/runtimes/?limit=-1", "/api/v1/runtimes/?offset=%C2%B2",
    f"/api/v1/runtimes/?offset={HUGE}", "/api/v1/runtimes/?search=%00", "/api/v1/runtimes/?search=a%00b",
    "/api/v1/runtimes/?framework=%ED%A0%80", "/api/v1/runtimes/?sync_state=nope", "/api/v1/runtimes/?ordering=nope",
    "/api/v1/runtimes/?search=" + "x" * 10_000, "/api/v1/runtimes/?scheduling_mode=%FF",
    f"/api/v1/runtimes/{NAME}/diff/?from={HUGE}", f"/api/v1/runtimes/{NAME}/diff/?to=-1",
    f"/api/v1/runtimes/{NAME}/diff/?from=%C2%B2", f"/api/v1/runtimes/{NAME}/diff/?from=%D9%A3",
    f"/api/v1/runtimes/{NAME}/diff/?from=1e309", f"/api/v1/runtimes/{NAME}/diff/?from=99999999999999999999",
    f"/api/v1/runtimes/{NAME}/diff/?from=%00",
    f"/api/v1/runtimes/{NAME}/revisions/99999999999999999999/", f"/api/v1/runtimes/{NAME}/revisions/{HUGE}/",
    f"/api/v1/runtimes/{NAME}/revisions/?limit={HUGE}",
    f"/api/v1/runtimes/{NAME}/sync/impact/?numNodes=%2B-5", f"/api/v1/runtimes/{NAME}/sync/impact/?numNodes=%C2%B2",
    f"/api/v1/runtimes/{NAME}/sync/impact/?numNodes={HUGE}", f"/api/v1/runtimes/{NAME}/sync/impact/?numNodes=%00",
    f"/api/v1/runtimes/{NAME}/export/?format=%00", f"/api/v1/runtimes/{NAME}/export/?format=nope",
    f"/api/v1/runtimes/{NAME}/export/?revision=%C2%B2", f"/api/v1/runtimes/{NAME}/export/?revision={HUGE}",
    f"/api/v1/runtimes/{NAME}/export/?revision=%D9%A3",
    "/api/v1/sync-jobs/a%2Fb/", "/api/v1/sync-jobs/%00/", "/api/v1/sync-jobs/" + "x" * 3000 + "/",
    "/api/v1/runtimes/%00/", "/api/v1/runtimes/" + "a" * 300 + "/", "/api/v1/runtimes/%F0%9F%9A%80/",
    "/api/v1/runtimes/%ED%A0%80/", "/api/v1/runtimes/..%2F..%2Fetc/", "/api/v1/cluster/?verbose=%00",
]
HTML_QUERIES = [
    f"/runtimes/?page={HUGE}", "/runtimes/?page=-1", "/runtimes/?page=%00", "/runtimes/?framework=%00",
    "/runtimes/?search=%ED%A0%80", "/runtimes/?sync_state=nope", "/runtimes/?ordering=%00",
    "/runtimes/export/?framework=%00", f"/runtimes/{NAME}/diff/?from={HUGE}", f"/runtimes/{NAME}/diff/?to=%C2%B2",
    f"/runtimes/{NAME}/diff/?from=99999999999999999999", f"/runtimes/{NAME}/diff/?from=%00",
    f"/runtimes/{NAME}/rollback/99999999999999999999/", f"/runtimes/{NAME}/rollback/{HUGE}/",
    f"/runtimes/{NAME}/export/?inline=%00", f"/runtimes/{NAME}/history/?page={HUGE}",
    "/runtimes/%00/", "/runtimes/" + "a" * 300 + "/", "/runtimes/%ED%A0%80/edit/",
    "/cluster/?job=a/b", "/cluster/?job=%00", "/cluster/?job=" + "x" * 3000, "/cluster/?job=..%2F..%2Fetc",
    "/cluster/jobs/%00/", "/cluster/jobs/a%2Fb/",
    f"/cluster/runtimes/{NAME}/impact/?numNodes=%2B-5", f"/cluster/runtimes/{NAME}/impact/?numNodes={HUGE}",
    f"/cluster/runtimes/{NAME}/impact/?numNodes=%C2%B2",
    "/preview/?numNodes=%2B-5", "/preview/?numNodes=%C2%B2", f"/preview/?numNodes={HUGE}",
    "/preview/?numNodes=%D9%A3", "/preview/?numNodes=1e309", "/preview/?gpu=%00", "/preview/?seed=-0",
    "/preview/?zones=%EF%BC%95", "/preview/?manifest=%00", "/preview/?policy=%00", "/preview/?apiVersion=%00",
    f"/preview/panel/{NAME}/?numNodes=%C2%B2", f"/preview/panel/{NAME}/?numNodes={HUGE}",
    "/login/?next=https://evil.example/",
]


@pytest.mark.parametrize("url", API_QUERIES + HTML_QUERIES)
def test_hostile_query_strings_and_paths_are_handled(admin_api, policies, url):
    response = admin_api.get(url)

    assert response.status_code < 500, (response.status_code, response.content[:300])
    assert stored_digest() == policies
    if url.startswith("/api/") and response.status_code == 400:
        assert _error_fields(response)


YAML_WRITES = [("post", "/api/v1/runtimes/"), ("put", f"/api/v1/runtimes/{NAME}/"),
               ("post", "/api/v1/runtimes/import/")]
QUERY_MESSAGES = {"nul": "a%00b", "too-long": "m" * 501, "nul-only": "%00"}


@pytest.mark.parametrize(("method", "url"), YAML_WRITES, ids=[f"{m}:{u}" for m, u in YAML_WRITES])
@pytest.mark.parametrize("message", list(QUERY_MESSAGES))
def test_a_bad_message_in_the_query_saves_nothing(admin_api, policies, method, url, message):
    manifest = _new_manifest() if method == "post" else _changed_manifest()
    manifest["spec"]["mlPolicy"]["numNodes"] = 5
    response = getattr(admin_api, method)(
        f"{url}?message={QUERY_MESSAGES[message]}", dump_yaml(manifest), content_type="application/yaml",
        headers={"If-Match": '"2"'},
    )

    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert [f["path"] for f in _error_fields(response)] == ["message"]
    assert stored_digest() == policies


def _routes(resolver: URLResolver | None = None, prefix: str = "") -> list[str]:
    resolver = resolver or get_resolver()
    routes: list[str] = []
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            routes.extend(_routes(pattern, route))
        elif isinstance(pattern, URLPattern):
            route = re.sub(r"<int:\w+>", "1", route)
            route = re.sub(r"<str:job_id>", "no-such-job", route)
            route = re.sub(r"<(?:str:)?\w+>", NAME, route)
            routes.append("/" + route.lstrip("^").rstrip("$").replace("\\Z", ""))
    return sorted({r for r in routes if "(?P" not in r and not r.startswith("/admin/")})


ROUTES = _routes()


@pytest.mark.parametrize("url", ROUTES)
def test_options_on_every_route_is_no_server_error(admin_api, policies, url):
    response = admin_api.options(url)

    assert response.status_code < 500, (response.status_code, response.content[:300])
    assert stored_digest() == policies


@pytest.mark.parametrize("url", [r for r in ROUTES if r.startswith("/api/v1/")])
@pytest.mark.parametrize("method", ["get", "options"])
def test_the_browsable_api_renders_every_endpoint_in_debug(admin_api, policies, settings, url, method):
    settings.DEBUG = True
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_RENDERER_CLASSES": [
            "trainer_portal.api.SafeJSONRenderer", "rest_framework.renderers.BrowsableAPIRenderer"
        ],
    }
    response = getattr(admin_api, method)(url, headers={"Accept": "text/html"})

    assert response.status_code < 500, (response.status_code, response.content[:300])
    assert stored_digest() == policies


# ----------------------------------------------------------------------------------------- HTML forms

FORM_VALUES = {
    "nul": "a\x00b",
    "only-nul": "\x00",
    "digits-5000": HUGE,
    "plus-minus": "+-5",
    "superscript-two": "²",
    "1e309": "1e309",
    "float": "1.5",
    "true": "true",
    "long": "x" * 70_000,
}
NUMBER_FIELDS = ["num_nodes", "mpi_num_proc_per_node", "coscheduling_timeout_seconds", "volcano_highest_tier_allowed",
                 "rjobs-0-replicas", "rjobs-1-replicas", "version"]
TEXT_FIELDS = ["framework", "labels", "annotations", "rjobs-0-name", "rjobs-1-image", "rjobs-1-resources",
               "l2-1-job_topology_key", "l2-1-targets", "fields_base", "scheduling_mode", "ml_policy",
               "rjobs-TOTAL_FORMS", "l2-TOTAL_FORMS"]
TEXT_BAD = ["nul", "only-nul"]  # invalid in any text field (PostgreSQL cannot store NUL)


def _editor_data(manifest: dict, *, creating: bool, version: int | None) -> dict:
    from runtimes.domain.editing import fields_from_manifest
    from runtimes.forms.editor import PolicyEditor

    fields = fields_from_manifest(manifest)
    editor = PolicyEditor.from_fields(fields, creating=creating, fixed_name="" if creating else fields.name)
    data = editor_post_data(editor, yaml=dump_yaml(manifest), _policy="" if creating else fields.name,
                            message="edited", version="" if version is None else version)
    if creating:
        data.pop("version")
    return data


def _editor_cases():
    for page in ("new", "edit"):
        for field in NUMBER_FIELDS:
            for value_id, value in FORM_VALUES.items():
                yield pytest.param(page, field, value, id=f"{page}:{field}={value_id}")
        for field in TEXT_FIELDS + (["name"] if page == "new" else []):  # the edit page ignores a posted name
            for value_id in TEXT_BAD:
                yield pytest.param(page, field, FORM_VALUES[value_id], id=f"{page}:{field}={value_id}")
        for value_id in ("nul", "digits-5000", "long"):
            yield pytest.param(page, "message", FORM_VALUES[value_id], id=f"{page}:message={value_id}")
        yield pytest.param(page, "message", "m" * 501, id=f"{page}:message=501-chars")


@pytest.mark.parametrize(("page", "field", "value"), list(_editor_cases()))
def test_bad_values_in_the_editor_never_save(admin_html, policies, page, field, value):
    manifest = l2_l3_manifest("mpi-new") if page == "new" else l2_l3_manifest()
    manifest["spec"]["mlPolicy"]["numNodes"] = 6
    data = _editor_data(manifest, creating=page == "new", version=None if page == "new" else 1)
    if field == "version" and page == "new":
        data["version"] = value
    else:
        data[field] = value
    url = "/runtimes/new/" if page == "new" else "/runtimes/mpi-racks/edit/"

    response = admin_html.post(url, data)

    assert response.status_code < 500, (response.status_code, response.content[:300])
    assert response.status_code != 302, f"saved despite {field}={value[:20]!r}"
    assert stored_digest() == policies


YAML_PANES = {
    "nul-in-yaml": lambda text: text.replace("kind:", "kind: \x00", 1),
    "nul-at-end": lambda text: text + "\x00",
    "control-char": lambda text: text.replace("kind:", "kind: \x07", 1),
    "lone-surrogate-escape": lambda text: text + 'x: "\\ud800"\n',
    "bom-inside": lambda text: text.replace("kind:", "\ufeffkind:", 1),
    "deep": lambda text: "[" * 10_000 + "]" * 10_000,
    "billion-laughs": lambda text: CONTENT_TYPES["yaml-billion-laughs"][1].decode(),
    "python-tag": lambda text: "!!python/object/apply:os.system ['true']\n",
    "two-documents": lambda text: text + "---\n" + text,
    "wrong-type": lambda text: text.replace("numNodes: 6", "numNodes: six"),
    "list": lambda text: "- a\n- b\n",
    "huge": lambda text: text + "#" + "x" * (2 * MIB),
}


@pytest.mark.parametrize("page", ["new", "edit"])
@pytest.mark.parametrize("pane", list(YAML_PANES))
def test_an_invalid_yaml_pane_never_saves_a_form_only_manifest(admin_html, policies, page, pane):
    manifest = l2_l3_manifest("mpi-new") if page == "new" else l2_l3_manifest()
    manifest["spec"]["mlPolicy"]["numNodes"] = 6
    data = _editor_data(manifest, creating=page == "new", version=None if page == "new" else 1)
    data["yaml"] = YAML_PANES[pane](data["yaml"])
    url = "/runtimes/new/" if page == "new" else "/runtimes/mpi-racks/edit/"

    response = admin_html.post(url, data)

    assert response.status_code < 500, (response.status_code, response.content[:300])
    assert response.status_code != 302, "saved a manifest the user did not send"
    assert stored_digest() == policies


NUMBERS_BAD = ["nul", "digits-5000", "plus-minus", "superscript-two", "1e309", "float", "long"]
TEXT_ONLY_BAD = ["nul", "only-nul"]
FORM_POSTS = [
    # (url, base data, fields to spoil; each field gets NUMBERS_BAD unless it is free text, then TEXT_ONLY_BAD)
    (f"/runtimes/{NAME}/rollback/1/", {"version": "2"}, ["version"]),
    (f"/runtimes/{NAME}/delete/", {"version": "2"}, ["version"]),
    ("/runtimes/import/", {"text": dump_yaml(_new_manifest()), "mode": "create-only", "message": "m"},
     ["text", "mode", "message"]),
    ("/runtimes/editor/render-yaml/", {"yaml": dump_yaml(level1(NAME)), "_policy": NAME}, ["yaml", "_policy"]),
    ("/runtimes/editor/parse-yaml/", {"yaml": dump_yaml(level1(NAME)), "_policy": NAME}, ["yaml", "_policy"]),
    ("/preview/", {"numNodes": "2", "gpu": "8", "policy": NAME, "source": "synthetic"},
     ["numNodes", "gpu", "cpu", "memory", "zones", "seed", "apiVersion", "policy", "manifest", "fragmentation"]),
    ("/preview/results/", {"numNodes": "2", "gpu": "8", "policy": NAME, "source": "synthetic"},
     ["numNodes", "gpu", "nodesPerRack", "racksPerBlock", "policy", "manifest"]),
    ("/cluster/sync/", {"names": NAME}, ["names"]),
    (f"/cluster/runtimes/{NAME}/drift/", {"action": "adopt"}, ["action"]),
]
FREE_TEXT_FIELDS = {"message", "text", "yaml", "manifest", "names", "policy", "_policy", "action", "mode",
                    "apiVersion", "fragmentation"}


def _form_post_cases():
    for url, base, spoil in FORM_POSTS:
        for field in spoil:
            values = [*TEXT_ONLY_BAD, "long", "digits-5000"] if field in FREE_TEXT_FIELDS else NUMBERS_BAD
            for value_id in values:
                yield pytest.param(url, base, field, FORM_VALUES[value_id], id=f"{url}:{field}={value_id}")


@pytest.mark.parametrize(("url", "base", "field", "value"), list(_form_post_cases()))
def test_bad_values_in_html_forms_change_nothing(admin_html, policies, url, base, field, value):
    response = admin_html.post(url, {**base, field: value})

    assert response.status_code < 500, (response.status_code, response.content[:300])
    assert stored_digest() == policies


SYNC_FORM_NEXT = ["foo", "https://evil.example/", "//evil.example/", "/\\evil.example", "javascript:alert(1)",
                  "\x00", "http://testserver@evil.example/", HUGE]


@pytest.mark.parametrize("next_url", SYNC_FORM_NEXT)
def test_the_sync_form_redirects_only_inside_the_portal(admin_html, policies, next_url):
    response = admin_html.post(f"/cluster/runtimes/{NAME}/sync/", {"next": next_url})

    assert response.status_code < 500, (response.status_code, response.content[:300])
    if response.status_code == 302:
        location = response["Location"]
        assert location.startswith("/") and not location.startswith(("//", "/\\")), location
