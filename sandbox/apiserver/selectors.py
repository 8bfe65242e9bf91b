"""Label selectors (`=`, `==`, `!=`, `in`, `notin`, exists, `!exists`) and field selectors (`=`, `==`, `!=`).

`parse_label_selector` and `parse_field_selector` raise `SelectorError` (→ 400 BadRequest) on bad syntax;
the returned callables take an object dict and return bool.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

Matcher = Callable[[dict[str, Any]], bool]

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9./_-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_CMP_RE = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|!=|=)\s*([A-Za-z0-9._-]*)\s*$")


class SelectorError(ValueError):
    """A selector string that does not parse."""


def _split_top_level(text: str) -> list[str]:
    """Returns the comma-separated requirements of a selector, ignoring commas inside `in (...)` sets."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p for p in (p.strip() for p in parts) if p]


def parse_label_selector(text: str | None) -> Matcher | None:
    """Returns a predicate over objects for a label selector string, or None for an empty selector.

    Raises SelectorError for syntax the apiserver would reject.
    """
    if not text or not text.strip():
        return None
    checks: list[Callable[[dict[str, str]], bool]] = []
    for req in _split_top_level(text):
        m = _CMP_RE.match(req)
        if m:
            key, op, value = m.groups()
            if op == "!=":
                checks.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                checks.append(lambda labels, k=key, v=value: labels.get(k) == v)
            continue
        m = _SET_RE.match(req)
        if not m:
            raise SelectorError(f"unable to parse requirement: {req!r}")
        negate, key, op, values = m.groups()
        if op:
            if negate:
                raise SelectorError(f"unable to parse requirement: {req!r}")
            members = frozenset(v.strip() for v in values.split(",") if v.strip())
            if op == "in":
                checks.append(lambda labels, k=key, s=members: labels.get(k) in s)
            else:
                checks.append(lambda labels, k=key, s=members: labels.get(k) not in s)
        elif negate:
            checks.append(lambda labels, k=key: k not in labels)
        else:
            checks.append(lambda labels, k=key: k in labels)

    def match(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(check(labels) for check in checks)

    return match


# Field labels that are not a plain path of the object (kube-apiserver's per-kind `ToSelectableFields`).
_COMPUTED_FIELDS: dict[str, Callable[[dict[str, Any]], Any]] = {
    # Event: the source component, or the reporting controller of events.k8s.io-style events.
    "source": lambda obj: ((obj.get("source") or {}).get("component") if isinstance(obj.get("source"), dict)
                           else None) or obj.get("reportingComponent"),
}


def _field_value(obj: dict[str, Any], path: str) -> str:
    """Returns the field selector string form of a dotted path (missing → "", bools lower-case)."""
    if path in _COMPUTED_FIELDS:
        value = _COMPUTED_FIELDS[path](obj)
        return "" if value is None else str(value)
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, dict):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def parse_field_selector(text: str | None, allowed: Iterable[str]) -> Matcher | None:
    """Returns a predicate for a field selector, or None for an empty one.

    Raises SelectorError for bad syntax or a field the resource does not support (like the apiserver's
    `field label not supported`).
    """
    if not text or not text.strip():
        return None
    allowed = set(allowed)
    checks: list[tuple[str, bool, str]] = []
    for req in _split_top_level(text):
        m = _CMP_RE.match(req) or re.match(r"^\s*([A-Za-z0-9./_-]+)\s*(==|!=|=)\s*(.*?)\s*$", req)
        if not m:
            raise SelectorError(f"invalid selector: {req!r}; expected field=value or field!=value")
        path, op, value = m.groups()
        if path not in allowed:
            raise SelectorError(f'field label not supported: {path}')
        checks.append((path, op == "!=", value))

    def match(obj: dict[str, Any]) -> bool:
        return all((_field_value(obj, path) != value) if negate else (_field_value(obj, path) == value)
                   for path, negate, value in checks)

    return match
