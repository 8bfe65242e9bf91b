"""The sandbox gang scheduler's placement core: pure functions over plain Pod and Node dicts.

Deliberately simple and independent of the portal's preview engine, so that a differential test can compare
the two: filter nodes (ready, not cordoned, taints tolerated, node selector), group the survivors by the value of
the topology key (one domain holding every node when there is no key), then try each domain in sorted order and
place the pods node by node, first fit, biggest pods first. The first domain that holds every pod wins.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from sandbox.controllers.resources import TRACKED, node_allocatable, pod_requests

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True)
class PlacementAttempt:
    """The verdict of one placement attempt.

    `fits`: every pod got a node; `assignments`: pod name -> node name (empty unless fits); `message`: a
    kube-scheduler/Kueue style explanation; `domain`: the chosen topology domain value (None without a key or
    when nothing fits); `best_domain` / `best_count`: the domain that held the most pods and how many.
    """

    fits: bool
    assignments: dict[str, str]
    message: str
    domain: str | None = None
    best_domain: str | None = None
    best_count: int = 0
    exclusions: dict[str, int] = field(default_factory=dict)


def is_ready(node: dict) -> bool:
    """Return True when the node's Ready condition is True (a node without one is not ready)."""
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def _tolerates(toleration: dict, taint: dict) -> bool:
    """Return True when one toleration matches one taint (core/v1 ToleratesTaint semantics)."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    key = toleration.get("key", "")
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    # An empty key with Equal is invalid upstream; treat it as matching nothing rather than everything.
    return bool(key) and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(node: dict, tolerations: Iterable[dict]) -> dict | None:
    """Return the first NoSchedule/NoExecute taint of `node` no toleration matches, or None."""
    taints = (node.get("spec") or {}).get("taints")
    if not taints:
        return None
    tolerations = list(tolerations)
    for taint in taints:
        if taint.get("effect") not in _BLOCKING_EFFECTS:
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return taint
    return None


def free_resources(nodes: list[dict], bound_pods: list[dict]) -> dict[str, dict[str, int]]:
    """Return node name -> free milli-units (allocatable minus requests of non-terminal pods bound to it)."""
    free = {n["metadata"]["name"]: node_allocatable(n) for n in nodes}
    for pod in bound_pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or node_name not in free:
            continue
        if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            continue
        if (pod.get("metadata") or {}).get("deletionTimestamp") and not (pod.get("metadata") or {}).get(
            "finalizers"
        ):
            continue
        left = free[node_name]
        for name, amount in pod_requests(pod).items():
            left[name] = left.get(name, 0) - amount
    return free


def _shape_key(requests: dict[str, int]) -> tuple:
    """Sort key putting the biggest pods first: GPUs, then cpu, then memory, then the rest by name."""
    others = tuple(sorted((k, v) for k, v in requests.items() if k not in TRACKED))
    return tuple(-requests.get(r, 0) for r in TRACKED) + tuple((k, -v) for k, v in others)


def _fits(free: dict[str, int], requests: dict[str, int]) -> bool:
    return all(free.get(name, 0) >= amount for name, amount in requests.items() if amount > 0)


def _place_in(node_names: list[str], free: dict[str, dict[str, int]], buckets: list[tuple[dict, list[str]]]):
    """First fit node by node; return (assignments, placed count). `free` is not modified."""
    remaining = [(req, deque(names)) for req, names in buckets]
    assignments: dict[str, str] = {}
    for node_name in node_names:
        smallest = next((req for req, names in reversed(remaining) if names), None)
        if smallest is not None and not _fits(free[node_name], smallest):
            continue  # cannot take even the smallest remaining pod: skip the copy
        left = dict(free[node_name])
        for requests, names in remaining:
            while names and _fits(left, requests):
                assignments[names.popleft()] = node_name
                for resource, amount in requests.items():
                    left[resource] = left.get(resource, 0) - amount
        if all(not names for _, names in remaining):
            break
    return assignments, len(assignments)


def _plural(count: int, singular: str, plural: str) -> str:
    return singular if count == 1 else plural


def _exclusion_text(exclusions: dict[str, int]) -> str:
    """Render exclusion counts in a fixed order, e.g. '2 nodes are cordoned, 1 not ready, 40 have insufficient …'."""
    parts = []
    fixed = [
        ("cordoned", "is cordoned", "are cordoned"),
        ("not ready", "is not ready", "are not ready"),
        ("untolerated taint", "has an untolerated taint", "have an untolerated taint"),
        ("node selector", "does not match the node selector", "do not match the node selector"),
    ]
    for key, one, many in fixed:
        if exclusions.get(key):
            parts.append((exclusions[key], one, many))
    for key in sorted(k for k in exclusions if k.startswith("missing label ")):
        label = key.removeprefix("missing label ")
        parts.append((exclusions[key], f"lacks the label {label}", f"lack the label {label}"))
    resource_keys = [f"insufficient {r}" for r in TRACKED]
    resource_keys += sorted(k for k in exclusions if k.startswith("insufficient ") and k not in resource_keys)
    for key in resource_keys:
        if exclusions.get(key):
            parts.append((exclusions[key], f"has {key}", f"have {key}"))
    rendered = []
    for index, (count, one, many) in enumerate(parts):
        verb = one if count == 1 else many
        if index == 0:
            rendered.append(f"{count} {_plural(count, 'node', 'nodes')} {verb}")
        else:
            # Later clauses drop the copula, as in kube-scheduler/Kueue messages: "…, 1 not ready, …".
            rendered.append(f"{count} {verb.removeprefix('is ').removeprefix('are ')}")
    return ", ".join(rendered)


def _short_level(topology_key: str) -> str:
    """'topology.kubernetes.io/rack' -> 'rack'; 'cloud.provider.com/topology-block' -> 'topology-block'."""
    return topology_key.rsplit("/", 1)[-1]


def try_place(
    pods: list[dict],
    nodes: list[dict],
    bound_pods: list[dict],
    topology_key: str | None,
    *,
    domain: str | None = None,
    free: dict[str, dict[str, int]] | None = None,
) -> PlacementAttempt:
    """Try to place all of `pods` (all-or-nothing) on `nodes`, given the pods already bound there.

    `topology_key`: when set, every pod must land on nodes sharing one value of that node label. `domain`
    restricts the attempt to that one value (used when part of a group is already bound). `free` (from
    `free_resources`, not modified) lets a caller placing many groups skip recomputing it from `bound_pods`. Returns a
    PlacementAttempt; never raises on infeasible input, only on malformed quantities (ValueError).
    """
    total = len(nodes)
    if not pods:
        return PlacementAttempt(True, {}, "no pods to place", domain=domain)
    if free is None:
        free = free_resources(nodes, bound_pods)
    shapes: dict[tuple, tuple[dict, list[str]]] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        requests = pod_requests(pod)
        key = _shape_key(requests)
        shapes.setdefault(key, (requests, []))[1].append(pod["metadata"]["name"])
    buckets = [shapes[k] for k in sorted(shapes)]
    smallest = buckets[-1][0]
    # Filters use the first pod's tolerations and selector: a PodGroup's pods come from one template per rJob,
    # and a node that fails them for any pod cannot host the whole gang anyway in the common case.
    spec = pods[0].get("spec") or {}
    tolerations = spec.get("tolerations") or []
    selector = spec.get("nodeSelector") or {}

    exclusions: dict[str, int] = {}
    domains: dict[str, list[str]] = {}
    available = 0
    needed = [(r, smallest[r]) for r in TRACKED if smallest.get(r, 0) > 0]
    needed += sorted((r, a) for r, a in smallest.items() if r not in TRACKED and a > 0)
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        reason = None
        if not is_ready(node):
            reason = "not ready"
        elif (node.get("spec") or {}).get("unschedulable"):
            reason = "cordoned"
        elif untolerated_taint(node, tolerations) is not None:
            reason = "untolerated taint"
        elif selector and any(labels.get(k) != v for k, v in selector.items()):
            reason = "node selector"
        elif topology_key and topology_key not in labels:
            reason = f"missing label {topology_key}"
        elif topology_key and domain is not None and labels[topology_key] != domain:
            reason = "outside the group's domain"
        else:
            left = free[name]
            for resource, amount in needed:
                if left.get(resource, 0) < amount:
                    reason = f"insufficient {resource}"
                    break
        if reason:
            exclusions[reason] = exclusions.get(reason, 0) + 1
            continue
        available += 1
        domains.setdefault(labels[topology_key] if topology_key else "", []).append(name)

    need = len(pods)
    best_domain, best_count = None, 0
    for value in sorted(domains):
        assignments, placed = _place_in(domains[value], free, buckets)
        if placed == need:
            used = len(set(assignments.values()))
            where = f'{_short_level(topology_key)} "{value}"' if topology_key else f"{used} nodes"
            return PlacementAttempt(
                True,
                assignments,
                f"placed {need} {_plural(need, 'pod', 'pods')} in {where}",
                domain=value if topology_key else None,
                best_domain=value if topology_key else None,
                best_count=placed,
                exclusions=exclusions,
            )
        if placed > best_count:
            best_domain, best_count = value, placed

    head = f"{available}/{total} nodes are available"
    if topology_key:
        level = _short_level(topology_key)
        if best_domain is not None:
            detail = (f'topology "{topology_key}": no domain fits {need} pods '
                      f'(best {level} "{best_domain}" fits {best_count})')
        elif domain is not None:
            detail = f'topology "{topology_key}": {level} "{domain}" of the group has no room for {need} pods'
        else:
            detail = f'topology "{topology_key}": no domain fits {need} pods (no {level} can take a pod)'
    else:
        detail = f"the cluster fits {best_count} of {need} pods"
    excluded = {k: v for k, v in exclusions.items() if k != "outside the group's domain"}
    tail = _exclusion_text(excluded)
    message = f"{head}: {detail}" + (f"; {tail}" if tail else "")
    return PlacementAttempt(
        False,
        {},
        message,
        domain=None,
        best_domain=best_domain if topology_key else None,
        best_count=best_count,
        exclusions=exclusions,
    )
