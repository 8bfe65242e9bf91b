"""JSON merge patch (RFC 7396) over plain JSON values, without recursion.

Request bodies can nest as deeply as the JSON parser allows, so neither the merge nor the copies it makes may
use the Python stack: both walk an explicit work list.
"""

from __future__ import annotations

from typing import Any


def json_copy(value: Any) -> Any:
    """Return a deep copy of JSON value ``value`` (dicts and lists copied, scalars shared)."""
    if not isinstance(value, dict | list):
        return value
    root: Any = {} if isinstance(value, dict) else []
    work = [(value, root)]
    while work:
        source, target = work.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, dict | list):
                copied: Any = {} if isinstance(item, dict) else []
                work.append((item, copied))
            else:
                copied = item
            if isinstance(target, dict):
                target[key] = copied
            else:
                target.append(copied)
    return root


def merge_patch(target: Any, patch: Any) -> Any:
    """Return ``target`` with JSON merge patch ``patch`` applied (RFC 7396); neither argument is modified.

    A patch that is not an object replaces the target; ``null`` members delete keys; object members merge.
    """
    if not isinstance(patch, dict):
        return json_copy(patch)
    result = json_copy(target) if isinstance(target, dict) else {}
    work = [(result, patch)]
    while work:
        node, changes = work.pop()
        for key, value in changes.items():
            if value is None:
                node.pop(key, None)
            elif isinstance(value, dict):
                child = node.get(key)
                if not isinstance(child, dict):
                    child = {}
                    node[key] = child
                work.append((child, value))
            else:
                node[key] = json_copy(value)
    return result
