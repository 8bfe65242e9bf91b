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

    `fits`: every pod got a node; `assignments`: pod name -> node name (empty unless fits); `message`: on failure
    kube-scheduler's FitError text ("0/64 nodes are available: 21 Insufficient nvidia.com/gpu, …."), with the
    gang's all-or-nothing verdict as one more reason; `domain`: the chosen topology domain value (None without a key or
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


# kube-scheduler's filter reasons (noderesources/fit.go, tainttoleration, nodeunschedulable, nodeaffinity).
NOT_READY_REASON = "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
CORDONED_REASON = "node(s) were unschedulable"
SELECTOR_REASON = "node(s) didn't match Pod's node affinity/selector"
NO_VICTIMS_REASON = "No preemption victims found for incoming pod"


def fit_error(total: int, reasons: dict[str, int]) -> str:
    """Return kube-scheduler's FitError text: `0/<total> nodes are available: <count> <reason>, ….`

    As `FitError.Error()` writes it (NoNodeAvailableMsg = "0/%v nodes are available"): the "<count> <reason>"
    strings sorted as strings and joined with ", ", then a full stop.
    """
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items() if count)
    return f"0/{total} nodes are available: {', '.join(parts)}." if parts else f"0/{total} nodes are available."


def no_victims_message(total: int) -> str:
    """Return DefaultPreemption's PostFilter text when no lower-priority pods can make room (after "preemption: ")."""
    return fit_error(total, {NO_VICTIMS_REASON: total})


def _taint_reason(taint: dict) -> str:
    return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"


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
    reasons: dict[str, int] = {}  # kube-scheduler's reason text -> nodes
    domains: dict[str, list[str]] = {}
    available = 0
    needed = [(r, smallest[r]) for r in TRACKED if smallest.get(r, 0) > 0]
    needed += sorted((r, a) for r, a in smallest.items() if r not in TRACKED and a > 0)
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        reason = None
        taint = untolerated_taint(node, tolerations) if is_ready(node) else None
        if not is_ready(node):
            reason, texts = "not ready", [NOT_READY_REASON]
        elif (node.get("spec") or {}).get("unschedulable"):
            reason, texts = "cordoned", [CORDONED_REASON]
        elif taint is not None:
            reason, texts = "untolerated taint", [_taint_reason(taint)]
        elif selector and any(labels.get(k) != v for k, v in selector.items()):
            reason, texts = "node selector", [SELECTOR_REASON]
        elif topology_key and topology_key not in labels:
            reason, texts = f"missing label {topology_key}", [f"node(s) didn't have the topology label {topology_key}"]
        elif topology_key and domain is not None and labels[topology_key] != domain:
            reason = "outside the group's domain"
            texts = [f"node(s) were outside the gang's {_short_level(topology_key)} \"{domain}\""]
        else:
            left = free[name]
            # Like NodeResourcesFit, every insufficient resource of the node is a reason of its own.
            short = [resource for resource, amount in needed if left.get(resource, 0) < amount]
            if short:
                reason, texts = f"insufficient {short[0]}", [f"Insufficient {resource}" for resource in short]
        if reason:
            exclusions[reason] = exclusions.get(reason, 0) + 1
            for text in texts:
                reasons[text] = reasons.get(text, 0) + 1
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

    # Nodes that pass every filter but cannot take the whole gang (all-or-nothing, in one domain).
    if topology_key:
        level = _short_level(topology_key)
        if best_domain is not None:
            gang = f'no domain fits {need} pods (best {level} "{best_domain}" fits {best_count})'
        elif domain is not None:
            gang = f'{level} "{domain}" of the group has no room for {need} pods'
        else:
            gang = f"no domain fits {need} pods (no {level} can take a pod)"
    else:
        gang = f"the cluster fits {best_count} of {need} pods"
    if available:
        reasons[f"node(s) didn't fit the gang: {gang}"] = available
    message = fit_error(total, reasons)
    return PlacementAttempt(
        False,
        {},
        message,
        domain=None,
        best_domain=best_domain if topology_key else None,
        best_count=best_count,
        exclusions=exclusions,
    )
