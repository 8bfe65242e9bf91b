"""scheduling.k8s.io Workload and PodGroup, as kube-apiserver's strategy and declarative validation treat them.

Kubernetes 1.37 serves `v1beta1`, 1.36 `v1alpha2` (docs/reference/kubernetes-apis.md §4.2–4.4); the two differ in shape:

- PodGroup → template: v1beta1 `spec.workloadRef.{workloadName, templateName}`; v1alpha2
  `spec.podGroupTemplateRef.workload.{workloadName, podGroupTemplateName}`.
- `disruptionMode`: v1beta1 the union `{single: {}}` | `{all: {}}` (PodGroup default single); v1alpha2 the string
  `Pod` | `PodGroup` (default `Pod`).
- Updates: v1beta1 Workload templates cannot be added or removed, `gang` cannot be set or unset (Workload template
  and PodGroup), `minCount` stays mutable, the other group fields are immutable; v1alpha2 Workload templates and the
  PodGroup's `schedulingPolicy` are immutable as a whole.

Both: `podGroupTemplates` required, at most 8, a list-map keyed by `name` (DNS label); `schedulingPolicy` exactly one
of `basic`/`gang` (`gang.minCount` ≥ 1); `schedulingConstraints.topology` at most 1 (label key); `resourceClaims` at
most 4, exactly one of `resourceClaimName`/`resourceClaimTemplateName`; `priority` ≤ 1e9; all templates share one
priority; `controllerRef`/the PodGroup's template reference immutable.

`prepare` is the strategy's PrepareForCreate/PrepareForUpdate: defaults, the `scheduling.k8s.io/podgroup-protection`
finalizer on new (leaf) PodGroups of a 1.37 cluster, dropping `schedulingConstraints` while the
`TopologyAwareWorkloadScheduling` gate is off and `resourceClaims` while the `DRAWorkloadResourceClaims` gate is off
(beta, off by default in 1.37; `--gate DRAWorkloadResourceClaims=true` turns it on), unless the stored object
already uses them, as a real apiserver does with a field whose gate is disabled.
"""

from __future__ import annotations

import json
from typing import Any

from sandbox.apiserver.names import (
    DNS_LABEL_MESSAGE,
    DNS_SUBDOMAIN_MESSAGE,
    QUALIFIED_NAME_MESSAGE,
    is_dns_label,
    is_dns_subdomain,
    is_qualified_name,
)
from sandbox.apiserver.resources import ResourceType

Cause = dict[str, str]

GROUP = "scheduling.k8s.io"
WORKLOADS = (GROUP, "workloads")
PODGROUPS = (GROUP, "podgroups")
KEYS = (WORKLOADS, PODGROUPS)

PODGROUP_PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"
TOPOLOGY_GATE = "TopologyAwareWorkloadScheduling"
# Beta and off by default in 1.37 (dropDisabledDRAWorkloadResourceClaimsFields): claims vanish without an error.
DRA_CLAIMS_GATE = "DRAWorkloadResourceClaims"
DEFAULT_GATES = {TOPOLOGY_GATE: True, DRA_CLAIMS_GATE: False}

MAX_POD_GROUP_TEMPLATES = 8
MAX_RESOURCE_CLAIMS = 4
MAX_TOPOLOGY_CONSTRAINTS = 1
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
V1ALPHA2_DISRUPTION_MODES = ("Pod", "PodGroup")


# -- typed decoding: the Go structs' JSON shapes (see decode.py) ------------------------------------------------
_CONDITION = ("object", {"type": "string", "status": "string", "reason": "string", "message": "string",
                         "lastTransitionTime": "string", "observedGeneration": "int"})
_CLAIM = ("object", {"name": "string", "resourceClaimName": "string", "resourceClaimTemplateName": "string"})
_POLICY = ("object", {"basic": ("object", {}), "gang": ("object", {"minCount": "int"})})
_CONSTRAINTS = ("object", {"topology": ("list", ("object", {"key": "string"}))})
_STATUS = ("object", {"conditions": ("list", _CONDITION),
                      "resourceClaimStatuses": ("list", ("object", {"name": "string", "resourceClaimName": "string"}))})


