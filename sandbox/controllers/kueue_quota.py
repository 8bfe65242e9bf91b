"""Kueue's quota arithmetic, pure: flavor assignment of a Workload in a ClusterQueue, cohort borrowing and lending,
and the preemption candidates that would make room (no I/O; the `kueue` controller feeds it its caches).

Amounts are milli-units (`sandbox.controllers.resources.parse_quantity`). Messages are worded as Kueue 0.19's flavor
assigner words them ("couldn't assign flavors to pod set node: insufficient unused quota for nvidia.com/gpu in flavor
default-flavor, 8 more needed").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox.controllers.resources import parse_quantity

INFINITE = 10**30

# QuotaReserved=False reasons of Kueue 0.19 (UnadmittedWorkloadsObservability on).
WAITING = "WaitingForQuota"
EXCEEDS = "ExceedsMaxQuota"
NO_FLAVOR = "NoMatchingFlavor"
MISCONFIGURED = "Misconfigured"
INADMISSIBLE = (EXCEEDS, NO_FLAVOR, MISCONFIGURED)


def format_quantity(resource: str, milli: int) -> str:
    """Return a milli-unit amount as Kubernetes would print it ("16", "500m", "256Gi")."""
    if milli % 1000:
        return f"{milli}m"
    units = milli // 1000
    if resource == "memory" and units and units % 2**30 == 0:
        return f"{units // 2**30}Gi"
    return str(units)


@dataclass(frozen=True)
class Quota:
    """One flavor × resource of a ClusterQueue."""

    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None

    @property
    def lendable(self) -> int:
        """Return what the queue lends to its cohort (lendingLimit, else all its nominal quota)."""
        return self.nominal if self.lending_limit is None else min(self.lending_limit, self.nominal)

    @property
    def guaranteed(self) -> int:
        """Return the part of the nominal quota the cohort cannot borrow."""
        return self.nominal - self.lendable


@dataclass
class Queue:
    """A ClusterQueue as the arithmetic sees it: resource groups (covered resources, ordered flavors) and quotas."""

    name: str
    cohort: str | None
    groups: list[tuple[tuple[str, ...], tuple[str, ...]]]  # (coveredResources, flavor names in order)
    quotas: dict[tuple[str, str], Quota]  # (flavor, resource) -> Quota
    strategy: str = "BestEffortFIFO"
    within: str = "Never"
    reclaim: str = "Never"
    problem: str | None = None  # why the ClusterQueue is inactive

    @staticmethod
    def from_object(cq: dict, flavors: dict[str, dict]) -> Queue:
        """Return the Queue of a ClusterQueue object; `problem` names why it is inactive (missing flavors,
        malformed quantities)."""
        spec = cq.get("spec") or {}
        groups, quotas, problem = [], {}, None
        for group in spec.get("resourceGroups") or []:
            names = []
            for flavor in group.get("flavors") or []:
                names.append(flavor.get("name", ""))
                if flavor.get("name") not in flavors and problem is None:
                    problem = (f"ClusterQueue {cq['metadata']['name']} is inactive: flavor {flavor.get('name')} "
                               f"not found")
                for resource in flavor.get("resources") or []:
                    try:
                        quotas[(flavor.get("name", ""), resource.get("name", ""))] = Quota(
                            parse_quantity(resource.get("nominalQuota", 0)),
                            None if resource.get("borrowingLimit") is None
                            else parse_quantity(resource["borrowingLimit"]),
                            None if resource.get("lendingLimit") is None else parse_quantity(resource["lendingLimit"]))
                    except ValueError as error:
                        problem = problem or f"ClusterQueue {cq['metadata']['name']} is inactive: {error}"
            groups.append((tuple(group.get("coveredResources") or ()), tuple(names)))
        preemption = spec.get("preemption") or {}
        return Queue(cq["metadata"]["name"], spec.get("cohortName") or None, groups, quotas,
                     spec.get("queueingStrategy") or "BestEffortFIFO", preemption.get("withinClusterQueue") or "Never",
                     preemption.get("reclaimWithinCohort") or "Never", problem)


@dataclass
class Usage:
    """Reserved quota: (ClusterQueue, flavor, resource) -> milli-units."""

    amounts: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def get(self, queue: str, flavor: str, resource: str) -> int:
        """Return the amount reserved."""
        return self.amounts.get((queue, flavor, resource), 0)

    def add(self, queue: str, flavors: dict[str, str], requests: dict[str, int], sign: int = 1) -> None:
        """Reserve (sign 1) or release (sign -1) `requests` in the assigned `flavors` ({resource: flavor})."""
        for resource, amount in requests.items():
            if resource in flavors:
                key = (queue, flavors[resource], resource)
                self.amounts[key] = self.amounts.get(key, 0) + sign * amount

    def copy(self) -> Usage:
        """Return an independent copy."""
        return Usage(dict(self.amounts))


class Cohorts:
    """The ClusterQueues by cohort, answering what a queue may use now and at most."""

    def __init__(self, queues: dict[str, Queue]):
        self.queues = queues
        self.members: dict[str, list[Queue]] = {}
        for queue in queues.values():
            if queue.cohort:
                self.members.setdefault(queue.cohort, []).append(queue)

    def limits(self, queue: Queue, flavor: str, resource: str, usage: Usage) -> tuple[int, int]:
        """Return (available now, maximum ever) of `resource` in `flavor` for `queue`, borrowing counted."""
        quota = queue.quotas.get((flavor, resource))
        if quota is None:
            return 0, 0
        used = usage.get(queue.name, flavor, resource)
        cap = INFINITE if quota.borrowing_limit is None else quota.nominal + quota.borrowing_limit
        if not queue.cohort:
            return quota.nominal - used, quota.nominal
        pool = pool_used = 0
        for member in self.members.get(queue.cohort, ()):
            other = member.quotas.get((flavor, resource))
            if other is None:
                continue
            pool += other.lendable
            pool_used += max(0, usage.get(member.name, flavor, resource) - other.guaranteed)
        now = max(0, quota.guaranteed - used) + pool - pool_used
        return min(now, cap - used), min(quota.guaranteed + pool, cap)

    def weighted_share(self, queue: str, usage: Usage, weight: float = 1.0) -> int:
        """Return Kueue's fair-sharing `weightedShare`: the largest share, per mille, of what the cohort lends that
        the queue borrows (any flavor and resource), divided by its weight (0 without a cohort or borrowing)."""
        own = self.queues[queue]
        if not own.cohort:
            return 0
        share = 0
        for flavor, resource in own.quotas:
            lendable = sum(m.quotas[(flavor, resource)].lendable for m in self.members.get(own.cohort, ())
                           if (flavor, resource) in m.quotas)
            borrowed = self.borrowing(queue, flavor, resource, usage)
            if borrowed and lendable:
                share = max(share, borrowed * 1000 // lendable)
        if weight <= 0:
            return INFINITE if share else 0
        return int(share / weight)

    def borrowing(self, queue: str, flavor: str, resource: str, usage: Usage) -> int:
        """Return how much of `resource` in `flavor` the queue uses beyond its nominal quota."""
        quota = self.queues[queue].quotas.get((flavor, resource))
        return 0 if quota is None else max(0, usage.get(queue, flavor, resource) - quota.nominal)


@dataclass
class Assignment:
    """The outcome of assigning flavors to a Workload's pod sets."""

    fits: bool
    reason: str = ""
    message: str = ""
    flavors: list[dict[str, str]] = field(default_factory=list)  # per pod set: {resource: flavor}
    borrows: bool = False


