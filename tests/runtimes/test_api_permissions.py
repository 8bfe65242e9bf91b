"""REST API permissions: alice (platform admin) writes, bob (viewer) reads, charlie (no role) and anonymous see
nothing. Session and token authentication both work."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runtimes.domain.manifest import dump_yaml
from runtimes.models import RuntimePolicy
from runtimes.services import policies as policy_services
from tests.runtimes.test_services import fast_password_hashing, level1, runtime  # noqa: F401 (autouse fixture)

# (method, path, body) — each a read or a write; writes succeed for alice.
READS = [
    ("get", "/api/v1/runtimes/", None),
    ("get", "/api/v1/runtimes/torch-gang/", None),
    ("get", "/api/v1/runtimes/torch-gang/export/", None),
    ("get", "/api/v1/runtimes/torch-gang/revisions/", None),
    ("get", "/api/v1/runtimes/torch-gang/revisions/1/", None),
    ("get", "/api/v1/runtimes/torch-gang/diff/?from=1&to=2", None),
]
WRITES = [
    ("post", "/api/v1/runtimes/", {"manifest": runtime("another")}),
    ("put", "/api/v1/runtimes/torch-gang/", {"manifest": runtime(num_nodes=5), "version": 2}),
    ("patch", "/api/v1/runtimes/torch-gang/", {"manifest": {"spec": {"mlPolicy": {"numNodes": 6}}}, "version": 2}),
    ("delete", "/api/v1/runtimes/torch-gang/", {"version": 2}),
    ("post", "/api/v1/runtimes/import/", {"text": dump_yaml(runtime("imported"))}),
    ("post", "/api/v1/runtimes/torch-gang/rollback/", {"revision": 1, "version": 2}),
]
VALIDATE = ("post", "/api/v1/runtimes/validate/", {"manifest": level1()})
ENDPOINTS = READS + WRITES + [VALIDATE]
IDS = [f"{method}:{path}" for method, path, _ in ENDPOINTS]


@pytest.fixture
def policy(alice):
    policy_services.policy_create(manifest=runtime(), author=alice, source="api")
    return policy_services.policy_update(
        name="torch-gang", manifest=level1(), expected_version=1, author=alice, source="api"
    )


def call(client: APIClient, method: str, path: str, body):
    return getattr(client, method)(path, body, format="json") if body is not None else getattr(client, method)(path)


def expected_for(persona: str, endpoint) -> set[int]:
    if persona in ("charlie", "anonymous"):
        return {401, 403}
    if endpoint in WRITES and persona == "bob":
        return {403}
    return {200, 201, 204}


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=IDS)
@pytest.mark.parametrize("persona", ["alice", "bob", "charlie", "anonymous"])
def test_the_permission_matrix_with_session_auth(db, policy, request, persona, endpoint):
    client = APIClient()
    if persona != "anonymous":
        client.force_login(request.getfixturevalue(persona))
    versions_before = sorted(RuntimePolicy.objects.values_list("name", "version"))

    response = call(client, *endpoint)

    assert response.status_code in expected_for(persona, endpoint), response.content
    if response.status_code in (401, 403):
        assert response.json()["error"]["message"]
        assert sorted(RuntimePolicy.objects.values_list("name", "version")) == versions_before


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=IDS)
@pytest.mark.parametrize("persona", ["alice", "bob", "charlie"])
def test_the_permission_matrix_with_token_auth(db, policy, request, persona, endpoint):
    token = Token.objects.create(user=request.getfixturevalue(persona))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    response = call(client, *endpoint)

    assert response.status_code in expected_for(persona, endpoint), response.content


def test_a_bad_token_is_refused(db, policy):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")

    response = client.get("/api/v1/runtimes/")

    assert response.status_code in (401, 403)
    assert response.json()["error"]["code"] == "authentication_failed"


def test_viewers_get_a_clear_message_on_writes(db, policy, bob):
    client = APIClient()
    client.force_login(bob)

    response = client.post("/api/v1/runtimes/", {"manifest": runtime("x")}, format="json")

    assert response.status_code == 403
    assert "read-only" in response.json()["error"]["message"]


def test_a_superuser_without_groups_may_write(db, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="root-password-1")
    client = APIClient()
    client.force_login(root)

    response = client.post("/api/v1/runtimes/", {"manifest": runtime()}, format="json")

    assert response.status_code == 201
    assert response.json()["createdBy"] == "root"


def test_session_writes_need_a_csrf_token(db, alice):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(alice)

    response = client.post("/api/v1/runtimes/", {"manifest": runtime()}, format="json")

    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]["message"]
    assert not RuntimePolicy.objects.exists()
