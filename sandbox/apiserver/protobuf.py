"""Decoding of `application/vnd.kubernetes.protobuf` request bodies for the few built-in kinds kubectl sends that way.

kubectl's typed generators (`create namespace`, `create configmap`, `create secret generic`, `auth can-i`,
`auth whoami`) always send protobuf, whatever discovery advertises. The body is the magic `k8s\\x00` followed by a
`runtime.Unknown` message (`typeMeta` = 1 {apiVersion = 1, kind = 2}, `raw` = 2, `contentEncoding` = 3,
`contentType` = 4), whose `raw` is the object's own message (`k8s.io/api` generated.proto field numbers).

No maintained Python library decodes Kubernetes' protobuf (there are no published generated modules), so this is a
small wire-format reader with the field tables of these kinds only. `decode(raw)` returns the object as the JSON
decoder would (base64 for `bytes`, absent zero values left out); it raises `ProtobufError` for a malformed body
or a kind it has no table for.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# A message table: field number -> (JSON name, type, repeated). Types: "string", "bytes", "int", "bool",
# "time" (meta.v1.Time), a nested table, or ("map", value type) for map<string, value>.
Table = dict[int, tuple[str, Any, bool]]

_TYPE_META: Table = {1: ("apiVersion", "string", False), 2: ("kind", "string", False)}
_UNKNOWN: Table = {1: ("typeMeta", _TYPE_META, False), 2: ("raw", "raw", False),
                   3: ("contentEncoding", "string", False), 4: ("contentType", "string", False)}
_OWNER_REFERENCE: Table = {1: ("kind", "string", False), 3: ("name", "string", False), 4: ("uid", "string", False),
                           5: ("apiVersion", "string", False), 6: ("controller", "bool", False),
                           7: ("blockOwnerDeletion", "bool", False)}
_OBJECT_META: Table = {
    1: ("name", "string", False), 2: ("generateName", "string", False), 3: ("namespace", "string", False),
    5: ("uid", "string", False), 6: ("resourceVersion", "string", False), 7: ("generation", "int", False),
    8: ("creationTimestamp", "time", False), 9: ("deletionTimestamp", "time", False),
    10: ("deletionGracePeriodSeconds", "int", False), 11: ("labels", ("map", "string"), False),
    12: ("annotations", ("map", "string"), False), 13: ("ownerReferences", _OWNER_REFERENCE, True),
    14: ("finalizers", "string", True),
}
_NAMESPACE: Table = {1: ("metadata", _OBJECT_META, False),
                     2: ("spec", {1: ("finalizers", "string", True)}, False),
                     3: ("status", {1: ("phase", "string", False)}, False)}
_CONFIG_MAP: Table = {1: ("metadata", _OBJECT_META, False), 2: ("data", ("map", "string"), False),
                      3: ("binaryData", ("map", "bytes"), False), 4: ("immutable", "bool", False)}
_SECRET: Table = {1: ("metadata", _OBJECT_META, False), 2: ("data", ("map", "bytes"), False),
                  3: ("type", "string", False), 4: ("stringData", ("map", "string"), False),
                  5: ("immutable", "bool", False)}
_RESOURCE_ATTRIBUTES: Table = {1: ("namespace", "string", False), 2: ("verb", "string", False),
                               3: ("group", "string", False), 4: ("version", "string", False),
                               5: ("resource", "string", False), 6: ("subresource", "string", False),
                               7: ("name", "string", False)}
_SELF_SUBJECT_ACCESS_REVIEW: Table = {
    1: ("metadata", _OBJECT_META, False),
    2: ("spec", {1: ("resourceAttributes", _RESOURCE_ATTRIBUTES, False),
                 2: ("nonResourceAttributes", {1: ("path", "string", False), 2: ("verb", "string", False)},
                     False)}, False),
}
_SELF_SUBJECT_REVIEW: Table = {1: ("metadata", _OBJECT_META, False)}

# (apiVersion, kind) -> table: the kinds kubectl sends as protobuf that the sandbox serves.
KINDS: dict[tuple[str, str], Table] = {
    ("v1", "Namespace"): _NAMESPACE,
    ("v1", "ConfigMap"): _CONFIG_MAP,
    ("v1", "Secret"): _SECRET,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): _SELF_SUBJECT_ACCESS_REVIEW,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): _SELF_SUBJECT_REVIEW,
}


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf envelope, or of a kind without a table here."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """Returns (field number, value) pairs: an int for varints, bytes for length-delimited fields."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated length-delimited field")
            out.append((number, data[pos:pos + size]))
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4  # fixed-width numbers: none in these tables
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
    return out


def _time(data: bytes) -> str | None:
    seconds = dict(_fields(data)).get(1, 0)
    if not seconds:
        return None  # the zero Time
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # type: ignore[arg-type]


def _scalar(kind: Any, value: int | bytes) -> Any:
    if kind == "string":
        return bytes(value).decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if kind == "bytes":
        return base64.b64encode(value).decode() if isinstance(value, bytes) else ""
    if kind == "raw":
        return value
    if kind == "bool":
        return bool(value)
    if kind == "int":
        number = int(value) if isinstance(value, int) else 0
        return number - (1 << 64) if number >= 1 << 63 else number
    if kind == "time":
        return _time(value) if isinstance(value, bytes) else None
    if isinstance(kind, dict):
        return _message(kind, value if isinstance(value, bytes) else b"")
    raise ProtobufError(f"no decoder for {kind!r}")


def _message(table: Table, data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in table:
            continue  # a field the sandbox does not model (e.g. managedFields): ignored, like unknown JSON fields
        name, kind, repeated = table[number]
        if isinstance(kind, tuple):  # map<string, value>: each entry is a message {key = 1, value = 2}
            entry = dict(_fields(value if isinstance(value, bytes) else b""))
            out.setdefault(name, {})[_scalar("string", entry.get(1, b""))] = _scalar(kind[1], entry.get(2, b""))
        elif repeated:
            out.setdefault(name, []).append(_scalar(kind, value))
        else:
            decoded = _scalar(kind, value)
            # gogo-protobuf writes every string and integer, empty or not; JSON (omitempty) leaves zero values out.
            if decoded not in ("", 0, None) or kind == "bool":
                out[name] = decoded
    return out


def decode(raw: bytes) -> dict[str, Any]:
    """Returns the JSON form of a protobuf-encoded object of a kind in `KINDS`.

    Raises ProtobufError when the envelope is malformed or the kind has no table.
    """
    if not raw.startswith(MAGIC):
        raise ProtobufError("missing the k8s\\x00 prefix of a Kubernetes protobuf body")
    envelope = _message(_UNKNOWN, raw[len(MAGIC):])
    type_meta = envelope.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    table = KINDS.get((api_version, kind))
    if table is None:
        supported = ", ".join(k for _, k in KINDS)
        raise ProtobufError(f"protobuf bodies are decoded only for {supported}, not {kind or 'this kind'} "
                            f"({api_version}); send application/json")
    if envelope.get("contentEncoding"):
        raise ProtobufError(f"unsupported contentEncoding {envelope['contentEncoding']!r}")
    obj = _message(table, envelope.get("raw") or b"")
    return {"apiVersion": api_version, "kind": kind, **obj}
