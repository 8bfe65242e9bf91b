"""Start-up state: the CRDs shipped in sandbox/crds/ (with the v2.4 overlay merged in) and preset nodes.

Which Trainer the sandbox impersonates is a CRD variant (`--trainer-crd`):

- `v2.4-v1beta1` (default): the v2.4 `spec.scheduling` overlay with the Kubernetes 1.37 building blocks
  (`disruptionMode` the union `{single: {}}` | `{all: {}}`; `gang.minCount` in the schema but rejected, the
  controller computes it).
- `v2.4-v1alpha2`: the same overlay with the Kubernetes 1.36 embedded types (`disruptionMode` the string
  `Pod` | `PodGroup`; `gang.minCount` required, ≥ 1).
- `v2.3`: the released CRDs as they are, without `spec.scheduling` (Trainer < v2.4, or the
  TrainJobWorkloadAwareScheduling gate off).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

CRD_DIR = Path(__file__).parent / "crds"
OVERLAY_FILE = "overlay-v2.4-scheduling.yaml"
OVERLAY_ANNOTATION = "sandbox.trainer-portal.dev/overlay"
VARIANT_ANNOTATION = "sandbox.trainer-portal.dev/trainer-crd"

TRAINER_CRD_V24_V1BETA1 = "v2.4-v1beta1"
TRAINER_CRD_V24_V1ALPHA2 = "v2.4-v1alpha2"
TRAINER_CRD_V23 = "v2.3"
TRAINER_CRD_VARIANTS = (TRAINER_CRD_V24_V1BETA1, TRAINER_CRD_V24_V1ALPHA2, TRAINER_CRD_V23)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# The Kubernetes 1.36 (scheduling.k8s.io/v1alpha2) shapes that replace the 1.37 building blocks in `v2.4-v1alpha2`.
_V1ALPHA2_DISRUPTION_MODE = {"description": "Pod or PodGroup (scheduling.k8s.io/v1alpha2 DisruptionMode)",
                             "type": "string", "enum": ["Pod", "PodGroup"]}
_V1ALPHA2_SCHEDULING_POLICY = {
    "description": "PodGroup scheduling policy; exactly one of basic or gang (scheduling.k8s.io/v1alpha2).",
    "type": "object",
    "properties": {"basic": {"type": "object"},
                   "gang": {"type": "object", "required": ["minCount"],
                            "properties": {"minCount": {"type": "integer", "format": "int32", "minimum": 1}}}},
    "x-kubernetes-validations": [{"rule": "has(self.basic) != has(self.gang)",
                                  "message": "exactly one of basic or gang must be set"}],
}


def _schema_node(schema: dict[str, Any], dotted: str) -> dict[str, Any]:
    """Returns the schema node at a dotted path of property names; `name[]` steps into the list's `items`."""
    node = schema
    for part in dotted.split(".") if dotted else ():
        items = part.endswith("[]")
        node = node["properties"][part.removesuffix("[]")]
        if items:
            node = node["items"]
    return node


def _add_rules(node: dict[str, Any], rules: list[dict[str, Any]]) -> None:
    existing = node.setdefault("x-kubernetes-validations", [])
    existing.extend(r for r in copy.deepcopy(rules) if r not in existing)


def apply_overlay(crd: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """Returns a copy of the CRD with the overlay's properties and rules merged into every version's schema.

    The overlay's `path` gets its `properties` and `x-kubernetes-validations`; each `validations[]` entry adds rules
    at its own `path`. Raises KeyError when a path does not exist in the CRD schema.
    """
    crd = copy.deepcopy(crd)
    for version in crd["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        node = _schema_node(schema, overlay.get("path", ""))
        node.setdefault("properties", {}).update(copy.deepcopy(overlay.get("properties", {})))
        _add_rules(node, overlay.get("x-kubernetes-validations", []))
        for extra in overlay.get("validations", ()):
            _add_rules(_schema_node(schema, extra["path"]), extra["x-kubernetes-validations"])
    annotations = crd.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[OVERLAY_ANNOTATION] = OVERLAY_FILE
    return crd


def with_v1alpha2_embedded_types(node: Any) -> Any:
    """Returns a copy of an overlay where every `disruptionMode` and `schedulingPolicy` schema is the v1alpha2 one."""
    if isinstance(node, list):
        return [with_v1alpha2_embedded_types(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: (copy.deepcopy(_V1ALPHA2_DISRUPTION_MODE) if name == "disruptionMode" else
                               copy.deepcopy(_V1ALPHA2_SCHEDULING_POLICY) if name == "schedulingPolicy" else
                               with_v1alpha2_embedded_types(sub))
                        for name, sub in value.items()}
        else:
            out[key] = with_v1alpha2_embedded_types(value)
    return out


def load_crds(directory: Path = CRD_DIR, variant: str = TRAINER_CRD_V24_V1BETA1) -> list[dict[str, Any]]:
    """Returns the CustomResourceDefinition objects of a directory in the given Trainer CRD variant.

    Raises ValueError for an unknown variant.
    """
    if variant not in TRAINER_CRD_VARIANTS:
        raise ValueError(f"unknown Trainer CRD variant {variant!r}; choose one of {', '.join(TRAINER_CRD_VARIANTS)}")
    crds: list[dict[str, Any]] = []
    overlay: dict[str, Any] | None = None
    for path in sorted(directory.glob("*.yaml")):
        with path.open() as fh:
            docs = [d for d in yaml.load_all(fh, Loader=_Loader) if d]
        if path.name == OVERLAY_FILE:
            overlay = docs[0]
            continue
        crds.extend(d for d in docs if d.get("kind") == "CustomResourceDefinition")
    if overlay and variant != TRAINER_CRD_V23:
        if variant == TRAINER_CRD_V24_V1ALPHA2:
            overlay = with_v1alpha2_embedded_types(overlay)
        targets = set(overlay.get("targets", ()))
        crds = [apply_overlay(c, overlay) if c["metadata"]["name"] in targets else c for c in crds]
    for crd in crds:
        crd.get("metadata", {}).pop("creationTimestamp", None)
        crd.pop("status", None)
        if crd["spec"]["group"] == "trainer.kubeflow.org":
            crd["metadata"].setdefault("annotations", {})[VARIANT_ANNOTATION] = variant
    return crds
