"""Published OpenAPI: `/openapi/v2` (one Swagger 2.0 document) and `/openapi/v3` (an index plus one OpenAPI 3.0
document per group/version), built from the kinds the server serves.

- Built-in kinds take their definitions from `openapi_builtin.json`, a trimmed copy of Kubernetes 1.37's published
  definitions (see `scripts/vendor_builtin_openapi.py` for the source and how to regenerate it).
- Custom resources take the CRD's `openAPIV3Schema`, completed as kube-apiserver publishes it: `apiVersion`, `kind`
  and `metadata` (a reference to ObjectMeta) at the root and the `x-kubernetes-group-version-kind` extension,
  under the name `<reversed group>.<version>.<Kind>` (`org.kubeflow.trainer.v1alpha1.TrainJob`).
- References are `#/definitions/…` in v2 and `#/components/schemas/…` in v3, where a reference with a description
  beside it is wrapped in `allOf`, as upstream's v3 builder does. v2 drops what Swagger 2.0 cannot say (`oneOf`,
  `anyOf`, `allOf`, `not`, `nullable`), as upstream's v2 publishing of CRDs does.
- Each v3 document also declares, per kind, the PATCH operation with its `fieldValidation` parameter: kubectl reads
  that to choose server-side field validation.

kubectl uses these for `explain` (v3 first) and for `apply`'s field validation.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from sandbox.apiserver.resources import ResourceType

_BUILTIN_FILE = Path(__file__).with_name("openapi_builtin.json")
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_API_VERSION_DOC = ("APIVersion defines the versioned schema of this representation of an object. Servers should "
                    "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
                    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
                    "api-conventions.md#resources")
_KIND_DOC = ("Kind is a string value representing the REST resource this object represents. Servers may infer this "
             "from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
             "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")
_METADATA_DOC = ("Standard object's metadata. More info: "
                 "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
_V2_DROPPED = ("oneOf", "anyOf", "allOf", "not", "nullable")
# v3 publishes the two string-or-number types as a oneOf, which is why kubectl names them (`map[string]Quantity`).
_V3_FORMS = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "description": "Quantity is a fixed-point representation of a number. It provides convenient "
                       "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.",
        "oneOf": [{"type": "string"}, {"type": "number"}]},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
                       "marshalling and unmarshalling, it produces or consumes the inner type.",
        "oneOf": [{"type": "integer"}, {"type": "string"}]},
}


@lru_cache(maxsize=1)
def builtin_definitions() -> dict[str, Any]:
    """Returns the vendored v2 definitions of the built-in kinds (name → schema); read once."""
    return json.loads(_BUILTIN_FILE.read_text())["definitions"]


def _builtin_names(rt: ResourceType) -> list[str]:
    """Returns the definition names whose group-version-kind is the built-in type's."""
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    return [name for name, schema in builtin_definitions().items()
            if gvk in (schema.get("x-kubernetes-group-version-kind") or [])]


def definition_name(rt: ResourceType) -> str:
    """Returns the published definition name of a custom resource kind: reversed group, version, kind."""
    return ".".join([*reversed(rt.group.split(".")), rt.version, rt.kind])


def _crd_definition(rt: ResourceType) -> dict[str, Any]:
    schema = copy.deepcopy(rt.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"description": _API_VERSION_DOC, "type": "string"}
    properties["kind"] = {"description": _KIND_DOC, "type": "string"}
    properties["metadata"] = {"$ref": f"#/definitions/{_OBJECT_META}", "description": _METADATA_DOC}
    schema.setdefault("type", "object")
    schema["x-kubernetes-group-version-kind"] = [{"group": rt.group, "kind": rt.kind, "version": rt.version}]
    return schema


