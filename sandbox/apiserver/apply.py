"""Server-side apply: field sets, managedFields bookkeeping, conflict detection, merge and pruning.

A field set is a Python set of paths; a path is a tuple of structured-merge-diff path elements:
`f:<field>` (map/struct field), `k:{"name":"x"}` (list-map item), `v:<json>` (set item). An item path on its
own means the item itself is owned (`".": {}` in fieldsV1). List semantics come from `list_type_of(dotted_path)`,
which reads `x-kubernetes-list-type`/`-list-map-keys` (custom resources) or the built-in table.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

Path = tuple[str, ...]
FieldSet = set[Path]
ListTypeOf = Callable[[str], tuple[str, tuple[str, ...]]]
_MISSING = object()

# Fields the apiserver never records ownership of.
_IGNORED_META = frozenset({"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                           "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"})


def now() -> str:
    """Returns the current UTC time in RFC 3339 (seconds), the format of metav1.Time."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _item_key(item: dict[str, Any], keys: tuple[str, ...]) -> str:
    return "k:" + json.dumps({k: item.get(k) for k in keys if k in item}, separators=(",", ":"), sort_keys=True)


def fieldset(obj: Any, list_type_of: ListTypeOf, scope: str = "main") -> FieldSet:
    """Returns the set of leaf paths an object sets, skipping identity metadata.

    scope "main" leaves out `status`, scope "status" keeps only `status`, scope "all" keeps both.
    """
    out: FieldSet = set()
    if not isinstance(obj, dict):
        return out
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if scope == "main" and key == "status":
            continue
        if scope == "status" and key != "status":
            continue
        if key == "metadata" and isinstance(value, dict):
            meta = {k: v for k, v in value.items() if k not in _IGNORED_META}
            if meta:
                _walk(meta, ("f:metadata",), "metadata", list_type_of, out)
            continue
        _walk(value, (f"f:{key}",), key, list_type_of, out)
    return out


def _walk(value: Any, path: Path, dotted: str, list_type_of: ListTypeOf, out: FieldSet) -> None:
    if isinstance(value, dict) and not path[-1].startswith("k:"):
        if not value:
            out.add(path)
        for key, sub in value.items():
            _walk(sub, (*path, f"f:{key}"), f"{dotted}.{key}", list_type_of, out)
        return
    if isinstance(value, dict):  # list-map item: the item itself plus its fields
        out.add(path)
        for key, sub in value.items():
            _walk(sub, (*path, f"f:{key}"), f"{dotted}.{key}", list_type_of, out)
        return
    if isinstance(value, list):
        kind, keys = list_type_of(dotted)
        if kind == "map" and keys and all(isinstance(v, dict) for v in value):
            for item in value:
                _walk(item, (*path, _item_key(item, keys)), dotted + "[]", list_type_of, out)
            return
        if kind == "set" and all(not isinstance(v, dict | list) for v in value):
            if not value:
                out.add(path)
            for item in value:
                out.add((*path, "v:" + json.dumps(item, separators=(",", ":"))))
            return
    out.add(path)


def to_fields_v1(fields: Iterable[Path]) -> dict[str, Any]:
    """Returns the nested fieldsV1 JSON form of a field set."""
    root: dict[str, Any] = {}
    paths = sorted(fields, key=len)
    for path in paths:
        node = root
        for element in path[:-1]:
            node = node.setdefault(element, {})
        node.setdefault(path[-1], {})
    # A path that is both owned and a prefix of others gets ".": {} (the item/map itself is owned).
    owned = set(paths)
    for path in owned:
        node = root
        for element in path:
            node = node[element]
        if node and "." not in node:
            node["."] = {}
    return root


def from_fields_v1(fields: dict[str, Any], prefix: Path = ()) -> FieldSet:
    """Returns the field set encoded by a fieldsV1 dict."""
    out: FieldSet = set()
    for key, sub in (fields or {}).items():
        if key == ".":
            out.add(prefix)
            continue
        path = (*prefix, key)
        if not sub:
            out.add(path)
        else:
            out |= from_fields_v1(sub, path)
    return out


def value_at(obj: Any, path: Path) -> Any:
    """Returns the value at a field path, or the module's _MISSING sentinel."""
    node = obj
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            if not isinstance(node, dict) or rest not in node:
                return _MISSING
            node = node[rest]
        elif kind == "k":
            want = json.loads(rest)
            if not isinstance(node, list):
                return _MISSING
            node = next((v for v in node if isinstance(v, dict) and all(v.get(k) == x for k, x in want.items())),
                        _MISSING)
            if node is _MISSING:
                return _MISSING
        elif kind == "v":
            want = json.loads(rest)
            if not isinstance(node, list) or want not in node:
                return _MISSING
            node = want
    return node


