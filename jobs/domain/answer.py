"""The one answer a user reads for a waiting TrainJob: the tracker's state and reason, joined to what Kueue's
queues say about it (quota, position) when a provider on ``trainer_portal.jobfacts`` knows.

"Waiting for quota in cq-research: needs 32 GPUs, 16 free of 64 (48 in use, 8 borrowable from the cohort);
position 3 of 7 in team-a's queue." Once quota is reserved the stored answer (startup order, placement) stands and
only the queue line is added. Without queue facts the stored message (Kueue's own words) stands.

Pure: no framework (the facts are plain data).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from trainer_portal.jobfacts import QueueFacts, QuotaLine

from . import states as st
from .reasons import MAX_SHORT, short_reason

# States in which quota is what holds the job: the message is about the queue.
QUOTA_STATES = frozenset({st.QUEUED, st.INADMISSIBLE})
_GIB = 1024 ** 3
_UNITS = {"nvidia.com/gpu": "GPU", "amd.com/gpu": "GPU", "gpu": "GPU", "cpu": "CPU", "pods": "pod"}


@dataclass(frozen=True)
class Answer:
    """What the list, the page and the API show: ``reason`` short, ``message`` full, ``queue_line`` the job's
    place in line ("position 3 of 7 in team-a's queue", "" when unknown or not queued)."""

    state: str
    reason_code: str
    reason: str
    message: str
    queue_line: str = ""


def amount(resource: str, value: float) -> str:
    """Return ``value`` of ``resource`` in its natural unit: "32 GPUs", "1 CPU", "512 GiB", "3 example.com/foo"."""
    if resource == "memory" or resource.endswith("memory") or resource == "ephemeral-storage":
        gib = value / _GIB
        return f"{_number(gib)} GiB"
    unit = _UNITS.get(resource)
    text = _number(value)
    if unit is None:
        return f"{text} {resource}"
    return f"{text} {unit}{'' if value == 1 else 's'}"


def bare(resource: str, value: float) -> str:
    """Return ``value`` of ``resource`` in the unit :func:`amount` uses, without the unit ("16", "1,024")."""
    if resource == "memory" or resource.endswith("memory") or resource == "ephemeral-storage":
        return _number(value / _GIB)
    return _number(value)


def _number(value: float) -> str:
    if not math.isfinite(value):
        return "?"
    if abs(value - round(value)) < 1e-9:
        return f"{round(value):,}"
    return f"{value:,.1f}"


def binding_line(lines: tuple[QuotaLine, ...]) -> QuotaLine | None:
    """Return the quota line that holds the job: the first (GPUs before other resources) whose request exceeds
    what is free plus what the cohort could lend; else the tightest one; None without lines."""
    asked = [line for line in lines if line.requested > 0]
    if not asked:
        return None

    def key(line: QuotaLine) -> tuple:
        room = line.free + line.borrowable
        short = line.requested > room
        ratio = line.requested / room if room > 0 else math.inf
        return (not short, _UNITS.get(line.resource) != "GPU", -ratio, line.resource, line.flavor)

    return min(asked, key=key)


def position_text(queue: QueueFacts, namespace: str) -> str:
    """Return "position 3 of 7 in team-a's queue" (LocalQueue), "position 3 of 40 in cq-research" (ClusterQueue),
    "position unknown" when the visibility API did not say."""
    if queue.position is None:
        return "position unknown"
    of = f" of {queue.pending_in_queue:,}" if queue.pending_in_queue else ""
    if queue.position_in == "ClusterQueue":
        where = queue.cluster_queue or "the ClusterQueue"
    else:
        where = f"{namespace}'s queue" if namespace else f"LocalQueue {queue.local_queue}"
    return f"position {queue.position:,}{of} in {where}"


def quota_text(state: str, queue: QueueFacts) -> str:
    """Return "Waiting for quota in cq: needs 32 GPUs, 16 free of 64 (48 in use, 8 borrowable from the cohort)"
    or, inadmissible, "Cannot be admitted in cq as configured: needs 24 GPUs, at most 16 (16 nominal, none
    borrowable from the cohort)"; "" when no quota line is known."""
    line = binding_line(queue.quota)
    if line is None:
        return ""
    where = queue.cluster_queue or f"LocalQueue {queue.local_queue}"
    flavor = f" ({line.flavor})" if line.flavor and len({q.flavor for q in queue.quota}) > 1 else ""
    # The unit once, on what the job needs; the queue's numbers follow in the same unit.
    need = amount(line.resource, line.requested)
    n = functools.partial(bare, line.resource)
    borrow = (f"{n(line.borrowable)} borrowable from the cohort" if line.borrowable
              else "nothing borrowable from the cohort")
    if state == st.INADMISSIBLE:
        return (f"Cannot be admitted in {where}{flavor} as configured: needs {need}, the queue holds at most "
                f"{n(line.nominal + line.borrowable)} ({n(line.nominal)} nominal, {borrow})")
    return (f"Waiting for quota in {where}{flavor}: needs {need}, {n(line.free)} free of {n(line.nominal)} "
            f"({n(line.used)} in use, {borrow})")


