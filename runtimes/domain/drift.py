"""Drift algebra over Kubernetes objects: what we apply, whether the live object already is it, who else owns it.

Pure functions over plain dicts (the objects as the API server returns them, ``metadata.managedFields``
included); the sync service reads and writes the cluster and the rows around them.
"""

from __future__ import annotations

import json
from typing import Any

from runtimes.domain.manifest import API_VERSION, KIND, dump_yaml, strip_server_fields

# Records on the live object which portal revision it reflects; lets a resync of the same revision skip the write.
REVISION_ANNOTATION = "trainer-portal/revision"


def desired_object(manifest: dict, *, revision: int) -> dict:
    """Return the object we apply for ``manifest`` at ``revision``: server fields removed, our annotation added."""
    body = strip_server_fields(manifest)
    body["apiVersion"] = body.get("apiVersion") or API_VERSION
    body["kind"] = body.get("kind") or KIND
    metadata = body.setdefault("metadata", {})
    metadata.pop("namespace", None)  # cluster-scoped
    annotations = dict(metadata.get("annotations") or {})
    annotations[REVISION_ANNOTATION] = str(revision)
    metadata["annotations"] = annotations
    return body


def is_live(live: dict, desired: dict, field_manager: str) -> bool:
    """Return True when ``live`` already is ``desired``: our revision annotation, our values, and our ownership."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    wanted = desired["metadata"]["annotations"][REVISION_ANNOTATION]
    if annotations.get(REVISION_ANNOTATION) != wanted:
        return False
    managers = (live.get("metadata") or {}).get("managedFields") or []
    if managers and not any(m.get("manager") == field_manager and m.get("operation") == "Apply" for m in managers):
        return False
    return contains(strip_server_fields(live), strip_server_fields(desired))


def contains(live: Any, desired: Any) -> bool:
    """Return True when every value in ``desired`` is present and equal in ``live`` (server defaults allowed)."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(k in live and contains(live[k], want) for k, want in desired.items())
    if isinstance(desired, list):
        return (
            isinstance(live, list)
            and len(live) == len(desired)
            and all(contains(item, want) for item, want in zip(live, desired, strict=True))
        )
    if isinstance(desired, bool) or isinstance(live, bool):
        return live is desired
    return live == desired


def comparable(obj: dict) -> dict:
    """Return ``obj`` without server-populated fields and without the portal's own bookkeeping (the revision
    annotation), for comparing desired and live objects: neither is ever a difference someone made."""
    clean = strip_server_fields(obj)
    metadata = clean.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("annotations"), dict):
        metadata = clean["metadata"] = dict(metadata)
        annotations = {key: value for key, value in metadata["annotations"].items() if key != REVISION_ANNOTATION}
        if annotations:
            metadata["annotations"] = annotations
        else:
            del metadata["annotations"]
    return clean


def foreign_fields(managed_fields: list[dict], field_manager: str, desired: dict) -> list[tuple[str, str]]:
    """Return ``[(manager, dotted path)]`` of leaf fields other managers own under spec/metadata that we do not set.

    Status subresource entries are ignored (controllers own status by design).
    """
    return [(manager, ".".join(path)) for manager, path in foreign_paths(managed_fields, field_manager, desired)]


def foreign_paths(managed_fields: list[dict], field_manager: str, desired: dict) -> list[tuple[str, tuple]]:
    """Return ``[(manager, path steps)]`` of the leaf fields other managers own that ``desired`` does not set."""
    found = []
    for entry in managed_fields:
        if entry.get("manager") == field_manager or entry.get("subresource"):
            continue
        for path in _leaf_paths(entry.get("fieldsV1") or {}):
            if path[0] not in ("spec", "metadata") or (path[:2] == ("metadata", "annotations") and (
                len(path) > 2 and path[2] == REVISION_ANNOTATION
            )):
                continue
            if not _present(desired, path):
                found.append((str(entry.get("manager") or "?"), path))
    return found


def _leaf_paths(fields: dict, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    for key, value in fields.items():
        if key == ".":
            continue
        step = key[2:] if key.startswith(("f:", "k:", "v:", "i:")) else key
        if key.startswith("k:"):
            step = "[" + step + "]"
        children = {k: v for k, v in (value or {}).items() if k != "."} if isinstance(value, dict) else {}
        if children:
            paths.extend(_leaf_paths(children, (*prefix, step)))
        else:
            paths.append((*prefix, step))
    return paths


def _present(obj: Any, path: tuple[str, ...]) -> bool:
    for step in path:
        if step.startswith("[") and step.endswith("]"):
            if not isinstance(obj, list):
                return False
            try:
                keys = json.loads(step[1:-1])
            except ValueError:
                return False
            match = [item for item in obj if isinstance(item, dict) and all(item.get(k) == v for k, v in keys.items())]
            if not match:
                return False
            obj = match[0]
        elif isinstance(obj, dict) and step in obj:
            obj = obj[step]
        else:
            return False
    return True


def changers(live: dict, field_manager: str, changes: list[dict]) -> set[str]:
    """Return the other field managers of ``live`` that may have made ``changes`` (none when nothing changed)."""
    managers = (live.get("metadata") or {}).get("managedFields") or []
    others = {m.get("manager") for m in managers if m.get("manager") != field_manager and not m.get("subresource")}
    return {str(manager) for manager in others if manager} if changes else set()


def adoptable_manifest(live: dict) -> dict:
    """Return the live object as a policy manifest: server fields and our revision annotation removed."""
    manifest = strip_server_fields(live)
    metadata = manifest.get("metadata") or {}
    metadata.pop("namespace", None)
    annotations = dict(metadata.get("annotations") or {})
    annotations.pop(REVISION_ANNOTATION, None)
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    return manifest


def live_yaml(obj: dict | None) -> str:
    """Return ``obj`` without server fields as YAML ('' for None), for side-by-side views."""
    return dump_yaml(comparable(obj)) if obj else ""
