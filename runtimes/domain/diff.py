"""Differences between two manifests: structural (field by field) and textual (unified diff of the YAML).

Lists that Kubernetes treats as maps keyed by a field (replicatedJobs, containers, env, dependsOn, …) are compared
by that key, so a change inside one item is reported at `…replicatedJobs[name=node].replicas` rather than as a
shifted index, and reordering them is not a change, except for replicatedJobs, whose order JobSet acts on.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Literal

from .manifest import dump_yaml

# Field name → key field of list-maps (Kubernetes `listType: map`).
LIST_MAP_KEYS: dict[str, str] = {
    "replicatedJobs": "name",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "dependsOn": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "resourceClaims": "name",
    "targets": "jobName",
    "imagePullSecrets": "name",
}

# List-maps whose order still means something: JobSet starts ReplicatedJobs in list order (startupPolicy InOrder)
# and expects dependencies listed first. Moving one is reported as a change of the list, with the names in order.
ORDERED_LIST_MAPS = frozenset({"replicatedJobs"})


@dataclass(frozen=True)
class Change:
    """One difference: the field `path`, whether it was added, removed or changed, and the old/new values."""

    path: str
    op: Literal["added", "removed", "changed"]
    old: Any
    new: Any

    def as_dict(self) -> dict[str, Any]:
        """Return the change as a JSON-ready dict."""
        return {"path": self.path, "op": self.op, "old": self.old, "new": self.new}


def _join(path: str, key: str) -> str:
    simple = key.replace("-", "").replace("_", "").isalnum()
    if simple:
        return f"{path}.{key}" if path else key
    return f'{path}["{key}"]'


def _scalar_equal(a: Any, b: Any) -> bool:
    # bool is an int in Python, but `true` and `1` are different manifest values.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def _keyed(items: list, key: str) -> dict[Any, Any] | None:
    """Return items indexed by `key` when every item is a mapping with a unique hashable key; else None."""
    result: dict[Any, Any] = {}
    for item in items:
        if not isinstance(item, dict) or key not in item:
            return None
        value = item[key]
        if not isinstance(value, str | int) or isinstance(value, bool) or value in result:
            return None
        result[value] = item
    return result


def _walk(old: Any, new: Any, path: str, field: str, out: list[Change]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key, value in old.items():
            child = _join(path, str(key))
            if key not in new:
                out.append(Change(child, "removed", value, None))
            else:
                _walk(value, new[key], child, str(key), out)
        for key, value in new.items():
            if key not in old:
                out.append(Change(_join(path, str(key)), "added", None, value))
        return
    if isinstance(old, list) and isinstance(new, list):
        key = LIST_MAP_KEYS.get(field)
        old_map = _keyed(old, key) if key else None
        new_map = _keyed(new, key) if key else None
        if old_map is not None and new_map is not None:
            if field in ORDERED_LIST_MAPS:
                old_order = [name for name in old_map if name in new_map]
                new_order = [name for name in new_map if name in old_map]
                if old_order != new_order:
                    out.append(Change(path, "changed", list(old_map), list(new_map)))
            for name, item in old_map.items():
                child = f"{path}[{key}={name}]"
                if name not in new_map:
                    out.append(Change(child, "removed", item, None))
                else:
                    _walk(item, new_map[name], child, "", out)
            for name, item in new_map.items():
                if name not in old_map:
                    out.append(Change(f"{path}[{key}={name}]", "added", None, item))
            return
        for index in range(max(len(old), len(new))):
            child = f"{path}[{index}]"
            if index >= len(new):
                out.append(Change(child, "removed", old[index], None))
            elif index >= len(old):
                out.append(Change(child, "added", None, new[index]))
            else:
                _walk(old[index], new[index], child, "", out)
        return
    if isinstance(old, dict | list) or isinstance(new, dict | list) or not _scalar_equal(old, new):
        out.append(Change(path, "changed", old, new))


def structural_diff(old: dict, new: dict) -> list[Change]:
    """Return the field-level changes that turn `old` into `new` (empty when semantically equal).

    Paths look like `spec.mlPolicy.numNodes`, `metadata.labels["trainer.kubeflow.org/framework"]` and
    `spec.template.spec.replicatedJobs[name=node].replicas`; list-maps are matched by key, other lists by index.
    """
    changes: list[Change] = []
    _walk(old, new, "", "", changes)
    return changes


def unified_diff(old: dict, new: dict, *, old_label: str, new_label: str) -> str:
    """Return a unified diff of the two manifests' YAML (dump_yaml), labelled; empty string when identical."""
    lines = difflib.unified_diff(
        dump_yaml(old).splitlines(keepends=True),
        dump_yaml(new).splitlines(keepends=True),
        fromfile=old_label,
        tofile=new_label,
    )
    return "".join(lines)


def semantically_equal(a: dict, b: dict) -> bool:
    """Return True when the manifests differ at most in key order or the order of list-map items."""
    return not structural_diff(a, b)
