"""OpenAPI: the schema builds without warnings, documents every API path, and is served with its docs page."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

EXPECTED_RUNTIME_PATHS = {
    "/api/v1/runtimes/": {"get", "post"},
    "/api/v1/runtimes/{name}/": {"get", "put", "patch", "delete"},
    "/api/v1/runtimes/import/": {"post"},
    "/api/v1/runtimes/validate/": {"post"},
    "/api/v1/runtimes/{name}/export/": {"get"},
    "/api/v1/runtimes/export/": {"get"},
    "/api/v1/runtimes/{name}/revisions/": {"get"},
    "/api/v1/runtimes/{name}/revisions/{number}/": {"get"},
    "/api/v1/runtimes/{name}/diff/": {"get"},
    "/api/v1/runtimes/{name}/rollback/": {"post"},
}


@pytest.fixture(scope="module")
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def test_it_documents_every_runtime_path_and_method(schema):
    for path, methods in EXPECTED_RUNTIME_PATHS.items():
        assert path in schema["paths"], path
        assert methods <= set(schema["paths"][path]), path


def test_every_registered_api_route_is_in_the_schema(schema):
    from django.urls import get_resolver

    from trainer_portal import api_urls

    def walk(patterns, prefix=""):
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if hasattr(pattern, "url_patterns"):
                yield from walk(pattern.url_patterns, route)
            else:
                yield route

    assert get_resolver()  # the URLconf imports cleanly
    routes = {"/api/v1/" + route for route in walk(api_urls.urlpatterns)}
    documented = {path.replace("{", "<").replace("}", ">") for path in schema["paths"]}
    normalised = {
        route.replace("<str:", "<").replace("<int:", "<").replace("<slug:", "<").replace("<uuid:", "<")
        for route in routes
    }
    assert normalised <= documented


def test_write_operations_document_their_bodies_and_errors(schema):
    put = schema["paths"]["/api/v1/runtimes/{name}/"]["put"]
    assert {"application/json", "application/yaml"} <= set(put["requestBody"]["content"])
    assert {"200", "400", "403", "404", "409", "428"} <= set(put["responses"])
    imported = schema["paths"]["/api/v1/runtimes/import/"]["post"]
    assert "application/yaml" in imported["requestBody"]["content"]
    export = schema["paths"]["/api/v1/runtimes/{name}/export/"]["get"]
    assert "application/yaml" in export["responses"]["200"]["content"]


def test_the_list_is_documented_as_paginated(schema):
    response = schema["paths"]["/api/v1/runtimes/"]["get"]["responses"]["200"]
    reference = response["content"]["application/json"]["schema"]["$ref"]
    component = schema["components"]["schemas"][reference.rsplit("/", 1)[-1]]
    assert {"count", "next", "previous", "results"} <= set(component["properties"])


def test_the_served_schema_passes_openapi_spec_validator(db, client, bob):
    from openapi_spec_validator import OpenAPIV30SpecValidator

    client.force_login(bob)
    served = client.get("/api/schema/?format=json").json()
    errors = [f"{'/'.join(map(str, e.path))}: {e.message[:200]}" for e in OpenAPIV30SpecValidator(served).iter_errors()]

    assert errors == []


def test_no_schema_is_nullable_without_a_type(schema):
    # OpenAPI 3.0.3: `nullable` only means something next to `type`; generators read it inconsistently otherwise.
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            if node.get("nullable") and "type" not in node:
                found.append(where)
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}/{index}")

    walk(schema, "")
    assert found == []


def test_no_query_parameter_declares_a_blank_choice(schema):
    # `enum: ['', …]` with `minLength: 1` and `default: ''` is unsatisfiable; absent means "any" instead.
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                assert "" not in parameter["schema"].get("enum", []), (method, path, parameter["name"])
                blank_default = parameter["schema"].get("default") == ""
                assert not (blank_default and parameter["schema"].get("minLength")), (method, path, parameter["name"])


def test_the_schema_builds_without_warnings_or_errors():
    from django.core.management import call_command

    # --fail-on-warn turns drf-spectacular's warnings (unresolvable serializers, path parameters…) into errors.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")


@pytest.mark.parametrize("url", ["/api/schema/", "/api/docs/", "/api/redoc/"])
def test_the_schema_and_its_docs_pages_are_served_to_portal_users(db, client, bob, url):
    client.force_login(bob)
    response = client.get(url)

    assert response.status_code == 200


@pytest.mark.parametrize("url", ["/api/schema/", "/api/docs/", "/api/redoc/"])
def test_the_schema_and_its_docs_pages_check_who_is_asking(db, client, charlie, url):
    assert client.get(url).status_code in (401, 403)
    client.force_login(charlie)
    assert client.get(url).status_code == 403


def test_the_clusters_api_is_documented_with_its_errors(schema):
    listed = schema["paths"]["/api/v1/clusters/"]
    detail = schema["paths"]["/api/v1/clusters/{name}/"]
    assert {"get", "post"} <= set(listed) and {"get", "patch", "delete"} <= set(detail)
    assert {"201", "400", "401", "403", "409"} <= set(listed["post"]["responses"])
    assert {"200", "400", "401", "403", "404", "409"} <= set(detail["patch"]["responses"])
    assert {"204", "401", "403", "404", "409"} <= set(detail["delete"]["responses"])
    body = listed["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert {"name", "kubeconfig", "inCluster", "secretRef"} <= set(schema["components"]["schemas"][body]["properties"])
    shown = listed["get"]["responses"]["200"]["content"]["application/json"]["schema"]["items"]["$ref"]
    properties = schema["components"]["schemas"][shown.rsplit("/", 1)[-1]]["properties"]
    assert "kubeconfig" not in properties and {"health", "version", "isDefault"} <= set(properties)
    trainjob = schema["components"]["schemas"]["TrainJob"]["properties"]
    assert "cluster" in trainjob
    assert any(p["name"] == "cluster" for p in schema["paths"]["/api/v1/trainjobs/"]["get"]["parameters"])
