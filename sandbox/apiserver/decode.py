"""The typed JSON decoding step of kube-apiserver for built-in kinds: wrong JSON types and unknown fields.

A built-in object is decoded into a Go struct before anything else looks at it. A value of the wrong JSON type is
a 400 BadRequest (`Workload in version "v1beta1" cannot be handled as a Workload: json: cannot unmarshal number
into Go struct field PodGroupTemplate.spec.podGroupTemplates.name of type string`), `null` is the zero value (the
field is dropped), and a field the struct does not have is pruned: with a `299` warning under the default field
validation (Warn), a 400 under Strict, silently under Ignore.

A shape is `"string"`, `"int"`, `"bool"`, `"any"` (kept as it is), `("object", {field: shape})`,
`("open", {field: shape})` (an object whose other fields are kept unchecked: an outline of a kind the sandbox does
not describe in full), `("list", shape)` or `("map", shape)` (an object with free keys).
"""

from __future__ import annotations

from typing import Any

from sandbox.apiserver.errors import ApiError, bad_request
from sandbox.apiserver.options import WriteOptions
from sandbox.apiserver.resources import ResourceType

Shape = Any

_GO_TYPES = {"string": "string", "int": "int32", "bool": "bool"}

METADATA: Shape = ("object", {
    "name": "string", "generateName": "string", "namespace": "string", "uid": "string", "resourceVersion": "string",
    "generation": "int", "creationTimestamp": "string", "deletionTimestamp": "string",
    "deletionGracePeriodSeconds": "int", "labels": ("map", "string"), "annotations": ("map", "string"),
    "finalizers": ("list", "string"), "ownerReferences": ("list", ("object", {
        "apiVersion": "string", "kind": "string", "name": "string", "uid": "string", "controller": "bool",
        "blockOwnerDeletion": "bool"})),
    "managedFields": ("list", "any"), "selfLink": "string",
})


_CONTAINER = ("open", {"name": "string", "image": "string",
                       "resources": ("open", {"requests": ("map", "any"), "limits": ("map", "any")}),
                       "env": ("list", ("open", {"name": "string"})), "ports": ("list", ("open", {}))})
# The structural points of a Pod the server itself reads; everything else is kept as sent.
POD_OUTLINE: Shape = ("open", {
    "spec": ("open", {"containers": ("list", _CONTAINER), "initContainers": ("list", _CONTAINER),
                      "nodeName": "string", "schedulerName": "string", "tolerations": ("list", ("open", {})),
                      "schedulingGates": ("list", ("open", {"name": "string"})), "restartPolicy": "string",
                      "terminationGracePeriodSeconds": "int", "activeDeadlineSeconds": "int",
                      "schedulingGroup": ("open", {"podGroupName": "string"}), "priority": "int",
                      "priorityClassName": "string"}),
    "status": ("open", {"phase": "string", "conditions": ("list", ("open", {"type": "string"})),
                        "containerStatuses": ("list", ("open", {})), "qosClass": "string"}),
})


class DecodeError(Exception):
    """A value whose JSON type the Go struct cannot hold."""


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value}" if isinstance(value, float) else "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "value")


def _zero(shape: Shape) -> Any:
    if isinstance(shape, str):
        return {"string": "", "int": 0, "bool": False}.get(shape)
    return [] if shape[0] == "list" else {}


def _go_type(shape: Shape, struct: str) -> str:
    if isinstance(shape, str):
        return _GO_TYPES.get(shape, "interface {}")
    kind, inner = shape
    if kind == "list":
        return "[]" + _go_type(inner, struct)
    if kind == "map":
        return "map[string]" + _go_type(inner, struct)
    return struct


def _decode(shape: Shape, value: Any, path: str, struct: str, unknown: list[str]) -> None:
    """Checks value against shape in place: drops nulls inside objects, prunes unknown fields into `unknown`.

    Raises DecodeError naming the Go struct field and type.
    """
    def fail() -> DecodeError:
        return DecodeError(f"json: cannot unmarshal {_json_type(value)} into Go struct field {struct}.{path} of type "
                           f"{_go_type(shape, struct)}")

    if shape == "any":
        return
    if isinstance(shape, str):
        ok = {"string": isinstance(value, str), "bool": isinstance(value, bool),
              "int": isinstance(value, int) and not isinstance(value, bool)}[shape]
        if not ok:
            raise fail()
        return
    kind, inner = shape
    if kind == "list":
        if not isinstance(value, list):
            raise fail()
        for i, item in enumerate(value):
            if item is None:
                value[i] = _zero(inner)  # Go decodes a null item into the element type's zero value
            else:
                _decode(inner, item, path, struct, unknown)
        return
    if not isinstance(value, dict):
        raise fail()
    if kind == "map":
        for key, item in list(value.items()):
            if item is None:
                del value[key]
            else:
                _decode(inner, item, path, struct, unknown)
        return
    for key in list(value):
        sub = inner.get(key)
        where = f"{path}.{key}" if path else key
        if sub is None:
            if kind == "open":
                continue
            unknown.append(where)
            del value[key]
        elif value[key] is None:
            del value[key]
        else:
            _decode(sub, value[key], where, struct, unknown)


def decode(rt: ResourceType, obj: dict[str, Any], shape: Shape | None, opts: WriteOptions | None) -> None:
    """Applies the typed decoding of a built-in kind to a request body in place.

    `shape` describes the fields besides apiVersion/kind/metadata (None: only metadata is checked, other fields
    are kept). Raises 400 BadRequest for a wrong JSON type, and for unknown fields under fieldValidation=Strict;
    under Warn their paths are appended to `opts.warnings`.
    """
    unknown: list[str] = []
    try:
        _decode(METADATA, obj.get("metadata"), "metadata", "ObjectMeta", unknown)
        if shape is not None:
            body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
            _decode(shape, body, "", rt.kind, unknown)
            for key in [k for k in obj if k not in ("apiVersion", "kind", "metadata")]:
                if key in body:
                    obj[key] = body[key]
                else:
                    del obj[key]
    except DecodeError as exc:
        raise ApiError(400, "BadRequest", f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                                          f"{exc}") from None
    if not unknown or opts is None:
        return
    if opts.field_validation == "Strict":
        detail = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: strict decoding '
                          f"error: {detail}")
    if opts.field_validation == "Warn":
        opts.warnings.extend(f'unknown field "{u}"' for u in unknown)
