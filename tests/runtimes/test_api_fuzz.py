"""REST API robustness: arbitrary JSON in a manifest, or arbitrary text to import, never produces a 500.

Every answer is a success or a structured error (`{"error": {code, message, fields}}`).
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from tests.runtimes.test_services import fast_password_hashing, level1  # noqa: F401 (autouse fixture)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
# Places in a valid manifest where a random value replaces what is there.
PATHS = [
    ("apiVersion",),
    ("kind",),
    ("metadata",),
    ("metadata", "name"),
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("spec",),
    ("spec", "mlPolicy"),
    ("spec", "mlPolicy", "numNodes"),
    ("spec", "mlPolicy", "torch"),
    ("spec", "podGroupPolicy"),
    ("spec", "scheduling"),
    ("spec", "scheduling", "schedulingPolicy"),
    ("spec", "scheduling", "schedulingConstraints"),
    ("spec", "scheduling", "replicatedJobs"),
    ("spec", "template"),
    ("spec", "template", "spec", "replicatedJobs"),
]
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def mutate(path: tuple[str, ...], value) -> dict:
    manifest = copy.deepcopy(level1())
    node = manifest
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node
    if isinstance(node, dict):
        node[path[-1]] = value
    return manifest


def assert_handled(response) -> None:
    assert response.status_code < 500, response.content
    if response.status_code >= 400:
        error = response.json()["error"]
        assert error["message"] and isinstance(error["fields"], list)


@pytest.fixture
def api(alice) -> APIClient:
    client = APIClient()
    client.force_authenticate(alice)
    return client


@FUZZ
@given(path=st.sampled_from(PATHS), value=JSON_VALUES)
def test_create_and_validate_survive_any_json(db, api, path, value):
    manifest = mutate(path, value)

    assert_handled(api.post("/api/v1/runtimes/validate/", {"manifest": manifest}, format="json"))
    response = api.post("/api/v1/runtimes/", {"manifest": manifest}, format="json")
    assert_handled(response)
    if response.status_code == 201:
        # Whatever was accepted reads back and exports.
        assert api.get("/api/v1/runtimes/torch-gang/export/").status_code == 200
        assert api.delete("/api/v1/runtimes/torch-gang/", HTTP_IF_MATCH='"1"').status_code == 204


@pytest.fixture
def existing(alice):
    from runtimes.services import policies as policy_services

    return policy_services.policy_create(manifest=level1(), author=alice, source="api")


@FUZZ
@given(body=JSON_VALUES)
def test_every_write_body_survives_any_json(db, api, existing, body):
    raw = json.dumps(body)
    for method, url in [
        ("post", "/api/v1/runtimes/"),
        ("post", "/api/v1/runtimes/import/"),
        ("post", "/api/v1/runtimes/validate/"),
        ("put", "/api/v1/runtimes/torch-gang/"),
        ("patch", "/api/v1/runtimes/torch-gang/"),
        ("post", "/api/v1/runtimes/torch-gang/rollback/"),
    ]:
        assert_handled(getattr(api, method)(url, data=raw, content_type="application/json"))


@FUZZ
@given(text=st.text(max_size=300))
def test_import_survives_any_text(db, api, text):
    response = api.post("/api/v1/runtimes/import/", data=text.encode("utf-8"), content_type="application/yaml")

    assert_handled(response)
