"""The preview panel's form: its values ⇄ the preview request's input, and request problems → form fields.

The panel does not validate anything itself: `request_data_from_form` turns the values into the input the API
takes, and the domain parser (`runtimes.domain.preview.preview_request_parse`) validates both the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtimes.domain.preview import API_VERSIONS, DEFAULT_RESOURCES, SyntheticTopology
from runtimes.services.preview import live_source_available
from trainer_portal.placement.quantities import GPU

DEFAULT_NUM_NODES = 8
# Form field name → the request path its problems are reported under (see `_field_for_path`).
_SYNTHETIC_FIELDS = ("zones", "blocksPerZone", "racksPerBlock", "nodesPerRack", "gpusPerNode", "fragmentation", "seed")
FORM_FIELDS = ("numNodes", "gpu", "cpu", "memory", "apiVersion", "composite", "source", *_SYNTHETIC_FIELDS,
               "policy", "manifest")
_RESOURCE_FIELDS = {"gpu": GPU, "cpu": "cpu", "memory": "memory"}
SYNTHETIC_LABELS = {
    "zones": "Zones",
    "blocksPerZone": "Blocks per zone",
    "racksPerBlock": "Racks per block",
    "nodesPerRack": "Nodes per rack",
    "gpusPerNode": "GPUs per node",
    "fragmentation": "Fragmentation",
    "seed": "Seed",
}



def form_defaults(*, policy: str = "") -> dict[str, str]:
    """Return the initial form values (strings, as the inputs show them)."""
    topology = SyntheticTopology()
    return {
        "numNodes": str(DEFAULT_NUM_NODES),
        "gpu": DEFAULT_RESOURCES[GPU],
        "cpu": DEFAULT_RESOURCES["cpu"],
        "memory": DEFAULT_RESOURCES["memory"],
        "apiVersion": next(iter(API_VERSIONS)),
        "composite": "",
        # The live cluster is what users care about whenever the worker has a snapshot of it.
        "source": "live" if live_source_available() else "synthetic",
        "zones": str(topology.zones),
        "blocksPerZone": str(topology.blocks_per_zone),
        "racksPerBlock": str(topology.racks_per_block),
        "nodesPerRack": str(topology.nodes_per_rack),
        "gpusPerNode": str(topology.gpus_per_node),
        "fragmentation": topology.fragmentation,
        "seed": str(topology.seed),
        "policy": policy,
        "manifest": "",
    }


def form_values(data: Mapping[str, Any]) -> dict[str, str]:
    """Return the submitted form values, defaults filled in for fields the form did not send."""
    values = form_defaults()
    for name in FORM_FIELDS:
        if name == "composite":
            values[name] = "on" if data.get(name) in ("on", "true", "1") else ""
        elif name in data:
            values[name] = str(data.get(name) or "").strip() if name != "manifest" else str(data.get(name) or "")
    return values


def request_data_from_form(values: Mapping[str, str]) -> dict[str, Any]:
    """Return the JSON-shaped preview input (as the API takes it) for form `values`."""
    resources = {resource: values.get(field, "") for field, resource in _RESOURCE_FIELDS.items()}
    topology: dict[str, Any] = {"source": values.get("source") or "synthetic"}
    topology.update({name: values.get(name, "") for name in _SYNTHETIC_FIELDS})
    return {
        "numNodes": values.get("numNodes", ""),
        "resourcesPerNode": resources,
        "apiVersion": values.get("apiVersion", ""),
        "composite": values.get("composite") == "on",
        "topology": topology,
    }


def _field_for_path(path: str) -> str:
    """Return the form field a request path belongs to ("" for problems that concern no single field)."""
    if path.startswith("resourcesPerNode."):
        resource = path.removeprefix("resourcesPerNode.")
        return next((field for field, name in _RESOURCE_FIELDS.items() if name == resource), "gpu")
    if path.startswith("topology."):
        name = path.removeprefix("topology.")
        return name if name in _SYNTHETIC_FIELDS or name == "source" else ""
    if path == "topology":
        return "zones"
    if path.startswith("manifest"):
        return "manifest"
    return path if path in FORM_FIELDS else ""


def field_errors(errors: list[dict[str, str]]) -> tuple[dict[str, list[str]], list[dict[str, str]]]:
    """Return ({form field: [messages]}, problems that belong to no field) for preview input problems."""
    by_field: dict[str, list[str]] = {}
    other = []
    for error in errors:
        field = _field_for_path(error["path"])
        if field and not (field == "manifest" and error["path"] != "manifest"):
            by_field.setdefault(field, []).append(error["message"])
        else:
            other.append(error)
    return by_field, other




