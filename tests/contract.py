"""A strict reading of the portal's OpenAPI document: does a real response use only what the schema declares?

schemathesis' response_schema_conformance follows JSON Schema, where an object accepts keys it does not list; a
typed client generated from the schema drops such keys. Here every object schema that lists ``properties`` and
says nothing about ``additionalProperties`` is read as closed (``additionalProperties: false``), ``$ref``s are
inlined, and OpenAPI 3.0's ``nullable`` becomes JSON Schema's ``null`` type. Objects the schema declares open on
purpose (``additionalProperties: true`` or a typed map) stay open.

Use `assert_conforms(schema, response, method=…, path=…)` with a Django test-client response.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import jsonschema
import yaml

from trainer_portal.api.dialect import camel_case


@cache
def api_schema() -> dict:
    """Return the portal's OpenAPI document as drf-spectacular builds it (what /api/schema/ serves)."""
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def strict(node: Any, components: dict, seen: tuple[str, ...] = ()) -> Any:
    """Return `node` (an OpenAPI 3.0 schema) as a closed JSON Schema: refs inlined, nullable as null, objects that
    list properties refusing other keys."""
    if isinstance(node, list):
        return [strict(item, components, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in seen:  # a recursive schema: accept anything below the second visit
            return {}
        return strict(components[name], components, (*seen, name))
    result = {key: strict(value, components, seen) for key, value in node.items()
              if key not in ("nullable", "readOnly", "writeOnly", "example", "examples", "deprecated")}
    if node.get("nullable"):
        if "type" in result and not any(k in result for k in ("allOf", "oneOf", "anyOf")):
            result["type"] = [result["type"], "null"]
            if "enum" in result and None not in result["enum"]:
                result["enum"] = [*result["enum"], None]
        else:
            result.pop("type", None)
            result = {"anyOf": [result, {"type": "null"}]}
        return result
    if "properties" in result and "additionalProperties" not in result:
        result["additionalProperties"] = False
    return result


def find_operation(schema: dict, method: str, path: str) -> tuple[str, dict]:
    """Return (path template, operation) of the documented operation serving `method path` (a fixed path such as
    /runtimes/export/ before a template such as /runtimes/{name}/, as Django routes them); AssertionError if none."""
    path, method = path.split("?", 1)[0], method.lower()
    if method in schema["paths"].get(path, {}):
        return path, schema["paths"][path][method]
    for template, item in schema["paths"].items():
        pattern = "^" + re.sub(r"\\\{[^}/]+\\\}", "[^/]+", re.escape(template)) + "$"
        if method in item and re.match(pattern, path):
            return template, item[method]
    raise AssertionError(f"{method.upper()} {path} is not in the schema")


def _legacy_aliases(data: Any) -> Any:
    """Return `data` without the deprecated snake_case twins of camelCase keys (what ``?dialect=camel`` drops)."""
    if isinstance(data, list):
        return [_legacy_aliases(item) for item in data]
    if not isinstance(data, dict):
        return data
    return {
        key: _legacy_aliases(value)
        for key, value in data.items()
        if not (isinstance(key, str) and "_" in key and camel_case(key) != key and camel_case(key) in data)
    }


def assert_conforms(schema: dict, response, *, method: str, path: str) -> Any:
    """Assert `response` (a Django test response) is declared by the schema: its status, its media type and, for
    JSON, every key of its body (strictly). Returns the parsed body (JSON) or the text.

    Where the operation declares ``?dialect`` and the request did not ask for ``camel``, the deprecated snake_case
    twins of camelCase keys are allowed, as that parameter's description says.
    """
    template, operation = find_operation(schema, method, path)
    status = str(response.status_code)
    assert status in operation["responses"], (
        f"{method.upper()} {template} answered {status}, which it does not declare: {response.content[:300]!r}"
    )
    declared = operation["responses"][status]
    content = declared.get("content")
    if not content:
        assert not response.content, f"{method.upper()} {template} {status} declares no body but sent one"
        return None
    media = response["Content-Type"].split(";")[0].strip()
    assert media in content, f"{method.upper()} {template} {status} sent {media}; declared {sorted(content)}"
    if media == "application/yaml":
        # A YAML answer declared as an array is a `---` stream (its documents); otherwise one document.
        text = response.content.decode()
        declared_schema = content[media].get("schema", {})
        parsed = (list(yaml.safe_load_all(text)) if declared_schema.get("type") == "array" else yaml.safe_load(text))
        _validate(strict(declared_schema, schema["components"]["schemas"]), parsed, f"{method.upper()} {template}")
        return text
    if media != "application/json":
        return response.content.decode()
    body = json.loads(response.content)
    checked = body
    dialect = any(p["name"] == "dialect" for p in operation.get("parameters", []))
    if dialect and "dialect=camel" not in path:
        checked = _legacy_aliases(body)
    closed = strict(content[media]["schema"], schema["components"]["schemas"])
    _validate(closed, checked, f"{method.upper()} {template} {status}")
    return body


def _validate(closed: dict, value: Any, where: str) -> None:
    errors = sorted(jsonschema.Draft202012Validator(closed).iter_errors(value), key=lambda e: list(e.path))
    assert not errors, f"{where}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path)) or '(body)'}: {e.message[:200]}" for e in errors[:10]
    )