def remove_path(obj: Any, path: Path) -> None:
    """Removes the field, list-map item or set value at `path` from obj (in place); missing paths are ignored."""
    parent = value_at(obj, path[:-1]) if len(path) > 1 else obj
    if parent is _MISSING:
        return
    kind, _, rest = path[-1].partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(rest, None)
    elif kind == "k" and isinstance(parent, list):
        want = json.loads(rest)
        parent[:] = [v for v in parent if not (isinstance(v, dict) and all(v.get(k) == x for k, x in want.items()))]
    elif kind == "v" and isinstance(parent, list):
        want = json.loads(rest)
        parent[:] = [v for v in parent if v != want]


def path_string(path: Path) -> str:
    """Returns the apiserver's human form of a path, e.g. `.spec.containers[name="a"].image`."""
    out = []
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            out.append("." + rest)
        elif kind == "k":
            out.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(rest).items()) + "]")
        else:
            out.append(f"[={rest}]")
    return "".join(out)


def merge_applied(live: Any, config: Any, list_type_of: ListTypeOf, dotted: str = "") -> Any:
    """Returns live with the applied configuration merged in (maps recursively; lists per their list type)."""
    if isinstance(config, dict) and isinstance(live, dict):
        result = dict(live)
        for key, value in config.items():
            sub = f"{dotted}.{key}" if dotted else key
            result[key] = merge_applied(live.get(key), value, list_type_of, sub)
        return result
    if isinstance(config, list) and isinstance(live, list):
        kind, keys = list_type_of(dotted)
        if kind == "map" and keys and all(isinstance(v, dict) for v in config + live):
            result = [copy.deepcopy(v) for v in live]
            for item in config:
                ident = _item_key(item, keys)
                index = next((i for i, v in enumerate(result) if _item_key(v, keys) == ident), None)
                if index is None:
                    result.append(copy.deepcopy(item))
                else:
                    result[index] = merge_applied(result[index], item, list_type_of, dotted + "[]")
            return result
        if kind == "set":
            return live + [v for v in config if v not in live]
    return copy.deepcopy(config)


