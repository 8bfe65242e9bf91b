"""Regenerates sandbox/apiserver/openapi_builtin.json, the OpenAPI definitions of the built-in kinds the sandbox serves.

Source: the Kubernetes 1.37 (and, for scheduling.k8s.io/v1alpha2, 1.36) JSON schemas shipped by the PyPI package
`kubernetes-validate` 1.37.0 (`kubernetes_validate/kubernetes-json-schema/v1.3x.0-local/_definitions.json`, Apache
2.0), which are generated from kube-apiserver's published OpenAPI. This script keeps only the definitions reachable
from the kinds the sandbox serves and turns the JSON-schema form back into OpenAPI v2 definitions: nullable type
lists become the plain type, `#/$defs/` references become `#/definitions/`, Quantity and IntOrString get their
published form, and the `apiVersion`/`kind` enums the converter added are dropped.

Usage (in a throw-away venv with `pip install kubernetes-validate==1.37.0`):
    python scripts/vendor_builtin_openapi.py SCHEMA_DIR > sandbox/apiserver/openapi_builtin.json
where SCHEMA_DIR is the package's `kubernetes-json-schema` directory.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOTS_137 = [
    *(f"io.k8s.api.core.v1.{kind}" for kind in ("Namespace", "Node", "Pod", "Event", "ConfigMap", "Secret",
                                                 "Service", "Endpoints")),
    "io.k8s.api.coordination.v1.Lease",
    "io.k8s.api.scheduling.v1.PriorityClass",
    "io.k8s.api.scheduling.v1beta1.Workload",
    "io.k8s.api.scheduling.v1beta1.PodGroup",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    *(f"io.k8s.api.rbac.v1.{kind}" for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")),
    "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
    "io.k8s.api.authorization.v1.SubjectAccessReview",
    "io.k8s.api.authentication.v1.SelfSubjectReview",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
]
ROOTS_136 = ["io.k8s.api.scheduling.v1alpha2.Workload", "io.k8s.api.scheduling.v1alpha2.PodGroup"]
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


def _openapi(node: Any) -> Any:
    """Returns the OpenAPI v2 form of a JSON-schema node (recursively)."""
    if isinstance(node, list):
        return [_openapi(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = value.replace("#/$defs/", "#/definitions/")
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types
        else:
            out[key] = _openapi(value)
    return out


def _closure(defs: dict[str, Any], roots: list[str], out: dict[str, Any]) -> None:
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in out:
            continue
        out[name] = defs[name]
        stack.extend(re.findall(r'#/\$defs/([^"]+)', json.dumps(defs[name])))


def main(schema_dir: str) -> None:
    base = Path(schema_dir)
    picked: dict[str, Any] = {}
    _closure(json.loads((base / "v1.37.0-local" / "_definitions.json").read_text())["$defs"], ROOTS_137, picked)
    _closure(json.loads((base / "v1.36.0-local" / "_definitions.json").read_text())["$defs"], ROOTS_136, picked)
    definitions = {name: _openapi(schema) for name, schema in sorted(picked.items())}
    for schema in definitions.values():
        if "x-kubernetes-group-version-kind" in schema:
            for field in ("apiVersion", "kind"):
                (schema.get("properties") or {}).get(field, {}).pop("enum", None)
    definitions[QUANTITY] = {
        "description": "Quantity is a fixed-point representation of a number. It provides convenient "
                       "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.",
        "type": "string"}
    definitions[INT_OR_STRING] = {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
                       "marshalling and unmarshalling, it produces or consumes the inner type.",
        "format": "int-or-string", "type": "string"}
    json.dump({"source": "kubernetes-validate 1.37.0 (Kubernetes v1.37.0 and v1.36.0 OpenAPI, Apache-2.0)",
               "definitions": definitions}, sys.stdout, sort_keys=True, separators=(",", ":"))


if __name__ == "__main__":
    main(sys.argv[1])