def _group_fields_shape(alpha2: bool) -> dict[str, Any]:
    return {"schedulingPolicy": _POLICY, "schedulingConstraints": _CONSTRAINTS, "resourceClaims": ("list", _CLAIM),
            "disruptionMode": "string" if alpha2 else ("object", {"single": ("object", {}), "all": ("object", {})}),
            "priorityClassName": "string", "priority": "int",
            **({} if alpha2 else {"preemptionPolicy": "string"})}


def shape(rt: ResourceType) -> Any:
    """Returns the JSON shape (decode.py) of a Workload or PodGroup of the served version, besides metadata."""
    alpha2 = rt.version == "v1alpha2"
    if rt.key == WORKLOADS:
        template = ("object", {"name": "string", **_group_fields_shape(alpha2)})
        spec = {"controllerRef": ("object", {"apiGroup": "string", "kind": "string", "name": "string"}),
                "podGroupTemplates": ("list", template)}
        if not alpha2:
            spec["compositePodGroupTemplates"] = ("list", "any")
        return ("object", {"spec": ("object", spec)})
    ref = (("podGroupTemplateRef", ("object", {"workload": ("object", {"workloadName": "string",
                                                                       "podGroupTemplateName": "string"})}))
           if alpha2 else ("workloadRef", ("object", {"workloadName": "string", "templateName": "string"})))
    spec = {ref[0]: ref[1], **_group_fields_shape(alpha2)}
    if not alpha2:
        spec["parentCompositePodGroupName"] = "string"
    return ("object", {"spec": ("object", spec), "status": _STATUS})


# -- strategy: defaults, finalizer, disabled fields ---------------------------------------------------------------
def prepare(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, gates: dict[str, bool]) -> None:
    """Applies the create/update strategy to a Workload or PodGroup in place (defaults, finalizer, gated fields)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    alpha2 = rt.version == "v1alpha2"
    if not gates.get(TOPOLOGY_GATE, True):
        _drop_disabled_constraints(rt, spec, (old or {}).get("spec"))
    if not gates.get(DRA_CLAIMS_GATE, False):
        _drop_disabled_claims(rt, spec, (old or {}).get("spec"))
    if rt.key == WORKLOADS and not (old or {}).get("spec", {}).get("compositePodGroupTemplates"):
        # The CompositePodGroup gate (alpha) is off, as the sandbox serves no v1alpha3: the field is dropped.
        spec.pop("compositePodGroupTemplates", None)
    if rt.key == PODGROUPS:
        if "disruptionMode" not in spec:
            spec["disruptionMode"] = "Pod" if alpha2 else {"single": {}}
        if old is None and not alpha2:
            finalizers = obj["metadata"].setdefault("finalizers", [])
            if PODGROUP_PROTECTION_FINALIZER not in finalizers:
                finalizers.append(PODGROUP_PROTECTION_FINALIZER)


def _drop_disabled_constraints(rt: ResourceType, spec: dict[str, Any], old_spec: Any) -> None:
    """Drops `schedulingConstraints` (gate off) unless the stored object already has them (dropDisabledFields)."""
    if rt.key == PODGROUPS:
        if not (isinstance(old_spec, dict) and old_spec.get("schedulingConstraints") is not None):
            spec.pop("schedulingConstraints", None)
        return
    old_templates = old_spec.get("podGroupTemplates") if isinstance(old_spec, dict) else None
    in_use = any(isinstance(t, dict) and t.get("schedulingConstraints") is not None for t in old_templates or ())
    if in_use:
        return
    for template in spec.get("podGroupTemplates") or ():
        if isinstance(template, dict):
            template.pop("schedulingConstraints", None)


def _drop_disabled_claims(rt: ResourceType, spec: dict[str, Any], old_spec: Any) -> None:
    """Drops `resourceClaims` (DRAWorkloadResourceClaims off) unless the stored object already has them."""
    if rt.key == PODGROUPS:
        if not (isinstance(old_spec, dict) and old_spec.get("resourceClaims")):
            spec.pop("resourceClaims", None)
        return
    old_templates = old_spec.get("podGroupTemplates") if isinstance(old_spec, dict) else None
    if any(isinstance(t, dict) and t.get("resourceClaims") for t in old_templates or ()):
        return
    for template in spec.get("podGroupTemplates") or ():
        if isinstance(template, dict):
            template.pop("resourceClaims", None)


# -- validation ---------------------------------------------------------------------------------------------------
def _cause(reason: str, field: str, message: str) -> Cause:
    return {"reason": reason, "message": message, "field": field}


def _shown(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _invalid(field: str, value: Any, detail: str) -> Cause:
    return _cause("FieldValueInvalid", field, f"Invalid value: {_shown(value)}: {detail}")


def _required(field: str) -> Cause:
    return _cause("FieldValueRequired", field, "Required value")


def _forbidden(field: str, detail: str) -> Cause:
    return _cause("FieldValueForbidden", field, f"Forbidden: {detail}")


def _immutable(field: str, value: Any) -> Cause:
    return _invalid(field, value, "field is immutable")


def validate(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    """Returns the causes (empty when valid) of a Workload or PodGroup write; `old` is the stored object on update."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    old_spec = (old or {}).get("spec") if old is not None else None
    old_spec = old_spec if isinstance(old_spec, dict) else None
    alpha2 = rt.version == "v1alpha2"
    if rt.key == WORKLOADS:
        causes = _workload_spec(spec, alpha2)
        if old_spec is not None:
            causes += _workload_update(spec, old_spec, alpha2)
    else:
        causes = _pod_group_spec(spec, alpha2)
        if old_spec is not None:
            causes += _pod_group_update(spec, old_spec, alpha2)
    return causes