class Managers:
    """The managedFields of one object as {(manager, operation, subresource): (apiVersion, time, FieldSet)}."""

    def __init__(self, managed_fields: list[dict[str, Any]] | None) -> None:
        self.entries: dict[tuple[str, str, str], list[Any]] = {}
        for item in managed_fields or ():
            ident = (item.get("manager", ""), item.get("operation", "Update"), item.get("subresource", ""))
            self.entries[ident] = [item.get("apiVersion", ""), item.get("time", now()),
                                   from_fields_v1(item.get("fieldsV1") or {})]

    def owners(self, path: Path, exclude: tuple[str, str, str] | None = None) -> list[tuple[str, str, str]]:
        """Returns managers (other than `exclude`) that own `path` or anything below it."""
        out = []
        n = len(path)
        for ident, (_v, _t, fields) in self.entries.items():
            if ident == exclude:
                continue
            if path in fields or any(len(p) > n and p[:n] == path for p in fields):
                out.append(ident)
        return out

    def set(self, ident: tuple[str, str, str], api_version: str, fields: FieldSet) -> None:
        self.entries[ident] = [api_version, now(), set(fields)]

    def take(self, ident: tuple[str, str, str], api_version: str, fields: FieldSet) -> None:
        """Gives `fields` to ident (adding to what it owns) and removes them from every other manager."""
        for other, entry in self.entries.items():
            if other != ident:
                entry[2] -= fields
        current = self.entries.get(ident)
        combined = (current[2] if current else set()) | fields
        self.entries[ident] = [api_version, now(), combined]

    def forget(self, fields: FieldSet) -> None:
        """Removes fields (and everything below them) that no longer exist from every manager."""
        if not fields:
            return
        for entry in self.entries.values():
            entry[2] = {p for p in entry[2] if not any(p[:len(f)] == f for f in fields)}

    def render(self) -> list[dict[str, Any]]:
        """Returns the managedFields list (managers owning nothing are dropped)."""
        out = []
        for (manager, operation, subresource), (api_version, time, fields) in self.entries.items():
            if not fields:
                continue
            item: dict[str, Any] = {"manager": manager, "operation": operation, "apiVersion": api_version,
                                    "time": time, "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(fields)}
            if subresource:
                item["subresource"] = subresource
            out.append(item)
        return out


class ApplyConflict(Exception):
    """Raised when an apply changes fields another manager owns. `conflicts` is [(manager ident, path)]."""

    def __init__(self, conflicts: list[tuple[tuple[str, str, str], Path]], api_versions: dict[Any, str]) -> None:
        self.conflicts = conflicts
        self.api_versions = api_versions
        super().__init__(self.message())

    def message(self) -> str:
        n = len(self.conflicts)
        by_manager: dict[str, list[str]] = {}
        for ident, path in self.conflicts:
            label = f'"{ident[0]}" using {self.api_versions.get(ident, "")}'
            by_manager.setdefault(label, []).append(path_string(path))
        if n == 1:
            (label, paths), = by_manager.items()
            return f"Apply failed with 1 conflict: conflict with {label}: {paths[0]}"
        parts = [f"conflicts with {label}:\n" + "\n".join(f"- {p}" for p in paths)
                 for label, paths in by_manager.items()]
        return f"Apply failed with {n} conflicts: " + "\n".join(parts)

    def causes(self) -> list[dict[str, str]]:
        return [{"reason": "FieldManagerConflict",
                 "message": f'conflict with "{ident[0]}" using {self.api_versions.get(ident, "")}',
                 "field": path_string(path)} for ident, path in self.conflicts]


def server_side_apply(live: dict[str, Any] | None, config: dict[str, Any], manager: str, api_version: str,
                      list_type_of: ListTypeOf, force: bool, subresource: str = "") -> dict[str, Any]:
    """Returns the new object after `manager` applies `config` to `live` (None = create).

    The result carries updated `metadata.managedFields`. Raises ApplyConflict when another manager owns a field
    the config sets to a different value and `force` is false.
    """
    scope = "status" if subresource == "status" else "main"
    ident = (manager, "Apply", subresource)
    applied = fieldset(config, list_type_of, scope)
    if live is None:
        result = copy.deepcopy(config)
        managers = Managers(None)
        managers.set(ident, api_version, applied)
        result.setdefault("metadata", {})["managedFields"] = managers.render()
        return result

    managers = Managers(live.get("metadata", {}).get("managedFields"))
    conflicts: list[tuple[tuple[str, str, str], Path]] = []
    for path in sorted(applied):
        if path[-1].startswith(("k:", "v:")):
            continue
        for other, (_v, _t, fields) in managers.entries.items():
            if other == ident or path not in fields:
                continue
            if value_at(live, path) != value_at(config, path):
                conflicts.append((other, path))
    if conflicts and not force:
        raise ApplyConflict(conflicts, {k: v[0] for k, v in managers.entries.items()})
    for other, path in conflicts:
        managers.entries[other][2].discard(path)

    merged = merge_applied(live, {k: v for k, v in config.items() if k != "metadata"}, list_type_of)
    meta_config = {k: v for k, v in (config.get("metadata") or {}).items() if k not in _IGNORED_META}
    merged["metadata"] = merge_applied(live.get("metadata") or {}, meta_config, list_type_of, "metadata")

    previous = managers.entries.get(ident, [None, None, set()])[2]
    managers.set(ident, api_version, applied)
    # Prune: fields this manager applied before, does not apply now, and nobody else owns (parents first, so a
    # removed item takes its fields along; an item kept for another manager still loses this manager's fields).
    removed: list[Path] = []
    for path in sorted(previous - applied, key=len):
        if any(path[:len(p)] == p for p in removed):
            continue
        if not managers.owners(path, exclude=ident) and not any(a[:len(path)] == path for a in applied):
            remove_path(merged, path)
            removed.append(path)
    merged["metadata"]["managedFields"] = managers.render()
    return merged


def track_update(old: dict[str, Any] | None, new: dict[str, Any], manager: str, api_version: str,
                 list_type_of: ListTypeOf, subresource: str = "") -> None:
    """Records an Update (create/replace/patch) by `manager` in new.metadata.managedFields (in place).

    The manager takes the fields it changed or added; fields it removed are dropped from every manager.
    """
    scope = "status" if subresource == "status" else "all"
    managers = Managers((old or {}).get("metadata", {}).get("managedFields"))
    new_fields = fieldset(new, list_type_of, scope)
    if old is None:
        changed = new_fields
        removed: FieldSet = set()
    else:
        old_fields = fieldset(old, list_type_of, scope)
        changed = {p for p in new_fields if p not in old_fields or value_at(old, p) != value_at(new, p)}
        removed = old_fields - new_fields
    managers.forget(removed)
    if changed:
        managers.take((manager, "Update", subresource), api_version, changed)
    new.setdefault("metadata", {})["managedFields"] = managers.render()
