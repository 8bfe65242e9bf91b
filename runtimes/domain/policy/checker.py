"""The checker's shared base: field-name constants, value-formatting helpers, the `_RJob` facts extracted from each
ReplicatedJob, and `_CheckerBase`, which holds the checker's state and the typed-access helpers (`mapping`,
`sequence`, `mapping_items`, `positive_int`) that report a Problem instead of raising. The concern-specific rules
are mixins over `_CheckerBase` in the sibling modules; `validate._Checker` combines them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..manifest import kind_of
from .report import Problem, ValidationOptions

MAX_ANNOTATIONS_BYTES = 256 * 1024
LEVEL1_FIELDS = ("schedulingPolicy", "schedulingConstraints", "disruptionMode", "resourceClaims")
GROUP_FIELDS = LEVEL1_FIELDS
LEGACY_DISRUPTION_MODES = {"Pod": "single", "PodGroup": "all"}
# Field names people reach for from older KEP drafts or other APIs, and the field they mean.
SCHEDULING_TYPOS = {
    "level": "schedulingConstraints.topology[].key (the KEP-5732 draft called it 'level')",
    "topologyRequest": "schedulingConstraints.topology[].key",
    "topologyConstraint": "schedulingConstraints.topology[].key",
    "topology": "schedulingConstraints.topology",
    "minMember": "nothing: the gang size (minCount) is computed from numNodes by the TrainJob controller",
    "minCount": "nothing: minCount is computed from numNodes by the TrainJob controller",
    "policy": "schedulingPolicy",
    "podGroupTemplates": "replicatedJobs",
    "targetJobs": "targetReplicatedJobs",
    "targets": "targetReplicatedJobs",
    "groupBy": "job (a per-Job group under a replicatedJobs entry)",
    "gang": "schedulingPolicy.gang",
    "basic": "schedulingPolicy.basic",
}
TOPOLOGY_TYPOS = {"level": "key", "topologyKey": "key", "name": "key"}


# ------------------------------------------------------------------------------------------------ helpers


INT32_MAX = 2**31 - 1


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: Any) -> str:
    """Return :func:`kind_of` ``value``, except that integers are named by their type ("a int"), as validation
    messages always have."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"a {type(value).__name__}"
    return kind_of(value)


def _key(path: str, key: Any) -> str:
    key = str(key)
    simple = key.replace("-", "").replace("_", "").isalnum()
    return f"{path}.{key}" if simple else f'{path}["{key}"]'


@dataclass
class _RJob:
    """What the rules need to know about one ReplicatedJob, extracted with type checks."""

    index: int
    name: str | None
    path: str
    raw: dict
    replicas: int | None
    ancestor: str | None
    depends_on: list[tuple[str, str]]
    pod_spec: dict | None


class _CheckerBase:
    def __init__(self, manifest: Any, options: ValidationOptions) -> None:
        self.manifest = manifest
        self.options = options
        self.problems: list[Problem] = []
        self.rjobs: list[_RJob] = []
        self.rjob_by_name: dict[str, _RJob] = {}
        self.num_nodes: int = 1
        self.ml_kind: str | None = None
        self.mpi: dict = {}
        self.startup_in_order = False

    # -- reporting

    def error(self, path: str, code: str, message: str) -> None:
        self.problems.append(Problem(path, message, "error", code))

    def warn(self, path: str, code: str, message: str) -> None:
        self.problems.append(Problem(path, message, "warning", code))

    def mapping(self, parent: dict, key: str, path: str, *, required: bool = False) -> dict | None:
        """Return parent[key] when it is a mapping; report a type error (or a missing required field) otherwise."""
        return self._typed(parent, key, path, dict, "a mapping", required=required)

    def sequence(self, parent: dict, key: str, path: str, *, required: bool = False) -> list | None:
        """Return parent[key] when it is a list; report a type error (or a missing required field) otherwise."""
        return self._typed(parent, key, path, list, "a list", required=required)

    def _typed(self, parent: dict, key: str, path: str, expected: type, noun: str, *, required: bool) -> Any:
        """Return parent[key] when it is an ``expected`` instance, else None after reporting why (absent when
        ``required``, null, or of another type, described as ``noun``)."""
        value = parent.get(key)
        if value is None:
            if required:
                self.error(path, "field.required", f"{path} is required; add it")
            elif key in parent:
                self.error(path, "field.null", f"{path} is null; remove the key or give it a value")
            return None
        if not isinstance(value, expected):
            self.error(path, "field.type", f"{path} must be {noun}, not {_kind(value)} {_show(value)}")
            return None
        return value

    def mapping_items(
        self, items: list, path: str, *, limit: int, code: str, too_many: str, fields: str
    ) -> Iterator[tuple[int, str, dict]]:
        """Yield ``(position, item_path, item)`` for each mapping in ``items`` (the list at ``path``).

        Reports the list as ``code`` with the message ``too_many`` when it has more than ``limit`` items, and each
        item that is not a mapping as ``field.type`` ("must be a mapping with ``fields``"), which is skipped.
        """
        if len(items) > limit:
            self.error(path, code, too_many)
        for position, item in enumerate(items):
            item_path = f"{path}[{position}]"
            if not isinstance(item, dict):
                self.error(item_path, "field.type", f"{item_path} must be a mapping with {fields}")
                continue
            yield position, item_path, item

    def positive_int(
        self, parent: dict, key: str, path: str, code: str, *, minimum: int = 1, maximum: int = INT32_MAX
    ) -> int | None:
        """Return parent[key] when it is an integer from minimum to maximum (or absent → None); report otherwise.

        The maximum defaults to the int32 bound of the CRD's integer fields (the API server refuses more).
        """
        if key not in parent:
            return None
        value = parent[key]
        if not _is_int(value) or value < minimum:
            self.error(path, code, f"{path} must be an integer ≥ {minimum}, got {_show(value)}; set it to ≥ {minimum}")
            return None
        if value > maximum:
            self.error(path, code, f"{path} must be at most {maximum:,}, got {_show(value)}; set it to ≤ {maximum:,}")
            return None
        return value


def _container_names(pod_spec: dict | None) -> set[str]:
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    if not isinstance(containers, list):
        return set()
    return {x["name"] for x in containers if isinstance(x, dict) and isinstance(x.get("name"), str)}


def _policy_of(group: Any) -> str | None:
    """Return 'gang' or 'basic' for a scheduling group (gang when unset: the v2.4 default), None if malformed."""
    if not isinstance(group, dict):
        return None
    policy = group.get("schedulingPolicy")
    if policy is None:
        return "gang"
    if not isinstance(policy, dict):
        return None
    if "basic" in policy and "gang" not in policy:
        return "basic"
    if "gang" in policy and "basic" not in policy:
        return "gang"
    return None


def _topology_key(group: Any) -> str:
    constraints = group.get("schedulingConstraints") if isinstance(group, dict) else None
    topology = constraints.get("topology") if isinstance(constraints, dict) else None
    first = topology[0] if isinstance(topology, list) and topology else None
    key = first.get("key") if isinstance(first, dict) else None
    return key if isinstance(key, str) else ""