def _union(value: Any, field: str, members: tuple[str, ...]) -> list[Cause]:
    names = ", ".join(f"`{m}`" for m in members)
    if not isinstance(value, dict):
        return [_invalid(field, None, f"must specify one of: {names}")]
    present = [m for m in members if value.get(m) is not None]
    if not present:
        return [_invalid(field, "", f"must specify one of: {names}")]
    if len(present) > 1:
        return [_invalid(field, "{" + ", ".join(present) + "}", f"must specify exactly one of: {names}")]
    return []


def _scheduling_policy(policy: Any, field: str) -> list[Cause]:
    causes = _union(policy, field, ("basic", "gang"))
    if causes:
        return causes
    gang = policy.get("gang")
    if gang is not None:
        min_count = gang.get("minCount") if isinstance(gang, dict) else None
        if min_count is None:
            causes.append(_required(f"{field}.gang.minCount"))
        elif not isinstance(min_count, int) or isinstance(min_count, bool) or min_count < 1:
            causes.append(_invalid(f"{field}.gang.minCount", min_count, "must be greater than or equal to 1"))
    return causes


def _constraints(constraints: Any, field: str) -> list[Cause]:
    if constraints is None:
        return []
    topology = constraints.get("topology") if isinstance(constraints, dict) else None
    causes: list[Cause] = []
    if isinstance(topology, list):
        if len(topology) > MAX_TOPOLOGY_CONSTRAINTS:
            causes.append(_cause("FieldValueTooMany", f"{field}.topology",
                                 f"Too many: {len(topology)}: must have at most {MAX_TOPOLOGY_CONSTRAINTS} items"))
        for i, item in enumerate(topology):
            key = item.get("key") if isinstance(item, dict) else None
            where = f"{field}.topology[{i}].key"
            if not key:
                causes.append(_required(where))
            elif not is_qualified_name(key):
                causes.append(_invalid(where, key, QUALIFIED_NAME_MESSAGE))
    return causes


def _resource_claims(claims: Any, field: str) -> list[Cause]:
    if not isinstance(claims, list):
        return []
    causes: list[Cause] = []
    if len(claims) > MAX_RESOURCE_CLAIMS:
        causes.append(_cause("FieldValueTooMany", field,
                             f"Too many: {len(claims)}: must have at most {MAX_RESOURCE_CLAIMS} items"))
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        claim = claim if isinstance(claim, dict) else {}
        name = claim.get("name")
        if not name:
            causes.append(_required(f"{field}[{i}].name"))
        elif not is_dns_label(name):
            causes.append(_invalid(f"{field}[{i}].name", name, DNS_LABEL_MESSAGE))
        elif name in seen:
            causes.append(_cause("FieldValueDuplicate", f"{field}[{i}]", f'Duplicate value: {{"name":"{name}"}}'))
        seen.add(name or "")
        causes += _union(claim, f"{field}[{i}]", ("resourceClaimName", "resourceClaimTemplateName"))
    return causes