def answer_of(state: str, reason_code: str, message: str, queue: QueueFacts | None, *,
              namespace: str = "") -> Answer:
    """Return the answer for a job in ``state`` with the tracker's ``reason_code`` and ``message``, joined to its
    ``queue`` facts (None: the stored answer stands). Never raises for odd facts: they only drop the quota text."""
    base_short = short_reason(state, reason_code, message)
    if queue is None:
        return Answer(state, reason_code, base_short, message)
    line = position_text(queue, namespace)
    if state not in QUOTA_STATES:
        return Answer(state, reason_code, base_short, message, line if state in st.WAITING_STATES else "")
    try:
        quota = quota_text(state, queue)
    except (TypeError, ValueError, ZeroDivisionError):
        quota = ""
    parts = [quota or message]
    if state == st.QUEUED:
        parts.append(line)
    full = "; ".join(part for part in parts if part) + "."
    if quota and message:
        full += f" Kueue: {message}"
    short = base_short
    if state == st.QUEUED and queue.position is not None:
        candidate = f"{base_short} · #{queue.position:,}" + (f" of {queue.pending_in_queue:,}"
                                                            if queue.pending_in_queue else "")
        short = candidate if len(candidate) <= MAX_SHORT else base_short
    return Answer(state, reason_code, short, full, line)


def queue_place(queue_name: str, queue: QueueFacts | None) -> dict | None:
    """Return the API's ``queue`` object: {localQueue, clusterQueue, position, positionIn, pendingInQueue,
    positionSource}; None when Kueue does not manage the job (no queue label, no facts). With only the label the
    place is unknown (``positionSource`` "unknown")."""
    if queue is None:
        if not queue_name:
            return None
        return {"localQueue": queue_name, "clusterQueue": None, "position": None, "positionIn": None,
                "pendingInQueue": None, "positionSource": "unknown"}
    known = queue.position is not None
    return {"localQueue": queue.local_queue or queue_name or None, "clusterQueue": queue.cluster_queue or None,
            "position": queue.position if known else None,
            "positionIn": (queue.position_in or None) if known else None,
            "pendingInQueue": queue.pending_in_queue if known else None,
            "positionSource": queue.position_source if known else "unknown"}


def estimate_of(estimate) -> dict | None:
    """Return the API's ``estimatedStart`` object {p10, p50, p90, basis, computedAt} (datetimes, None when not
    estimated) from a ``jobfacts.StartEstimate``; None without one."""
    if estimate is None:
        return None
    return {"p10": estimate.p10, "p50": estimate.p50, "p90": estimate.p90, "basis": estimate.basis,
            "computedAt": estimate.computed_at}
