"""Kueue v1beta2 objects read into plain rows: ClusterQueues, LocalQueues, flavors, cohorts and Workloads.

Every reader takes the object as the API server sent it and returns a plain dataclass; a field of the wrong shape
reads as absent (never an exception), because a cluster may serve objects the portal has never seen. Quantities are
floats in the resource's natural unit (GPUs and CPUs as counts, memory in bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainer_portal.placement.quantities import QuantityError, parse_quantity

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
MAX_TEXT = 2000


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _str(value: object, limit: int = 253) -> str:
    # NUL is refused by PostgreSQL text columns; a lone surrogate by every UTF-8 encoder.
    if not isinstance(value, str):
        return ""
    return value[:limit].replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def quantity(value: object) -> float | None:
    """Return a Kubernetes quantity as a float, or None when it is absent or not a quantity."""
    if value is None:
        return None
    try:
        return float(parse_quantity(value))
    except (QuantityError, ValueError, OverflowError, ZeroDivisionError):
        return None


def meta(obj: dict) -> dict:
    """Return the object's metadata (empty when missing)."""
    return _dict(obj.get("metadata"))


def key_of(obj: dict) -> str:
    """Return ``namespace/name`` (or ``name`` for cluster-scoped objects)."""
    m = meta(obj)
    namespace, name = _str(m.get("namespace"), 63), _str(m.get("name"))
    return f"{namespace}/{name}" if namespace else name


def conditions(obj: dict) -> list[dict]:
    """Return the object's conditions reduced to type, status, reason, message and lastTransitionTime."""
    out = []
    for c in _list(_dict(obj.get("status")).get("conditions")):
        c = _dict(c)
        if _str(c.get("type")):
            out.append({"type": _str(c.get("type")), "status": _str(c.get("status"), 16),
                        "reason": _str(c.get("reason")), "message": _str(c.get("message"), MAX_TEXT),
                        "lastTransitionTime": _str(c.get("lastTransitionTime"), 64)})
    return out


def _condition_true(obj: dict, kind: str) -> bool:
    return any(c["type"] == kind and c["status"] == "True" for c in conditions(obj))


@dataclass(frozen=True)
class Quota:
    """One (flavor, resource) of a ClusterQueue: nominal quota and limits (None: unlimited / all of nominal)."""

    flavor: str
    resource: str
    nominal: float
    borrowing_limit: float | None = None
    lending_limit: float | None = None


@dataclass(frozen=True)
class ClusterQueueRow:
    """A ClusterQueue's spec and status, flattened."""

    name: str
    cohort: str = ""
    strategy: str = "BestEffortFIFO"
    weight: float = 1.0
    quotas: tuple[Quota, ...] = ()
    preemption: dict = field(default_factory=dict)
    pending: int = 0
    reserving: int = 0
    admitted: int = 0
    usage: dict[tuple[str, str], float] = field(default_factory=dict)  # (flavor, resource) -> used
    borrowed: dict[tuple[str, str], float] = field(default_factory=dict)
    weighted_share: float = 0.0
    conditions: tuple[dict, ...] = ()


def _flavor_usage(status: dict, key: str) -> tuple[dict, dict]:
    used, borrowed = {}, {}
    for flavor in _list(status.get(key)):
        flavor = _dict(flavor)
        name = _str(flavor.get("name"))
        for resource in _list(flavor.get("resources")):
            resource = _dict(resource)
            rname = _str(resource.get("name"))
            if not name or not rname:
                continue
            used[(name, rname)] = quantity(resource.get("total")) or 0.0
            borrowed[(name, rname)] = quantity(resource.get("borrowed")) or 0.0
    return used, borrowed


def cluster_queue(obj: dict) -> ClusterQueueRow:
    """Return the ClusterQueue ``obj`` as a row (missing or malformed fields read as defaults)."""
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    quotas = []
    for group in _list(spec.get("resourceGroups")):
        for flavor in _list(_dict(group).get("flavors")):
            flavor = _dict(flavor)
            fname = _str(flavor.get("name"))
            for resource in _list(flavor.get("resources")):
                resource = _dict(resource)
                rname = _str(resource.get("name"))
                if fname and rname:
                    quotas.append(Quota(fname, rname, quantity(resource.get("nominalQuota")) or 0.0,
                                        quantity(resource.get("borrowingLimit")),
                                        quantity(resource.get("lendingLimit"))))
    weight = quantity(_dict(spec.get("fairSharing")).get("weight"))
    used, borrowed = _flavor_usage(status, "flavorsReservation")
    share = _dict(status.get("fairSharing")).get("weightedShare")
    return ClusterQueueRow(
        name=_str(meta(obj).get("name")), cohort=_str(spec.get("cohortName") or spec.get("cohort")),
        strategy=_str(spec.get("queueingStrategy"), 32) or "BestEffortFIFO",
        weight=1.0 if weight is None else weight, quotas=tuple(quotas),
        preemption={_str(k, 64): _str(v, 64) for k, v in _dict(spec.get("preemption")).items() if _str(k, 64)},
        pending=_int(status.get("pendingWorkloads")),
        reserving=_int(status.get("reservingWorkloads")), admitted=_int(status.get("admittedWorkloads")),
        usage=used, borrowed=borrowed,
        weighted_share=float(share) if isinstance(share, (int, float)) and not isinstance(share, bool) else 0.0,
        conditions=tuple(conditions(obj)))


