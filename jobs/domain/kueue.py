"""Gate 1, quota: what Kueue says about a TrainJob it manages (and a suspended job without Kueue).

Kueue holds a TrainJob suspended until its Workload is admitted. While it is, the Workload's conditions say why:
``QuotaReserved=False`` with Kueue 0.19's granular reasons — ``WaitingForQuota`` (and ``Pending`` with the
``UnadmittedWorkloadsObservability`` gate off) mean "waits its turn" (``queued``); ``ExceedsMaxQuota``,
``NoMatchingFlavor`` and ``Misconfigured`` mean "will never be admitted until something changes"
(``inadmissible``), as does an older Kueue's "request > maximum capacity" message. ``QuotaReserved=True`` without
``Admitted`` is ``quota-reserved`` (admission checks); ``Admitted=True`` while still suspended is
``waiting-for-objects``. ``Preempted``/``Evicted=True`` while not re-admitted is ``preempted``.

Pure: no framework.
"""

from __future__ import annotations

from . import signals as sig
from . import states as st
from .gates import Admission, JobView

# QuotaReserved=False reasons that mean "cannot be admitted as configured" (Kueue 0.19: the workload is counted
# as inadmissible, kueue_pending_workloads{status="inadmissible"}).
INADMISSIBLE_REASONS = frozenset({"ExceedsMaxQuota", "NoMatchingFlavor", "Misconfigured", "Inadmissible"})
# QuotaReserved=False reasons that mean "waits its turn for quota".
WAITING_REASONS = frozenset({"WaitingForQuota", "Pending", "TopologyPlacementFailed"})
# An older Kueue (or the gate off) words "exceeds the maximum" only in the message.
_INADMISSIBLE_TEXT = ("maximum capacity", "exceeds the maximum")
PREEMPTION_CONDITIONS = ("Preempted", "Evicted")


def is_inadmissible(reason: str, message: str) -> bool:
    """Return whether a ``QuotaReserved=False`` (``reason``, ``message``) says the workload can never be admitted
    as configured (exceeds the queue's maximum, no flavor matches, the queue is misconfigured)."""
    if reason in INADMISSIBLE_REASONS:
        return True
    if reason in ("WaitingForQuota",):
        return False
    lowered = message.lower()
    return any(text in lowered for text in _INADMISSIBLE_TEXT)


def preempted(view: JobView) -> Admission | None:
    """Return ``preempted`` when Kueue evicted or preempted the workload and has not admitted it again."""
    admitted = view.kueue.get("Admitted")
    if admitted is not None and admitted.true:
        return None
    for kind in PREEMPTION_CONDITIONS:
        condition = view.kueue.get(kind)
        if condition is not None and condition.true:
            return view.result(st.PREEMPTED, condition.reason or kind,
                               f"Kueue {kind.lower()} the workload" + (f": {condition.message}"
                                                                        if condition.message else ""),
                               condition.last_transition)
    return None


def gate(view: JobView) -> Admission | None:
    """Return the quota state of a suspended job (queued, inadmissible, quota-reserved, admitted by Kueue and
    resuming, or plainly suspended), or None when the job is not suspended (Kueue let it through)."""
    suspended = view.conditions.get("Suspended")
    if not (view.facts.suspend or (suspended is not None and suspended.true)):
        return None
    since = suspended.last_transition if suspended is not None and suspended.true else None
    kueue = view.kueue
    quota = kueue.get("QuotaReserved")
    admitted = kueue.get("Admitted")
    if admitted is not None and admitted.true:
        return view.result(st.WAITING_FOR_OBJECTS, "AdmittedByKueue", "Kueue admitted the workload; waiting for the "
                           "TrainJob to resume and create its Workload and PodGroups", admitted.last_transition)
    if quota is not None and quota.true:
        reason = admitted.reason if admitted is not None and admitted.reason else "QuotaReserved"
        message = (admitted.message if admitted is not None and admitted.message else
                   "quota reserved in the ClusterQueue; admission checks pending")
        return view.result(st.QUOTA_RESERVED, reason, message, quota.last_transition)
    if view.kueue_workload is not None:
        reason = quota.reason if quota is not None and quota.reason else "Pending"
        message = quota.message if quota is not None and quota.message else \
            f"waiting for quota in LocalQueue {view.facts.queue_name or '(unnamed)'}"
        when = quota.last_transition if quota is not None else sig.created_at(view.kueue_workload)
        state = st.INADMISSIBLE if quota is not None and is_inadmissible(reason, message) else st.QUEUED
        return view.result(state, reason, message, when)
    if view.facts.queue_name:
        return view.result(st.QUEUED, "WaitingForKueue", f"queued in LocalQueue {view.facts.queue_name}; Kueue has "
                           "not created its workload yet", since)
    return view.result(st.SUSPENDED, (suspended.reason if suspended is not None and suspended.true and
                                      suspended.reason else "Suspended"),
                       "the TrainJob is suspended (spec.suspend: true)", since)
