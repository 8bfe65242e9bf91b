"""Validation of written objects, as kube-apiserver's per-kind strategies and the CRD handler do it.

`validate_write` is the one entry point: object metadata (name, ownerReferences, labels), then the kind's rules
(Pod, CustomResourceDefinition, scheduling.k8s.io Workload/PodGroup in `workloads`) or, for custom resources, the
structural schema (prune unknown fields → defaults → validate). It raises `ApiError` 422 Invalid with `details.causes[]`
(reason, message, field) like the apiserver, or 400 for unknown fields under `fieldValidation=Strict`.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from sandbox.apiserver import defaults, workloads
from sandbox.apiserver import schema as schemas
from sandbox.apiserver.errors import bad_request, invalid
from sandbox.apiserver.names import DNS_LABEL, DNS_SUBDOMAIN, LABEL_NAME, is_qualified_name
from sandbox.apiserver.options import WriteOptions
from sandbox.apiserver.resources import ResourceType

Cause = dict[str, str]


def validate_write(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, subresource: str,
                   opts: WriteOptions | None = None) -> None:
    """Validates (and, for custom resources, prunes and defaults in place) an object about to be stored.

    `old` is the stored object on update, None on create. Returns nothing; raises 422 Invalid, or 400 BadRequest
    for unknown fields under fieldValidation=Strict (under Warn they are appended to `opts.warnings`).
    """
    name = obj["metadata"].get("name", "")
    causes: list[Cause] = []
    name_re = DNS_LABEL if rt.key in (("", "namespaces"),) else DNS_SUBDOMAIN
    if old is None and (len(name) > 253 or not name_re.match(name)):
        what = "a lowercase RFC 1123 label" if name_re is DNS_LABEL else "a lowercase RFC 1123 subdomain"
        causes.append({"reason": "FieldValueInvalid", "field": "metadata.name",
                       "message": f'Invalid value: "{name}": {what} must consist of lower case alphanumeric '
                                  f"characters, '-' or '.', and must start and end with an alphanumeric "
                                  f"character"})
    causes += validate_owner_references(obj["metadata"].get("ownerReferences") or ())
    causes += validate_labels(obj["metadata"].get("labels"))
    if not rt.builtin and rt.schema is not None:
        schemas.normalize_numbers(obj)
        unknown: list[str] = []
        schemas.prune(rt.schema, obj, removed=unknown)
        if unknown and opts is not None:
            unknown_fields(rt, unknown, opts)
        schemas.apply_defaults(rt.schema, obj)
        causes += schemas.validate(rt.schema, obj, old, skip_status=rt.has_status and subresource != "status")
    elif rt.key == ("", "pods"):
        causes += quantities_as_strings(obj.get("spec"))
        causes += validate_pod(obj, old)
    elif rt.key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        causes += validate_crd(obj, old)
    elif rt.key in workloads.KEYS:
        causes += workloads.validate(rt, obj, old)
    else:
        causes += defaults.validate(rt, obj, old)
    if causes:
        raise invalid(rt.kind, rt.group, name, causes)


def unknown_fields(rt: ResourceType, unknown: list[str], opts: WriteOptions) -> None:
    """Applies fieldValidation to pruned unknown fields: Strict → 400, Warn → warnings, Ignore → nothing."""
    if opts.field_validation == "Strict":
        detail = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                          f"strict decoding error: {detail}")
    if opts.field_validation == "Warn":
        opts.warnings.extend(f'unknown field "{u}"' for u in unknown)


_QUANTITY_SUFFIXES = ((1, ""), (1000, "m"), (1_000_000, "u"), (1_000_000_000, "n"))


def _quantity_text(value: int | float) -> str | None:
    """Returns the canonical quantity string of a JSON number (`8` → "8", `0.5` → "500m"), None if it has none."""
    for factor, suffix in _QUANTITY_SUFFIXES:
        scaled = value * factor
        if float(scaled).is_integer():
            return f"{int(scaled)}{suffix}"
    return None


def quantities_as_strings(pod_spec: Any) -> list[Cause]:
    """Rewrites numeric resource quantities of a pod spec's containers as quantity strings, in place, as the
    apiserver's Quantity decoding does (`{"cpu": 8}` is stored as `"8"`). Returns causes for values that are
    neither numbers nor strings."""
    causes: list[Cause] = []
    if not isinstance(pod_spec, dict):
        return causes
    for group in ("initContainers", "containers"):
        for i, container in enumerate(pod_spec.get(group) or ()):
            resources = container.get("resources") if isinstance(container, dict) else None
            for kind in ("requests", "limits"):
                values = resources.get(kind) if isinstance(resources, dict) else None
                for name, value in (values or {}).items() if isinstance(values, dict) else ():
                    field = f"spec.{group}[{i}].resources.{kind}[{name}]"
                    text = (_quantity_text(value) if isinstance(value, int | float) and not isinstance(value, bool)
                            else value if isinstance(value, str) else None)
                    if text is None:
                        causes.append({"reason": "FieldValueInvalid", "field": field,
                                       "message": f"Invalid value: {json.dumps(value)}: must be a quantity such "
                                                  f'as "8", "500m" or "16Gi"'})
                    else:
                        values[name] = text
    return causes


def validate_owner_references(refs: Any) -> list[Cause]:
    """Returns causes for ownerReferences without their required fields or with more than one controller."""
    causes: list[Cause] = []
    for i, ref in enumerate(refs):
        for req in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(req):
                causes.append({"reason": "FieldValueRequired", "field": f"metadata.ownerReferences[{i}].{req}",
                               "message": "Required value"})
    controllers = [r for r in refs if r.get("controller")]
    if len(controllers) > 1:
        found = ", ".join(f"{r.get('kind', '')}/{r.get('name', '')}" for r in controllers)
        causes.append({"reason": "FieldValueInvalid", "field": "metadata.ownerReferences",
                       "message": "Invalid value: \"array\": Only one reference can have Controller set to true. "
                                  f'Found "true" in references for {found}'})
    return causes


def validate_labels(labels: Any) -> list[dict[str, str]]:
    """Returns causes for label keys/values the apiserver rejects (qualified names, 63-char values)."""
    if not isinstance(labels, dict):
        return [] if labels is None else [{"reason": "FieldValueTypeInvalid", "field": "metadata.labels",
                                           "message": "Invalid value: labels must be a map of strings"}]
    causes = []
    for key, value in labels.items():
        if not is_qualified_name(key):
            causes.append({"reason": "FieldValueInvalid", "field": "metadata.labels",
                           "message": f'Invalid value: "{key}": name part must consist of alphanumeric characters, '
                                      f"'-', '_' or '.', and must start and end with an alphanumeric character "
                                      f"(at most 63 characters, optional DNS subdomain prefix)"})
        if not isinstance(value, str) or len(value) > 63 or (value and not LABEL_NAME.match(value)):
            causes.append({"reason": "FieldValueInvalid", "field": f"metadata.labels.{key}",
                           "message": f"Invalid value: {json.dumps(value)}: a valid label must be an empty string or "
                                      f"consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                                      f"with an alphanumeric character (at most 63 characters)"})
    return causes


_POD_MUTABLE_SPEC = ("activeDeadlineSeconds", "tolerations", "schedulingGates", "terminationGracePeriodSeconds")


def validate_pod(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, str]]:
    causes = []
    spec = obj.get("spec") or {}
    containers = spec.get("containers")
    if not containers:
        causes.append({"reason": "FieldValueRequired", "field": "spec.containers", "message": "Required value"})
    for i, c in enumerate(containers or []):
        if not isinstance(c, dict) or not c.get("name"):
            causes.append({"reason": "FieldValueRequired", "field": f"spec.containers[{i}].name",
                           "message": "Required value"})
        if isinstance(c, dict) and not c.get("image"):
            causes.append({"reason": "FieldValueRequired", "field": f"spec.containers[{i}].image",
                           "message": "Required value"})
    if old is not None:
        old_spec = copy.deepcopy(old.get("spec") or {})
        new_spec = copy.deepcopy(spec)
        for key in _POD_MUTABLE_SPEC:
            old_spec.pop(key, None)
            new_spec.pop(key, None)
        if not old_spec.get("nodeName"):
            # Lenient: schedulers may bind by setting spec.nodeName once (real clusters require pods/binding).
            new_spec.pop("nodeName", None)
            old_spec.pop("nodeName", None)
        for c in old_spec.get("containers") or []:
            c.pop("image", None)
        for c in new_spec.get("containers") or []:
            c.pop("image", None)
        if old_spec != new_spec:
            causes.append({"reason": "FieldValueForbidden", "field": "spec",
                           "message": "Forbidden: pod updates may not change fields other than "
                                      "`spec.containers[*].image`, `spec.activeDeadlineSeconds`, "
                                      "`spec.tolerations` (only additions to existing tolerations), "
                                      "`spec.terminationGracePeriodSeconds` or `spec.schedulingGates`"})
    return causes


def validate_crd(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, str]]:
    causes = []
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    for name in ("group", "scope"):
        if not spec.get(name):
            causes.append({"reason": "FieldValueRequired", "field": f"spec.{name}", "message": "Required value"})
    for name in ("plural", "kind"):
        if not names.get(name):
            causes.append({"reason": "FieldValueRequired", "field": f"spec.names.{name}",
                           "message": "Required value"})
    if not spec.get("versions"):
        causes.append({"reason": "FieldValueRequired", "field": "spec.versions", "message": "Required value"})
    expected = f"{names.get('plural')}.{spec.get('group')}"
    if names.get("plural") and spec.get("group") and obj["metadata"].get("name") != expected:
        causes.append({"reason": "FieldValueInvalid", "field": "metadata.name",
                       "message": f'Invalid value: "{obj["metadata"].get("name")}": must be spec.names.plural+"."+'
                                  f"spec.group"})
    if old is not None and (old.get("spec") or {}).get("group") != spec.get("group"):
        causes.append({"reason": "FieldValueInvalid", "field": "spec.group", "message": "Invalid value: field is "
                                                                                       "immutable"})
    return causes
