"""One key casing across the API: camelCase, with the first release's snake_case spellings kept for one release.

The cluster status and the bulk-sync progress were the only bodies in snake_case. They now answer in camelCase
and, until the next release, repeat every renamed key under its old spelling, so clients written against the
first release keep reading the same keys. ``?dialect=camel`` drops the old spellings already (the body of the
next release).
"""

from __future__ import annotations

from typing import Any

# The query parameter and value that ask for the next release's body (camelCase keys only).
DIALECT_PARAM = "dialect"
CAMEL_ONLY = "camel"


def camel_case(key: str) -> str:
    """Return `key` in camelCase: "created_at" → "createdAt", "elapsed_ms" → "elapsedMs"; other keys unchanged."""
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_body(data: Any, *, legacy: bool = True) -> Any:
    """Return `data` with every mapping key in camelCase (lists and nested mappings included).

    With `legacy`, a renamed key also keeps its snake_case spelling next to the new one (same value). Keys that
    are already camelCase pass through; values are never touched.
    """
    if isinstance(data, list):
        return [camel_body(item, legacy=legacy) for item in data]
    if not isinstance(data, dict):
        return data
    result: dict[str, Any] = {}
    for key, value in data.items():
        converted = camel_body(value, legacy=legacy)
        new_key = camel_case(key) if isinstance(key, str) else key
        result[new_key] = converted
        if legacy and new_key != key:
            result[key] = converted
    return result


def wants_legacy_keys(request: Any) -> bool:
    """Return False when the request asked for camelCase keys only (``?dialect=camel``), else True."""
    params = getattr(request, "query_params", None) or getattr(request, "GET", {})
    return params.get(DIALECT_PARAM, "") != CAMEL_ONLY