def _matches(flavor: dict, node_selector: dict) -> bool:
    labels = (flavor.get("spec") or {}).get("nodeLabels") or {}
    return all(node_selector.get(key, value) == value for key, value in labels.items())


def assign(queue: Queue, cohorts: Cohorts, flavors: dict[str, dict], pod_sets: list[tuple[str, dict[str, int], dict]],
           usage: Usage) -> Assignment:
    """Assign flavors to `pod_sets` ([(name, total requests, nodeSelector)]) in `queue` given `usage`.

    Returns an Assignment: `fits` with the flavors per pod set, or the QuotaReserved=False reason and message
    (WaitingForQuota when it would fit once quota frees, ExceedsMaxQuota when it never fits as configured,
    NoMatchingFlavor when no flavor can hold it, Misconfigured when the ClusterQueue is inactive).
    """
    if queue.problem:
        return Assignment(False, MISCONFIGURED, queue.problem)
    trial = usage.copy()
    chosen: list[dict[str, str]] = []
    borrows = False
    for name, requests, selector in pod_sets:
        picked: dict[str, str] = {}
        for resource, amount in sorted(requests.items()):
            if amount <= 0 or resource in picked:
                continue
            group = next((g for g in queue.groups if resource in g[0]), None)
            if group is None:
                return Assignment(False, NO_FLAVOR, f"couldn't assign flavors to pod set {name}: resource {resource} "
                                                    f"unavailable in ClusterQueue")
            wanted = {r: requests.get(r, 0) for r in group[0] if requests.get(r, 0) > 0}
            notes, never, matched = [], True, False
            for flavor in group[1]:
                if not _matches(flavors.get(flavor) or {}, selector):
                    notes.append(f"flavor {flavor} doesn't match node affinity")
                    continue
                matched = True
                ok, flavor_never = True, False
                for res, need in sorted(wanted.items()):
                    available, maximum = cohorts.limits(queue, flavor, res, trial)
                    if need > maximum:
                        ok, flavor_never = False, True
                        notes.append(f"insufficient quota for {res} in flavor {flavor}, request > maximum capacity "
                                     f"({format_quantity(res, need)} > {format_quantity(res, maximum)})")
                        break
                    if need > available:
                        ok = False
                        notes.append(f"insufficient unused quota for {res} in flavor {flavor}, "
                                     f"{format_quantity(res, need - max(available, 0))} more needed")
                        break
                never = never and flavor_never
                if ok:
                    for res in wanted:
                        picked[res] = flavor
                        quota = queue.quotas[(flavor, res)]
                        borrows = borrows or trial.get(queue.name, flavor, res) + wanted[res] > quota.nominal
                    trial.add(queue.name, dict.fromkeys(wanted, flavor), wanted)
                    break
            else:
                reason = NO_FLAVOR if not matched else (EXCEEDS if never else WAITING)
                return Assignment(False, reason, f"couldn't assign flavors to pod set {name}: {', '.join(notes)}")
        chosen.append(picked)
    return Assignment(True, flavors=chosen, borrows=borrows)
