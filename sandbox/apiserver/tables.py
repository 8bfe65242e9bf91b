"""Server-side printing: `meta.k8s.io/v1 Table` responses, which kubectl asks for with `Accept: ...;as=Table`."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from sandbox.apiserver.resources import ResourceType

_NAME = {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.",
         "priority": 0}
_AGE = {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp", "priority": 0}


def _age(timestamp: str | None) -> str:
    if not timestamp:
        return "<unknown>"
    try:
        created = datetime.fromisoformat(timestamp)  # Time and MicroTime (fractional seconds) alike
        if created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
    except (TypeError, ValueError):
        return "<unknown>"
    seconds = max(0, int((datetime.now(UTC) - created).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * 2 or (unit == "m" and seconds >= 60):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _jsonpath(obj: Any, path: str) -> Any:
    """Returns the value of a simple JSONPath (`.a.b`, `.a[0]`, `.a[-1:].b`) or None."""
    node = obj
    for name, index in re.findall(r"\.([A-Za-z0-9_-]+)|\[([-0-9:]+)\]", path):
        if name:
            node = node.get(name) if isinstance(node, dict) else None
        elif isinstance(node, list):
            if ":" in index:
                start = int(index.split(":")[0] or 0)
                node = node[start:][0] if node[start:] else None
            else:
                i = int(index)
                node = node[i] if -len(node) <= i < len(node) else None
        else:
            node = None
        if node is None:
            return None
    return node


def _pod_cells(obj: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    restarts = sum(int(s.get("restartCount", 0)) for s in statuses)
    columns = [_NAME, {"name": "Ready", "type": "string", "format": "", "priority": 0},
               {"name": "Status", "type": "string", "format": "", "priority": 0},
               {"name": "Restarts", "type": "string", "format": "", "priority": 0}, _AGE,
               {"name": "IP", "type": "string", "format": "", "priority": 1},
               {"name": "Node", "type": "string", "format": "", "priority": 1}]
    cells = [obj["metadata"]["name"], f"{ready}/{len(containers)}", _pod_reason(obj), str(restarts),
             _age(obj["metadata"].get("creationTimestamp")), status.get("podIP") or "<none>",
             spec.get("nodeName") or "<none>"]
    return columns, cells


def _pod_reason(obj: dict[str, Any]) -> str:
    """Returns the STATUS kubectl prints for a pod: the phase, or what the containers say (`Completed`, `Error`,
    `ContainerCreating`), or `Terminating` (kubernetes/pkg/printers/internalversion `printPod`)."""
    status = obj.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Pending"
    has_running = False
    for container in reversed(status.get("containerStatuses") or []):
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated") or {}
        if waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated.get("reason"):
            reason = terminated["reason"]
        elif terminated:
            reason = (f"Signal:{terminated['signal']}" if terminated.get("signal")
                      else f"ExitCode:{terminated.get('exitCode', 0)}")
        elif container.get("ready") and "running" in state:
            has_running = True
    if reason == "Completed" and has_running:
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        reason = "Running" if ready else "NotReady"
    if obj["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    return reason


def _event_cells(obj: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """Returns kubectl's event columns: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE (+ wide: SUBOBJECT, SOURCE,
    FIRST SEEN, COUNT, NAME), as kube-apiserver's event printer fills them."""
    involved = obj.get("involvedObject") or {}
    source = obj.get("source") or {}
    first = obj.get("firstTimestamp") or obj.get("eventTime")
    last = obj.get("lastTimestamp") or obj.get("eventTime") or first
    count = int(obj.get("count") or 1)
    last_seen = _age(last) if count <= 1 else f"{_age(last)} (x{count} over {_age(first)})"
    component = source.get("component") or obj.get("reportingComponent") or ""
    origin = f"{component}, {source['host']}" if source.get("host") else component
    columns = [_column("Last Seen"), _column("Type"), _column("Reason"), _column("Object"),
               _column("Subobject", 1), _column("Source", 1), _column("Message"), _column("First Seen", 1),
               _column("Count", 1, "integer"), {**_NAME, "priority": 1}]
    cells = [last_seen, obj.get("type") or "", obj.get("reason") or "",
             f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}",
             involved.get("fieldPath") or "", origin, (obj.get("message") or "").strip(), _age(first), count,
             obj["metadata"]["name"]]
    return columns, cells


def _column(name: str, priority: int = 0, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "type": kind, "format": "", "priority": priority}


