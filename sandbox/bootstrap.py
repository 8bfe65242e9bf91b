"""Start-up state: the CRDs shipped in sandbox/crds/ (with the v2.4 overlay merged in) and preset nodes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

CRD_DIR = Path(__file__).parent / "crds"
OVERLAY_FILE = "overlay-v2.4-scheduling.yaml"
OVERLAY_ANNOTATION = "sandbox.trainer-portal.dev/overlay"

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _schema_node(schema: dict[str, Any], dotted: str) -> dict[str, Any]:
    node = schema
    for part in dotted.split(".") if dotted else ():
        node = node["properties"][part]
    return node


def apply_overlay(crd: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """Returns a copy of the CRD with the overlay's properties and rules merged into every version's schema.

    Raises KeyError when the overlay `path` does not exist in the CRD schema.
    """
    crd = copy.deepcopy(crd)
    for version in crd["spec"]["versions"]:
        node = _schema_node(version["schema"]["openAPIV3Schema"], overlay.get("path", ""))
        node.setdefault("properties", {}).update(copy.deepcopy(overlay.get("properties", {})))
        rules = node.setdefault("x-kubernetes-validations", [])
        rules.extend(r for r in copy.deepcopy(overlay.get("x-kubernetes-validations", [])) if r not in rules)
    annotations = crd.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[OVERLAY_ANNOTATION] = OVERLAY_FILE
    return crd


def load_crds(directory: Path = CRD_DIR) -> list[dict[str, Any]]:
    """Returns the CustomResourceDefinition objects of a directory, overlay applied to its targets."""
    crds: list[dict[str, Any]] = []
    overlay: dict[str, Any] | None = None
    for path in sorted(directory.glob("*.yaml")):
        with path.open() as fh:
            docs = [d for d in yaml.load_all(fh, Loader=_Loader) if d]
        if path.name == OVERLAY_FILE:
            overlay = docs[0]
            continue
        crds.extend(d for d in docs if d.get("kind") == "CustomResourceDefinition")
    if overlay:
        targets = set(overlay.get("targets", ()))
        crds = [apply_overlay(c, overlay) if c["metadata"]["name"] in targets else c for c in crds]
    for crd in crds:
        crd.get("metadata", {}).pop("creationTimestamp", None)
        crd.pop("status", None)
    return crds