def _disruption_mode(mode: Any, field: str, alpha2: bool) -> list[Cause]:
    if mode is None:
        return []
    if alpha2:
        if mode not in V1ALPHA2_DISRUPTION_MODES:
            supported = ", ".join(f'"{m}"' for m in V1ALPHA2_DISRUPTION_MODES)
            return [_cause("FieldValueNotSupported", field, f"Unsupported value: {_shown(mode)}: supported values: "
                                                            f"{supported}")]
        return []
    return _union(mode, field, ("single", "all"))


def _priority(holder: dict[str, Any], field: str) -> list[Cause]:
    causes: list[Cause] = []
    priority = holder.get("priority")
    if isinstance(priority, int) and not isinstance(priority, bool) and priority > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(_invalid(f"{field}.priority", priority,
                               f"must be less than or equal to {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    name = holder.get("priorityClassName")
    if name and not is_dns_subdomain(name):
        causes.append(_invalid(f"{field}.priorityClassName", name, DNS_SUBDOMAIN_MESSAGE))
    return causes


def _group_fields(holder: dict[str, Any], field: str, alpha2: bool) -> list[Cause]:
    """Validates what a PodGroupTemplate and a PodGroup spec share."""
    causes = _scheduling_policy(holder.get("schedulingPolicy"), f"{field}.schedulingPolicy")
    causes += _constraints(holder.get("schedulingConstraints"), f"{field}.schedulingConstraints")
    causes += _resource_claims(holder.get("resourceClaims"), f"{field}.resourceClaims")
    causes += _disruption_mode(holder.get("disruptionMode"), f"{field}.disruptionMode", alpha2)
    causes += _priority(holder, field)
    return causes


def _workload_spec(spec: dict[str, Any], alpha2: bool) -> list[Cause]:
    causes: list[Cause] = []
    ref = spec.get("controllerRef")
    if ref is not None:
        ref = ref if isinstance(ref, dict) else {}
        for name in ("kind", "name"):
            if not ref.get(name):
                causes.append(_required(f"spec.controllerRef.{name}"))
    templates = spec.get("podGroupTemplates")
    if not templates:
        if alpha2:
            return [*causes, _required("spec.podGroupTemplates")]
        return [*causes, _invalid("spec", None, "must specify one of: `compositePodGroupTemplates`, "
                                                "`podGroupTemplates`")]
    if not isinstance(templates, list):
        return [*causes, _invalid("spec.podGroupTemplates", templates, "must be a list")]
    if len(templates) > MAX_POD_GROUP_TEMPLATES:
        causes.append(_cause("FieldValueTooMany", "spec.podGroupTemplates",
                             f"Too many: {len(templates)}: must have at most {MAX_POD_GROUP_TEMPLATES} items"))
    seen: set[str] = set()
    for i, template in enumerate(templates):
        where = f"spec.podGroupTemplates[{i}]"
        template = template if isinstance(template, dict) else {}
        name = template.get("name")
        if not name:
            causes.append(_required(f"{where}.name"))
        elif not is_dns_label(name):
            causes.append(_invalid(f"{where}.name", name, DNS_LABEL_MESSAGE))
        elif name in seen:
            causes.append(_cause("FieldValueDuplicate", where, f'Duplicate value: {{"name":"{name}"}}'))
        seen.add(name or "")
        causes += _group_fields(template, where, alpha2)
    priorities = {(t.get("priorityClassName") or "", t.get("priority")) for t in templates if isinstance(t, dict)}
    if len(priorities) > 1:
        causes.append(_invalid("spec", None, "detected multiple priority configurations"))
    return causes


def _by_name(templates: Any) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in templates or () if isinstance(t, dict) and isinstance(t.get("name"), str)}


_IMMUTABLE_GROUP_FIELDS = ("schedulingConstraints", "resourceClaims", "disruptionMode", "priorityClassName",
                           "priority")


def _policy_update(new: Any, old: Any, field: str) -> list[Cause]:
    """v1beta1: `basic` immutable, `gang` may be neither set nor unset (its minCount stays mutable)."""
    new = new if isinstance(new, dict) else {}
    old = old if isinstance(old, dict) else {}
    causes: list[Cause] = []
    if (new.get("gang") is None) != (old.get("gang") is None):
        if old.get("gang") is None:
            causes.append(_forbidden(f"{field}.gang", "field cannot be set once created"))
        else:
            causes.append(_forbidden(f"{field}.gang", "field cannot be cleared once set"))
    if new.get("basic") != old.get("basic"):
        causes.append(_immutable(f"{field}.basic", new.get("basic")))
    return causes


def _workload_update(spec: dict[str, Any], old_spec: dict[str, Any], alpha2: bool) -> list[Cause]:
    causes: list[Cause] = []
    if spec.get("controllerRef") != old_spec.get("controllerRef"):
        causes.append(_immutable("spec.controllerRef", spec.get("controllerRef")))
    if alpha2:
        if spec.get("podGroupTemplates") != old_spec.get("podGroupTemplates"):
            causes.append(_immutable("spec.podGroupTemplates", spec.get("podGroupTemplates")))
        return causes
    new, old = _by_name(spec.get("podGroupTemplates")), _by_name(old_spec.get("podGroupTemplates"))
    for i, template in enumerate(spec.get("podGroupTemplates") or ()):
        name = template.get("name") if isinstance(template, dict) else None
        if name not in old:
            causes.append(_forbidden(f"spec.podGroupTemplates[{i}]", "items may not be added"))
    for name in old:
        if name not in new:
            causes.append(_forbidden(f'spec.podGroupTemplates[name="{name}"]', "items may not be removed"))
    for i, template in enumerate(spec.get("podGroupTemplates") or ()):
        previous = old.get(template.get("name")) if isinstance(template, dict) else None
        if previous is None:
            continue
        where = f"spec.podGroupTemplates[{i}]"
        causes += _policy_update(template.get("schedulingPolicy"), previous.get("schedulingPolicy"),
                                 f"{where}.schedulingPolicy")
        for name in _IMMUTABLE_GROUP_FIELDS:
            if template.get(name) != previous.get(name):
                causes.append(_immutable(f"{where}.{name}", template.get(name)))
    return causes


def _pod_group_spec(spec: dict[str, Any], alpha2: bool) -> list[Cause]:
    causes: list[Cause] = []
    if alpha2:
        ref = spec.get("podGroupTemplateRef")
        if ref is not None:
            causes += _union(ref, "spec.podGroupTemplateRef", ("workload",))
            workload = ref.get("workload") if isinstance(ref, dict) else None
            if isinstance(workload, dict):
                causes += _reference(workload, "spec.podGroupTemplateRef.workload", "podGroupTemplateName")
    else:
        ref = spec.get("workloadRef")
        if ref is not None:
            causes += _reference(ref if isinstance(ref, dict) else {}, "spec.workloadRef", "templateName")
    if spec.get("schedulingPolicy") is None:
        causes.append(_required("spec.schedulingPolicy"))
        spec = {k: v for k, v in spec.items() if k != "schedulingPolicy"}
        return causes + _group_fields({**spec, "schedulingPolicy": {"basic": {}}}, "spec", alpha2)
    return causes + _group_fields(spec, "spec", alpha2)


def _reference(ref: dict[str, Any], field: str, template_key: str) -> list[Cause]:
    causes: list[Cause] = []
    workload_name, template_name = ref.get("workloadName"), ref.get(template_key)
    if not workload_name:
        causes.append(_required(f"{field}.workloadName"))
    elif not is_dns_subdomain(workload_name):
        causes.append(_invalid(f"{field}.workloadName", workload_name, DNS_SUBDOMAIN_MESSAGE))
    if not template_name:
        causes.append(_required(f"{field}.{template_key}"))
    elif not is_dns_label(template_name):
        causes.append(_invalid(f"{field}.{template_key}", template_name, DNS_LABEL_MESSAGE))
    return causes


def _pod_group_update(spec: dict[str, Any], old_spec: dict[str, Any], alpha2: bool) -> list[Cause]:
    ref_field = "podGroupTemplateRef" if alpha2 else "workloadRef"
    causes: list[Cause] = []
    if spec.get(ref_field) != old_spec.get(ref_field):
        causes.append(_immutable(f"spec.{ref_field}", spec.get(ref_field)))
    if alpha2:
        if spec.get("schedulingPolicy") != old_spec.get("schedulingPolicy"):
            causes.append(_immutable("spec.schedulingPolicy", spec.get("schedulingPolicy")))
    else:
        causes += _policy_update(spec.get("schedulingPolicy"), old_spec.get("schedulingPolicy"),
                                 "spec.schedulingPolicy")
    for name in _IMMUTABLE_GROUP_FIELDS:
        if spec.get(name) != old_spec.get(name):
            causes.append(_immutable(f"spec.{name}", spec.get(name)))
    return causes