def _refs(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value.rsplit("/", 1)[-1]
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _definitions(types: Iterable[ResourceType]) -> dict[str, Any]:
    """Returns the v2-form definitions of the given kinds and everything they reference."""
    builtin = builtin_definitions()
    out: dict[str, Any] = {}
    pending: list[str] = []
    for rt in types:
        if rt.builtin:
            pending.extend(_builtin_names(rt))
        else:
            name = definition_name(rt)
            out[name] = _crd_definition(rt)
            pending.extend(_refs(out[name]))
    while pending:
        name = pending.pop()
        if name in out or name not in builtin:
            continue
        out[name] = builtin[name]
        pending.extend(_refs(builtin[name]))
    return dict(sorted(out.items()))


def _to_v2(node: Any) -> Any:
    if isinstance(node, list):
        return [_to_v2(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _to_v2(value) for key, value in node.items() if key not in _V2_DROPPED}
    if node.get("x-kubernetes-int-or-string") and "type" not in out:
        out.update(type="string", format="int-or-string")
    return out


def _to_v3(node: Any, in_properties: bool = False) -> Any:
    if isinstance(node, list):
        return [_to_v3(item) for item in node]
    if not isinstance(node, dict):
        return node
    if in_properties:  # keys are field names (a field may be called "$ref"), values are schemas
        return {key: _to_v3(value) for key, value in node.items()}
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = "#/components/schemas/" + ref.rsplit("/", 1)[-1]
        rest = {key: _to_v3(value) for key, value in node.items() if key != "$ref"}
        return {"allOf": [{"$ref": target}], **rest} if rest else {"$ref": target}
    return {key: _to_v3(value, key in ("properties", "patternProperties", "definitions"))
            for key, value in node.items()}


def v2_document(types: Iterable[ResourceType]) -> dict[str, Any]:
    """Returns the Swagger 2.0 document of every served kind (`GET /openapi/v2`, JSON)."""
    definitions = {name: _to_v2(schema) for name, schema in _definitions(types).items()}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.37.0-sandbox"}, "paths": {},
            "definitions": definitions}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _gv_hash(group: str, version: str, types: list[ResourceType]) -> str:
    """Returns a hash that changes whenever the group/version's document would (clients cache by it)."""
    digest = hashlib.sha256()
    for rt in sorted(types, key=lambda t: t.kind):
        if (rt.group, rt.version) == (group, version):
            digest.update(json.dumps([rt.kind, rt.plural, rt.namespaced, rt.schema], sort_keys=True).encode())
    return digest.hexdigest()[:32].upper()


def v3_root(types: Iterable[ResourceType]) -> dict[str, Any]:
    """Returns the `/openapi/v3` index: one `serverRelativeURL` (with a content hash) per served group/version."""
    types = list(types)
    paths = {}
    for group, version in sorted({(rt.group, rt.version) for rt in types}):
        rel = _gv_path(group, version)
        paths[rel] = {"serverRelativeURL": f"/openapi/v3/{rel}?hash={_gv_hash(group, version, types)}"}
    return {"paths": paths}


def v3_document(group: str, version: str, types: Iterable[ResourceType]) -> dict[str, Any]:
    """Returns the OpenAPI 3.0 document of one group/version: its kinds' schemas and PATCH operations."""
    served = [rt for rt in types if (rt.group, rt.version) == (group, version)]
    prefix = "/" + _gv_path(group, version)
    params = [{"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
              for name in ("dryRun", "fieldManager", "fieldValidation", "force")]
    paths: dict[str, Any] = {}
    for rt in served:
        item = f"{prefix}/namespaces/{{namespace}}/{rt.plural}/{{name}}" if rt.namespaced else \
            f"{prefix}/{rt.plural}/{{name}}"
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        path_params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string", "uniqueItems": True},
                        "description": f"{name} of the {rt.kind}" if name == "name" else
                        "object name and auth scope, such as for teams and projects"}
                       for name in (("name", "namespace") if rt.namespaced else ("name",))]
        paths[item] = {"parameters": path_params,
                       "patch": {"operationId": f"patch{rt.kind}", "parameters": params,
                                 "x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": gvk,
                                 "responses": {"200": {"description": "OK"}}}}
    schemas = {name: _V3_FORMS.get(name) or _to_v3(schema) for name, schema in _definitions(served).items()}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.37.0-sandbox"}, "paths": paths,
            "components": {"schemas": schemas}}
