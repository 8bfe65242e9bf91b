"""Schema-driven fuzzing of the REST API: schemathesis generates requests from `/api/schema/` and checks each answer.

Checks: no server error, a status code the schema documents, and a body that matches the documented response
schema. Stateless (each operation on its own) and stateful (sequences joined by links inferred from the schema:
create a policy, then read, patch, roll back, preview and delete it). The requests go through the WSGI application
as a platform admin, against a sandbox cluster, with a fixed seed so CI replays the same examples.
"""

from __future__ import annotations

import pytest
import schemathesis
import yaml
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from schemathesis.checks import not_a_server_error
from schemathesis.core.deserialization import get_yaml_loader
from schemathesis.core.media_types import YAML_MEDIA_TYPES
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from runtimes.choices import RevisionSource
from runtimes.services import policies as services
from tests.runtimes.test_services import level1
from trainer_portal.tokens.services import token_issue

pytestmark = pytest.mark.django_db


@schemathesis.deserializer(*YAML_MEDIA_TYPES)  # all of them: the first registered YAML type would win
def _yaml_documents(ctx, response):
    """Return a YAML answer as a YAML reader sees it: a `---` stream declared as an array is the list of its
    documents (yaml.safe_load_all); any other YAML answer is its one document."""
    text = response.content.decode(response.encoding or "utf-8")
    declared = ctx.operation.definition.raw.get("responses", {}).get(str(response.status_code), {})
    schema = declared.get("content", {}).get("application/yaml", {}).get("schema", {})
    if schema.get("type") == "array":
        return list(yaml.load_all(text, get_yaml_loader()))
    return yaml.load(text, get_yaml_loader())

CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
SEED = 20261201
STATELESS = settings(
    max_examples=25,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
STATEFUL = settings(
    max_examples=40,
    stateful_step_count=6,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture
def in_process_wsgi():
    """Keep the test's database connection open across WSGI requests (as Django's test client does)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield WSGIHandler()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(alice, cluster, settings, in_process_wsgi):
    """The schema the portal serves, loaded as alice (platform admin), with a policy to act on."""
    settings.ALLOWED_HOSTS = ["*"]
    services.policy_create(manifest=level1("torch-gang"), author=alice, message="first", source=RevisionSource.API)
    token = token_issue(user=alice, name="schema fuzz").key
    schema = schemathesis.openapi.from_wsgi(
        "/api/schema/?format=json", in_process_wsgi, headers={"Authorization": f"Token {token}"}
    )
    schema.config.headers = {"Authorization": f"Token {token}"}
    return schema


def _cases() -> list:
    """Return (method, path, mode) for every operation and mode; negative only where a body or query can be wrong."""
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    cases = []
    for path, item in paths.items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            can_be_wrong = "requestBody" in operation or any(
                p["in"] == "query" for p in operation.get("parameters", [])
            )
            for mode in MODES:
                if (mode == "known" and "{name}" not in path) or (mode == "negative" and not can_be_wrong):
                    continue
                cases.append(pytest.param(method.upper(), path, mode, id=f"{method.upper()} {path} {mode}"))
    return cases


# positive: requests the schema allows; known: the same against the stored policy; negative: requests it forbids.
MODES = {
    "positive": {"generation_mode": GenerationMode.POSITIVE},
    "known": {"generation_mode": GenerationMode.POSITIVE, "path_parameters": {"name": "torch-gang"}},
    "negative": {"generation_mode": GenerationMode.NEGATIVE},
}


@pytest.mark.parametrize(("method", "path", "mode"), _cases())
def test_every_operation_answers_as_documented(api_schema, method, path, mode):
    token = api_schema.config.headers["Authorization"]
    operation = api_schema[path][method]
    options = MODES[mode]
    calls = []

    @given(case=operation.as_strategy(**options))
    @STATELESS
    @hypothesis_seed(SEED)
    def check(case):
        calls.append(case.call_and_validate(headers={"Authorization": token}, checks=CHECKS).status_code)

    check()
    assert calls, "schemathesis made no request"


def test_sequences_of_operations_answer_as_documented(api_schema):
    token = api_schema.config.headers["Authorization"]

    steps: list[str] = []

    # Revoking the token the run authenticates with, or disabling or demoting its account (a sequence may create a
    # second platform admin first), would end the run's credentials, not test an answer.
    without_revoke = api_schema.exclude(method="DELETE", path_regex="^/api/v1/auth/tokens/").exclude(
        method="PATCH", path_regex="^/api/v1/users/")

    class Workflow(without_revoke.as_state_machine()):
        def get_call_kwargs(self, case):
            steps.append(f"{case.method} {case.formatted_path}")
            return {"headers": {"Authorization": token}}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs or None)

    Workflow.run(settings=STATEFUL)

    assert len(steps) > 100, steps
