"""Gate 4, gang placement: PodGroups (or 1.35 gang pods, or pods in no group) waiting for the scheduler.

``unschedulable`` when a PodGroup's scheduled condition is False (``PodGroupScheduled`` in 1.36,
``PodGroupInitiallyScheduled`` in 1.37), ``gang-pending`` while members are missing or not all bound; a gang whose
members were evicted after a ``DisruptionTarget`` is ``preempted``. Everything placed passes to the running gate.

Pure: no framework.
"""

from __future__ import annotations

from . import signals as sig
from . import states as st
from .gates import Admission, JobView


def disrupted(view: JobView) -> Admission | None:
    """Return ``preempted`` for a PodGroup with ``DisruptionTarget=True`` whose members are no longer bound (the
    gang waits to be placed again); a disruption while the members are bound is only a request (see
    ``JobView.preemption_note``)."""
    for group, status, conditions in zip(view.pod_groups, view.groups, view.group_conditions, strict=True):
        disruption = conditions.get(sig.DISRUPTION_CONDITION)
        if disruption is None or not disruption.true or status.verdict == "placed":
            continue
        detail = f"PodGroup {sig.name_of(group)}" + (f": {disruption.message}" if disruption.message else "")
        return view.result(st.PREEMPTED, disruption.reason or "DisruptionTarget",
                           f"{detail} — its members were evicted; the gang waits to be placed again",
                           disruption.last_transition)
    return None


def gate(view: JobView) -> Admission | None:
    """Return ``unschedulable`` or ``gang-pending`` while the scheduler has not placed the job's gangs (or pods);
    None when everything that should be bound is."""
    if view.groups:
        active = view.active_groups
        if active and all(g.verdict == "placed" for g in active):
            return None
        blocked = [g for g in active if g.verdict == "unschedulable"]
        if blocked:
            group = blocked[0]
            detail = f": {group.message}" if group.message else ""
            return view.result(st.UNSCHEDULABLE, group.reason, f"PodGroup {group.name} cannot be scheduled "
                               f"({group.bound:,} / {group.needed:,} bound){detail}", group.since)
        waiting = next(g for g in view.groups if g.verdict != "placed")
        if waiting.members < waiting.needed:
            return view.result(st.GANG_PENDING, "WaitingForMembers", f"PodGroup {waiting.name}: "
                               f"{waiting.members:,} of {waiting.needed:,} member pods exist; the scheduler waits "
                               "for all of them")
        return view.result(st.GANG_PENDING, "GangPending", f"PodGroup {waiting.name}: {waiting.bound:,} / "
                           f"{waiting.needed:,} bound; waiting for the scheduler to place the whole gang")
    live = view.live_pods
    bound = sum(1 for p in live if sig.pod_is_bound(p))
    if view.legacy and live:  # 1.35: no PodGroup objects, admission is read from pods only
        need = legacy_need(view)
        trainer_need, trainer_bound, _ = view.trainer
        if bound >= need and trainer_bound >= trainer_need:
            return None
        return view.result(st.GANG_PENDING, "GangPending", f"{bound:,} / {need:,} gang pods bound")
    if bound == len(live):
        return None
    blocked = next((m for m in map(sig.pod_unschedulable_message, live) if m), "")
    if blocked:
        return view.result(st.UNSCHEDULABLE, "Unschedulable", f"{bound:,} / {len(live):,} pods bound: {blocked}")
    return view.result(st.GANG_PENDING, "PodsPending", f"{bound:,} / {len(live):,} pods bound (not gang-scheduled)")


def legacy_need(view: JobView) -> int:
    """Return how many pods the 1.35 Workload's gangs need bound (their minCounts, else every live pod)."""
    return sum(t["minCount"] or 0 for w in view.legacy for t in sig.workload_templates(w)) or len(view.live_pods)
