"""JSON merge patch (RFC 7386), JSON patch (RFC 6902, by the `jsonpatch` library) and strategic merge patch for
built-in kinds.

Every function returns a new object and leaves its inputs untouched; bad patches raise `PatchError`
(the server answers 422 for failed JSON patch tests/paths and 400 for malformed bodies, like the apiserver).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jsonpatch
import jsonpointer

ListTypeOf = Callable[[str], tuple[str, tuple[str, ...]]]


class PatchError(ValueError):
    """A patch that cannot be applied; `code` is the HTTP status to answer with."""

    def __init__(self, message: str, code: int = 422) -> None:
        super().__init__(message)
        self.code = code


def merge_patch(target: Any, patch: Any) -> Any:
    """Returns target with an RFC 7386 JSON merge patch applied (null deletes a key; lists are replaced)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


_OPERATIONS = ("add", "remove", "replace", "move", "copy", "test")


def json_patch(target: Any, operations: Any) -> Any:
    """Returns target with an RFC 6902 JSON patch applied, by the `jsonpatch` library.

    Raises PatchError: 400 for a malformed patch (not a list, an operation without `op`/`path`, an unknown `op`),
    422 for an operation that does not apply (a missing path, a failed `test`), worded like kube-apiserver's
    (evanphx/json-patch) messages.
    """
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations", 400)
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid JSON patch operation {op!r}: needs 'op' and 'path'", 400)
        kind, path = op["op"], op["path"]
        if kind not in _OPERATIONS:
            raise PatchError(f"Unexpected kind: {kind}", 400)
        # One operation at a time, so a failure names the path that failed.
        try:
            doc = jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
        except jsonpatch.JsonPatchTestFailed:
            raise PatchError(f"testing value {path} failed") from None
        except jsonpatch.InvalidJsonPatch as error:
            raise PatchError(f"invalid JSON patch operation {op!r}: {error}", 400) from None
        except (jsonpatch.JsonPatchConflict, jsonpointer.JsonPointerException, KeyError, IndexError, TypeError):
            raise PatchError(f"{kind} operation does not apply: doc is missing path: {path!r}: missing value") \
                from None
    return doc


def strategic_merge_patch(target: Any, patch: Any, list_type_of: ListTypeOf, path: str = "") -> Any:
    """Returns target with a strategic merge patch applied.

    Lists whose `list_type_of(path)` is ("map", keys) merge items by the first key (patchMergeKey); "set"
    lists of scalars are unioned; other lists are replaced. Directives: `$patch: delete|replace|merge` in maps and
    list items, `$deleteFromPrimitiveList/<field>`; `$setElementOrder/...` and `$retainKeys` are accepted and
    ignored.
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        sub_path = f"{path}.{key}" if path else key
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, list_type_of, sub_path)
        elif isinstance(value, dict):
            merged = strategic_merge_patch(result.get(key), value, list_type_of, sub_path)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = value
    return result


def _merge_list(current: Any, patch: list[Any], list_type_of: ListTypeOf, path: str) -> list[Any]:
    kind, keys = list_type_of(path)
    current = current if isinstance(current, list) else []
    if kind == "set" and all(not isinstance(v, dict | list) for v in patch):
        return current + [v for v in patch if v not in current]
    if kind != "map" or not keys:
        if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
            return [v for v in patch if not (isinstance(v, dict) and v.get("$patch"))]
        return copy.deepcopy(patch)
    merge_key = keys[0]
    result = [copy.deepcopy(v) for v in current]
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"{path}: expected objects with merge key {merge_key!r} in a strategic merge list", 400)
        if item.get("$patch") == "replace":
            return [v for v in patch if not (isinstance(v, dict) and v.get("$patch"))]
        if merge_key not in item:
            raise PatchError(f"{path}: map list item {item!r} does not contain the merge key {merge_key!r}", 400)
        index = next((i for i, v in enumerate(result) if isinstance(v, dict) and v.get(merge_key) == item[merge_key]),
                     None)
        if item.get("$patch") == "delete":
            if index is not None:
                result.pop(index)
            continue
        if index is None:
            result.append(strategic_merge_patch({}, item, list_type_of, path + "[]"))
        else:
            result[index] = strategic_merge_patch(result[index], item, list_type_of, path + "[]")
    return result
