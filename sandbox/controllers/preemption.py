"""Gang preemption for the simulated scheduler: pure functions choosing whole gangs to evict.

Rules (kube-scheduler's DefaultPreemption, lifted to gangs as the 1.37 workload-aware preemption does): only
holders of strictly lower priority are candidates; a holder is a whole admitted gang (a PodGroup and every bound pod
of it) or one bound pod outside any PodGroup, and it is evicted whole or not at all. Candidates are taken lowest
priority first (the most recently created first among equals) until the preemptor fits; then, highest priority
first, every victim the preemptor can do without is reprieved. No fit even with every candidate gone means no
preemption at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sandbox.controllers.resources import pod_requests

DEFAULT_PRIORITY = 0


@dataclass(frozen=True)
class Holder:
    """Something holding capacity that preemption may evict as a unit."""

    key: str  # "podgroup:<ns>/<name>" or "pod:<ns>/<name>"
    priority: int
    order: tuple  # FIFO key; larger = newer
    pods: tuple[dict, ...]  # the bound pods evicted with it


def resolve_priority(pod_spec: dict, classes: dict[str, dict]) -> int:
    """Return a pod's (or PodGroup's) priority: `priority`, else its PriorityClass value, else the global default.

    Raises KeyError naming the class when `priorityClassName` names a PriorityClass that does not exist.
    """
    if isinstance(pod_spec.get("priority"), int):
        return pod_spec["priority"]
    name = pod_spec.get("priorityClassName")
    if name:
        if name not in classes:
            raise KeyError(name)
        return int(classes[name].get("value") or 0)
    defaults = [c for c in classes.values() if c.get("globalDefault")]
    return int(defaults[0].get("value") or 0) if defaults else DEFAULT_PRIORITY


def _release(free: dict[str, dict[str, int]], pods: tuple[dict, ...]) -> dict[str, dict[str, int]]:
    """Return a copy of `free` with the requests of `pods` handed back to their nodes."""
    result = {node: dict(left) for node, left in free.items()}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node in result:
            for resource, amount in pod_requests(pod).items():
                result[node][resource] = result[node].get(resource, 0) + amount
    return result


def choose_victims(priority: int, holders: list[Holder], free: dict[str, dict[str, int]],
                   fits: Callable[[dict[str, dict[str, int]]], bool]) -> list[Holder] | None:
    """Return the holders to evict so that `fits(free after eviction)` holds, or None when no eviction helps.

    Never returns a holder of priority >= `priority`; returns [] only if it already fits.
    """
    if fits(free):
        return []
    candidates = sorted((h for h in holders if h.priority < priority), key=lambda h: h.order, reverse=True)
    candidates.sort(key=lambda h: h.priority)  # stable: lowest priority first, newest first among equals
    victims: list[Holder] = []
    for holder in candidates:
        victims.append(holder)
        if fits(_release(free, tuple(p for v in victims for p in v.pods))):
            break
    else:
        return None
    for holder in sorted(victims, key=lambda h: (-h.priority, h.order)):
        rest = [v for v in victims if v is not holder]
        if fits(_release(free, tuple(p for v in rest for p in v.pods))):
            victims = rest
    return victims