def _node_cells(obj: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    conditions = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}
    state = "Ready" if conditions.get("Ready") == "True" else "NotReady"
    if (obj.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = obj["metadata"].get("labels") or {}
    roles = ",".join(sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))) or "<none>"
    version = ((obj.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
    status = obj.get("status") or {}
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    columns = [_NAME, {"name": "Status", "type": "string", "format": "", "priority": 0},
               {"name": "Roles", "type": "string", "format": "", "priority": 0}, _AGE,
               {"name": "Version", "type": "string", "format": "", "priority": 0},
               _column("Internal-IP", 1), _column("External-IP", 1), _column("OS-Image", 1),
               _column("Kernel-Version", 1), _column("Container-Runtime", 1)]
    return columns, [obj["metadata"]["name"], state, roles, _age(obj["metadata"].get("creationTimestamp")), version,
                     addresses.get("InternalIP") or "<none>", addresses.get("ExternalIP") or "<none>",
                     info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
                     info.get("containerRuntimeVersion") or "<unknown>"]


def _service_ports(obj: dict[str, Any]) -> str:
    ports = []
    for port in (obj.get("spec") or {}).get("ports") or []:
        node = f":{port['nodePort']}" if port.get("nodePort") else ""
        ports.append(f"{port.get('port')}{node}/{port.get('protocol', 'TCP')}")
    return ",".join(ports) or "<none>"


# Kinds whose columns sit between NAME and AGE: (column, priority, type, cell).
_SIMPLE_CELLS: dict[tuple[str, str], list[tuple[str, int, str, Any]]] = {
    ("", "configmaps"): [("Data", 0, "integer",
                          lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}))],
    ("", "secrets"): [("Type", 0, "string", lambda o: o.get("type") or ""),
                      ("Data", 0, "integer", lambda o: len(o.get("data") or {}))],
    ("", "services"): [("Type", 0, "string", lambda o: (o.get("spec") or {}).get("type") or "ClusterIP"),
                       ("Cluster-IP", 0, "string", lambda o: (o.get("spec") or {}).get("clusterIP") or "<none>"),
                       ("External-IP", 0, "string", lambda o: "<none>"),
                       ("Port(s)", 0, "string", _service_ports)],
}


def _cells(rt: ResourceType, obj: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    if rt.key == ("", "pods"):
        return _pod_cells(obj)
    if rt.key == ("", "nodes"):
        return _node_cells(obj)
    if rt.key == ("", "events"):
        return _event_cells(obj)
    if rt.key in _SIMPLE_CELLS:
        columns = [_NAME, *(_column(name, priority, kind) for name, priority, kind, _ in _SIMPLE_CELLS[rt.key]), _AGE]
        return columns, [obj["metadata"]["name"], *(cell(obj) for *_, cell in _SIMPLE_CELLS[rt.key]),
                         _age(obj["metadata"].get("creationTimestamp"))]
    meta = obj["metadata"]
    if rt.key == ("", "namespaces"):
        columns = [_NAME, {"name": "Status", "type": "string", "format": "", "priority": 0}, _AGE]
        return columns, [meta["name"], (obj.get("status") or {}).get("phase", ""), _age(meta.get("creationTimestamp"))]
    columns, cells = [_NAME], [meta["name"]]
    for col in rt.printer_columns:
        columns.append({"name": col["name"], "type": col.get("type", "string"), "format": col.get("format", ""),
                        "description": col.get("description", ""), "priority": col.get("priority", 0)})
        value = _jsonpath(obj, col["jsonPath"])
        if col.get("type") == "date" or col["jsonPath"] == ".metadata.creationTimestamp":
            value = _age(value) if value else "<unknown>"
        cells.append(value if value is not None else None)
    if not rt.printer_columns:
        columns.append(_AGE)
        cells.append(_age(meta.get("creationTimestamp")))
    return columns, cells


def _row_object(obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def table(rt: ResourceType, objects: list[dict[str, Any]], list_meta: dict[str, Any], include: str = "Metadata",
          with_headers: bool = True) -> dict[str, Any]:
    """Returns a meta.k8s.io/v1 Table of the objects (rows carry PartialObjectMetadata by default)."""
    columns: list[dict[str, Any]] = _cells(rt, {"metadata": {"name": ""}})[0]
    rows = []
    for obj in objects:
        columns, cells = _cells(rt, obj)
        rows.append({"cells": cells, "object": _row_object(obj, include)})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": columns if with_headers else [], "rows": rows}


def wants_table(accept: str) -> bool:
    """Returns True when the Accept header prefers a Table (kubectl's server-side printing)."""
    first = accept.split(",")[0] if accept else ""
    return "as=Table" in first