@dataclass(frozen=True)
class LocalQueueRow:
    """A LocalQueue, flattened."""

    namespace: str
    name: str
    cluster_queue: str
    pending: int = 0
    reserving: int = 0
    admitted: int = 0
    usage: dict[tuple[str, str], float] = field(default_factory=dict)
    conditions: tuple[dict, ...] = ()


def local_queue(obj: dict) -> LocalQueueRow:
    """Return the LocalQueue ``obj`` as a row."""
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    used, _ = _flavor_usage(status, "flavorsReservation")
    return LocalQueueRow(namespace=_str(meta(obj).get("namespace"), 63), name=_str(meta(obj).get("name")),
                         cluster_queue=_str(spec.get("clusterQueue")), pending=_int(status.get("pendingWorkloads")),
                         reserving=_int(status.get("reservingWorkloads")),
                         admitted=_int(status.get("admittedWorkloads")), usage=used,
                         conditions=tuple(conditions(obj)))


def flavor_labels(obj: dict) -> dict[str, str]:
    """Return a ResourceFlavor's nodeLabels (string values only)."""
    labels = _dict(_dict(obj.get("spec")).get("nodeLabels"))
    return {_str(k): _str(v, 63) for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


PENDING, ADMITTED, INACTIVE, FINISHED = "pending", "admitted", "inactive", "finished"


@dataclass(frozen=True)
class WorkloadRow:
    """A Kueue Workload: its queue, state, priority, what it asks for and the TrainJob that owns it."""

    namespace: str
    name: str
    uid: str
    local_queue: str
    state: str
    priority: int
    created: str
    queued_at: str
    cluster_queue: str = ""  # from status.admission (admitted ones) — pending ones take it from their LocalQueue
    reason: str = ""
    message: str = ""
    job_kind: str = ""
    job_name: str = ""
    job_uid: str = ""
    requests: dict[str, float] = field(default_factory=dict)


def _requests(spec: dict) -> dict[str, float]:
    totals: dict[str, float] = {}
    for pod_set in _list(spec.get("podSets")):
        pod_set = _dict(pod_set)
        count = _int(pod_set.get("count"))
        pod = _dict(_dict(pod_set.get("template")).get("spec"))
        for container in _list(pod.get("containers")):
            requests = _dict(_dict(_dict(container).get("resources")).get("requests"))
            for resource, value in requests.items():
                amount = quantity(value)
                if _str(resource) and amount:
                    totals[_str(resource)] = totals.get(_str(resource), 0.0) + amount * count
    return totals


def workload(obj: dict) -> WorkloadRow:
    """Return the Workload ``obj`` as a row; the owning job comes from a controller ownerReference, else from the
    ``kueue.x-k8s.io/job-uid`` label."""
    m, spec = meta(obj), _dict(obj.get("spec"))
    if _condition_true(obj, "Finished"):
        state = FINISHED
    elif spec.get("active") is False:
        state = INACTIVE
    elif _condition_true(obj, "QuotaReserved"):
        state = ADMITTED
    else:
        state = PENDING
    reserved = next((c for c in conditions(obj) if c["type"] == "QuotaReserved"), None)
    owners = [_dict(o) for o in _list(m.get("ownerReferences"))]
    owner = next((o for o in owners if o.get("controller") is True), owners[0] if owners else {})
    labels = _dict(m.get("labels"))
    queued_at = _str(m.get("creationTimestamp"), 64)
    for c in conditions(obj):
        if c["type"] == "Evicted" and c["status"] == "True" and c["lastTransitionTime"]:
            queued_at = c["lastTransitionTime"]
    return WorkloadRow(
        namespace=_str(m.get("namespace"), 63), name=_str(m.get("name")), uid=_str(m.get("uid"), 64),
        local_queue=_str(spec.get("queueName")), state=state, priority=_int(spec.get("priority")),
        created=_str(m.get("creationTimestamp"), 64), queued_at=queued_at,
        cluster_queue=_str(_dict(_dict(obj.get("status")).get("admission")).get("clusterQueue")),
        reason=_str(reserved["reason"]) if reserved and state == PENDING else "",
        message=reserved["message"] if reserved and state == PENDING else "",
        job_kind=_str(owner.get("kind"), 64), job_name=_str(owner.get("name")),
        job_uid=_str(owner.get("uid"), 64) or _str(labels.get(JOB_UID_LABEL), 64), requests=_requests(spec))


def queue_order(rows: list[WorkloadRow]) -> list[WorkloadRow]:
    """Return pending workloads in Kueue's order (higher priority, earlier queue time, namespace, name)."""
    return sorted(rows, key=lambda w: (-w.priority, w.queued_at, w.namespace, w.name))


@dataclass(frozen=True)
class Position:
    """A pending workload's 0-based positions as the visibility API reported them."""

    in_cluster_queue: int
    in_local_queue: int


def positions_from_summary(summary: object) -> dict[tuple[str, str], Position]:
    """Return ``{(namespace, name): Position}`` from one PendingWorkloadsSummary page (bad items skipped)."""
    out = {}
    for item in _list(_dict(summary).get("items")):
        item = _dict(item)
        m = _dict(item.get("metadata"))
        cq, lq = item.get("positionInClusterQueue"), item.get("positionInLocalQueue")
        if isinstance(cq, int) and isinstance(lq, int) and _str(m.get("name")):
            out[(_str(m.get("namespace"), 63), _str(m.get("name")))] = Position(cq, lq)
    return out


def summary_size(summary: object) -> int:
    """Return how many items a PendingWorkloadsSummary page holds."""
    return len(_list(_dict(summary).get("items")))


# -- quota arithmetic ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """One (flavor, resource) of a ClusterQueue: used / nominal / borrowed / lendable, and what it may borrow."""

    flavor: str
    resource: str
    nominal: float
    used: float
    borrowed: float
    lendable: float
    borrowable: float
    borrowing_limit: float | None
    lending_limit: float | None


def usage_lines(queue: ClusterQueueRow, cohort_members: list[ClusterQueueRow]) -> list[Usage]:
    """Return the usage of ``queue`` per flavor and resource (``cohort_members`` may include ``queue`` itself).

    The cohort's free pool of a (flavor, resource) is what its members could lend (each its unused nominal quota
    within its lending limit) less what members borrow now. ``lendable`` is what the cohort could still take from
    ``queue``: its own unused, lendable quota, within that pool. ``borrowable`` is what ``queue`` could borrow now:
    the pool less its own part, within its borrowing limit less what it borrows already (0 without a cohort)."""
    members = {m.name: m for m in cohort_members if queue.cohort and m.cohort == queue.cohort}
    members[queue.name] = queue
    lines = []
    for quota in queue.quotas:
        k = (quota.flavor, quota.resource)
        used = queue.usage.get(k, 0.0)
        borrowed = _borrowed(queue, quota, used)
        own = _potential(quota, used)
        lendable = borrowable = 0.0
        if queue.cohort:
            potential = borrowed_total = 0.0
            for member in members.values():
                for q in member.quotas:
                    if (q.flavor, q.resource) == k:
                        member_used = member.usage.get(k, 0.0)
                        potential += _potential(q, member_used)
                        borrowed_total += _borrowed(member, q, member_used)
            pool = max(potential - borrowed_total, 0.0)
            lendable = min(own, pool)
            borrowable = max(pool - own, 0.0)
            if quota.borrowing_limit is not None:
                borrowable = min(borrowable, max(quota.borrowing_limit - borrowed, 0.0))
        lines.append(Usage(quota.flavor, quota.resource, quota.nominal, used, borrowed, lendable, borrowable,
                           quota.borrowing_limit, quota.lending_limit))
    return lines


def _borrowed(queue: ClusterQueueRow, quota: Quota, used: float) -> float:
    """Return what ``queue`` borrows of (flavor, resource): Kueue's status when given, else use above nominal."""
    return queue.borrowed.get((quota.flavor, quota.resource), max(used - quota.nominal, 0.0))


def _potential(quota: Quota, used: float) -> float:
    """Return the unused part of the nominal quota the queue lets its cohort use."""
    limit = quota.nominal if quota.lending_limit is None else min(quota.lending_limit, quota.nominal)
    return max(min(limit, quota.nominal - min(used, quota.nominal)), 0.0)
