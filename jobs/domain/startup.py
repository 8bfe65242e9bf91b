"""Gate 2, startup order: a ReplicatedJob JobSet has not created because its ``dependsOn`` targets (initializers
first, ``startupPolicy InOrder``) are not Complete/Ready yet — "node waits for dataset-initializer and
model-initializer to complete; 1 of 2 done". The plan itself (steps, progress, the trainer's pods) is
:mod:`jobs.domain.plan`; its names are re-exported here.

Pure: no framework.
"""

from __future__ import annotations

from . import signals as sig
from . import states as st
from .gates import Admission, JobView, plural
from .plan import (
    ANCESTOR_LABEL,
    INITIALIZER_STEPS,
    StartupWait,
    Step,
    is_initializer,
    plan_of,
    pods_of_step,
    slim_jobset_spec,
    startup_wait,
    trainer_pods,
)

__all__ = ("ANCESTOR_LABEL", "INITIALIZER_STEPS", "StartupWait", "Step", "gate", "is_initializer", "plan_of",
           "pods_of_step", "slim_jobset_spec", "startup_wait", "trainer_pods")


def gate(view: JobView) -> Admission | None:
    """Gate 2, startup order: return ``waiting-for-startup`` when a ReplicatedJob has no pods yet because its
    ``dependsOn`` targets are not done, and nothing that exists is held by anything else (an initializer that
    cannot be placed is ``unschedulable``: that is what holds the job). None lets the job pass."""
    wait = view.wait
    if wait is None or view.missing:
        return None
    placed = None
    if view.groups:
        active = view.active_groups
        if any(g.verdict == "unschedulable" for g in active):
            return None
        placed = ""
        if active and all(g.verdict == "placed" for g in active):
            placed = (f" ({plural(len(active), 'PodGroup')} scheduled; {sum(g.bound for g in active):,} / "
                      f"{sum(g.members for g in active):,} member pods bound)")
    elif view.legacy and view.live_pods:
        need = sum(t["minCount"] or 0 for w in view.legacy for t in sig.workload_templates(w)) or len(view.live_pods)
        bound = sum(1 for p in view.live_pods if sig.pod_is_bound(p))
        if bound >= need:
            placed = f" ({bound:,} / {need:,} pods bound)"
    elif not view.workloads and view.live_pods and not any(sig.pod_group_name_of(p) for p in view.live_pods):
        bound = sum(1 for p in view.live_pods if sig.pod_is_bound(p))
        if bound == len(view.live_pods):
            placed = f" ({bound:,} / {len(view.live_pods):,} pods bound)"
    if placed is None:
        return None
    return view.result(st.WAITING_FOR_STARTUP, "WaitingForStartupOrder", f"{wait.message}{placed}")

