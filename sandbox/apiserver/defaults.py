"""What kube-apiserver fills into built-in objects on every write (defaulting runs on every decode, so a PUT of
the object as first sent still matches what is stored), beyond what the client sent.

Two sources, both visible to clients: the Go structs behind the JSON (a struct field without `omitempty`, or a
nested struct, is always serialized, e.g. an Event's `involvedObject: {}` or a PriorityClass's `value: 0`), and the
kinds' defaulting and strategies (a Namespace's `kubernetes.io/metadata.name` label, a PriorityClass's
`preemptionPolicy`). The official client's typed models rely on them: `CoreV1Event.involved_object` and every
`V1NodeSystemInfo` field are required.

`apply(rt, obj)` works in place and returns nothing; `validate(rt, obj, old)` returns the causes of the kinds whose
rules live here (Event, PriorityClass).
"""

from __future__ import annotations

import json
from typing import Any

from sandbox.apiserver.resources import ResourceType

Cause = dict[str, str]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
# The priority classes every cluster has from the start (kube-apiserver creates them).
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
_NODE_INFO_FIELDS = ("architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
                     "kubeletVersion", "machineID", "operatingSystem", "osImage", "systemUUID")
_EVENT_STRINGS = ("reportingComponent", "reportingInstance")
_EVENT_TIMES = ("firstTimestamp", "lastTimestamp", "eventTime")


_SYSTEM_PRIORITY_DESCRIPTIONS = {
    "system-cluster-critical": "Used for system critical pods that must run in the cluster, but can be moved to "
                               "another node if necessary.",
    "system-node-critical": "Used for system critical pods that must not be moved from their current node.",
}


def system_priority_classes() -> list[dict[str, Any]]:
    """Returns the built-in PriorityClass objects of a fresh cluster."""
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
             "value": value, "description": _SYSTEM_PRIORITY_DESCRIPTIONS[name]}
            for name, value in SYSTEM_PRIORITY_CLASSES.items()]


def apply(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Fills the server-side defaults of a built-in kind in place (custom resources: nothing)."""
    if rt.key == ("", "namespaces"):
        obj.setdefault("spec", {})
        obj["metadata"].setdefault("labels", {})[NAMESPACE_NAME_LABEL] = obj["metadata"]["name"]
    elif rt.key == ("", "pods"):
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
    elif rt.key == ("", "nodes"):
        obj.setdefault("spec", {})
        status = obj.setdefault("status", {})
        if isinstance(status, dict):
            info = status.setdefault("nodeInfo", {})
            for name in _NODE_INFO_FIELDS:
                info.setdefault(name, "")
            endpoints = status.setdefault("daemonEndpoints", {})
            endpoints.setdefault("kubeletEndpoint", {}).setdefault("Port", 0)
    elif rt.key == ("", "events"):
        obj.setdefault("involvedObject", {})
        obj.setdefault("source", {})
        for name in _EVENT_STRINGS:
            obj.setdefault(name, "")
        for name in _EVENT_TIMES:
            obj.setdefault(name, None)
    elif rt.key == ("coordination.k8s.io", "leases"):
        obj.setdefault("spec", {})
    elif rt.key == ("", "secrets"):
        if not obj.get("type"):
            obj["type"] = "Opaque"  # SetDefaults_Secret
    elif rt.key == ("scheduling.k8s.io", "priorityclasses"):
        obj.setdefault("value", 0)
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")


def validate(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    """Returns the causes (empty when valid) of an Event or PriorityClass write; other kinds: none."""
    if rt.key == ("", "events"):
        return _event(obj)
    if rt.key == ("scheduling.k8s.io", "priorityclasses"):
        return _priority_class(obj, old)
    return []


def _event(obj: dict[str, Any]) -> list[Cause]:
    """core/v1 Events without eventTime: the involved object's namespace must be the Event's (or empty for an Event
    in `default`), as legacy Event validation requires."""
    if obj.get("eventTime"):
        return []
    involved = obj.get("involvedObject") if isinstance(obj.get("involvedObject"), dict) else {}
    namespace = obj["metadata"].get("namespace", "")
    involved_ns = involved.get("namespace") or ""
    if (not involved_ns and namespace not in ("", "default")) or (involved_ns and involved_ns != namespace):
        return [{"reason": "FieldValueInvalid", "field": "involvedObject.namespace",
                 "message": f"Invalid value: {json.dumps(involved_ns)}: does not match event.namespace"}]
    return []


def _priority_class(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    name, value = obj["metadata"].get("name", ""), obj.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        causes.append({"reason": "FieldValueTypeInvalid", "field": "value",
                       "message": f"Invalid value: {json.dumps(value)}: must be an integer"})
    elif name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        if SYSTEM_PRIORITY_CLASSES.get(name) != value:
            causes.append({"reason": "FieldValueForbidden", "field": "metadata.name",
                           "message": "Forbidden: priority class names with 'system-' prefix are reserved for "
                                      "system use only"})
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append({"reason": "FieldValueForbidden", "field": "value",
                       "message": f"Forbidden: maximum allowed value of a user defined priority is "
                                  f"{HIGHEST_USER_DEFINABLE_PRIORITY}"})
    if obj.get("preemptionPolicy") not in ("PreemptLowerPriority", "Never"):
        causes.append({"reason": "FieldValueNotSupported", "field": "preemptionPolicy",
                       "message": f"Unsupported value: {json.dumps(obj.get('preemptionPolicy'))}: supported values: "
                                  f'"Never", "PreemptLowerPriority"'})
    if old is not None:
        if old.get("value") != value:
            causes.append({"reason": "FieldValueForbidden", "field": "value",
                           "message": "Forbidden: may not be changed in an update."})
        if old.get("preemptionPolicy") != obj.get("preemptionPolicy"):
            causes.append({"reason": "FieldValueInvalid", "field": "preemptionPolicy",
                           "message": f"Invalid value: {json.dumps(obj.get('preemptionPolicy'))}: field is immutable"})
    return causes
