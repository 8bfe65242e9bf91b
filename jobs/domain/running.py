"""Gate 5, running: everything is placed; "running" means the trainer's gang runs, not its initializers.

``waiting-for-objects`` (``TrainerPodsNotCreated``) while the trainer's pods are not all created and bound,
``admitted`` while they are bound but not all running, ``running`` once they run.

Pure: no framework.
"""

from __future__ import annotations

from . import signals as sig
from . import states as st
from .gang import legacy_need
from .gates import Admission, JobView, plural


def gate(view: JobView) -> Admission:
    """Return running, admitted or waiting-for-objects for a job whose gangs are all placed (the last gate: it
    always decides)."""
    trainer_need, trainer_bound, trainer_running = view.trainer
    note = view.preemption_note
    if view.groups:
        active = view.active_groups
        need = sum(g.needed for g in active)
        running = sum(g.running for g in active)
        since = max((g.since for g in active if g.since), default=None)
        summary = (f"{plural(len(active), 'PodGroup')} scheduled; {sum(g.bound for g in active):,} / "
                   f"{sum(g.members for g in active):,} member pods bound")
        if trainer_bound < trainer_need:
            return view.result(st.WAITING_FOR_OBJECTS, "TrainerPodsNotCreated", f"the trainer's pods are not all "
                               f"created yet ({trainer_bound:,} / {trainer_need:,} bound); {summary}", since)
        if need and running >= need and trainer_running >= trainer_need:
            return view.result(st.RUNNING, "Running", f"{running:,} / {need:,} gang pods running; {summary}{note}",
                               since)
        return view.result(st.ADMITTED, "GangScheduled", summary + note, since)
    live = view.live_pods
    bound = sum(1 for p in live if sig.pod_is_bound(p))
    running = sum(1 for p in live if sig.pod_phase(p) in ("Running", "Succeeded"))
    if view.legacy:
        need = legacy_need(view)
        state = st.RUNNING if running >= need and trainer_running >= trainer_need else st.ADMITTED
        return view.result(state, "Running" if state == st.RUNNING else "GangScheduled",
                           f"{bound:,} / {need:,} gang pods bound")
    if trainer_bound < trainer_need:
        return view.result(st.WAITING_FOR_OBJECTS, "TrainerPodsNotCreated", f"the trainer's pods are not all created "
                           f"yet ({trainer_bound:,} / {trainer_need:,} bound); {bound:,} / {len(live):,} pods bound "
                           "(not gang-scheduled)")
    state = st.RUNNING if running == len(live) else st.ADMITTED
    return view.result(state, "Running" if state == st.RUNNING else "PodsBound",
                       f"{bound:,} / {len(live):,} pods bound (not gang-scheduled)")
