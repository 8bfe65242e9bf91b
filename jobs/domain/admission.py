"""The admission state of one TrainJob: a pure, ordered function of the signals around it.

Like Kueue's ``workload.Status()``, the first gate that holds the job decides, so exactly one reason leads. The
gates run in the order a job passes them on a cluster:

0. ``finished``  the TrainJob object itself is unreadable (``unknown``), ``Failed=True`` (``failed``) or
   ``Complete=True`` (``succeeded``)
1. ``preempted`` (:func:`gang.disrupted`, :func:`kueue.preempted`) a PodGroup ``DisruptionTarget=True`` whose
   members are no longer bound (evicted: the gang waits again), or Kueue ``Evicted``/``Preempted=True`` (not
   re-admitted). ``DisruptionTarget=True`` while the members are still bound is only a request: the job stays
   ``running``/``admitted`` with a "preemption requested" note
2. quota (:mod:`kueue`) a suspended job: ``inadmissible`` (``QuotaReserved=False`` with ``ExceedsMaxQuota``,
   ``NoMatchingFlavor``, ``Misconfigured``, or "request > maximum capacity"), ``queued`` (waiting for quota, or a
   queue label with no Kueue Workload yet), ``quota-reserved`` (admission checks), ``waiting-for-objects`` (Kueue
   admitted, TrainJob not resumed yet), ``suspended`` (no Kueue)
3. links (:func:`objects.links`) ``unknown`` for objects that contradict each other
4. startup order (:mod:`startup`) ``waiting-for-startup``: a ReplicatedJob has no pods yet because its ``dependsOn``
   targets are not Complete/Ready, and nothing that exists is unschedulable
5. scheduling objects (:mod:`objects`) ``waiting-for-objects``: no Workload / PodGroups yet (with the Trainer
   controller's complaint when it recorded one)
6. gang placement (:mod:`gang`) ``unschedulable`` (a PodGroup's scheduled condition is False), ``gang-pending``
7. running (:mod:`running`) ``running`` / ``admitted`` once the trainer's pods (not just the initializers) are
   bound; ``waiting-for-objects`` (``TrainerPodsNotCreated``) until they exist

Malformed input never raises: a gate that fails is logged and counted (:func:`failures`), and the job is
``unknown`` with reason ``Malformed``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from . import gang, kueue, objects, running, startup
from . import signals as sig
from . import states as st
from .gates import Admission, Gate, JobView, PodGroupStatus, pod_group_status, scheduling_level
from .objects import RESOURCES_CREATION_FAILED, RUNTIME_NOT_FOUND

__all__ = ("GATES", "RESOURCES_CREATION_FAILED", "RUNTIME_NOT_FOUND", "UNSCHEDULABLE_REASONS", "Admission",
           "PodGroupStatus", "admission_of", "admission_of_tree", "failures", "pod_group_status",
           "scheduling_level")

logger = logging.getLogger(__name__)

UNSCHEDULABLE_REASONS = ("Unschedulable", "SchedulerError")
_failures = {"count": 0}


def finished(view: JobView) -> Admission | None:
    """Gate 0: return ``unknown`` for a TrainJob without name/uid, ``failed``/``succeeded`` for a finished one."""
    if not view.facts.uid or not view.facts.name:
        return Admission(st.UNKNOWN, "Malformed", "the TrainJob has no name or uid", gate=view.gate)
    failed = view.conditions.get("Failed")
    if failed is not None and failed.true:
        return view.result(st.FAILED, failed.reason or "Failed", failed.message or "the TrainJob failed",
                           failed.last_transition)
    complete = view.conditions.get("Complete")
    if complete is not None and complete.true:
        return view.result(st.SUCCEEDED, complete.reason or "Completed", complete.message or
                           "the TrainJob completed", complete.last_transition)
    return None


# (name, gate) in the order a job passes them; the last always decides.
GATES: tuple[tuple[str, Gate], ...] = (
    ("finished", finished),
    ("disruption", gang.disrupted),
    ("kueue-preemption", kueue.preempted),
    ("kueue", kueue.gate),
    ("links", objects.links),
    ("startup", startup.gate),
    ("objects", objects.gate),
    ("gang", gang.gate),
    ("running", running.gate),
)


def failures() -> int:
    """Return how many times a gate raised on this process's input (each logged; the job became ``unknown``)."""
    return _failures["count"]


def admission_of(trainjob: dict, workload: dict | None = None, pod_groups: Iterable[dict] = (),
                 pods: Iterable[dict] = (), kueue_workload: dict | None = None, *,
                 workloads: Iterable[dict] | None = None, missing_pod_groups: Iterable[str] = (),
                 problems: Iterable[tuple[str, str]] = (), events: Iterable[dict] = (),
                 jobsets: Iterable[dict] = ()) -> Admission:
    """Return the Admission of ``trainjob`` from its linked objects (see the module docstring for the gates).

    ``workload`` is the scheduling.k8s.io Workload (``workloads`` when there are several), ``pod_groups`` and
    ``pods`` the linked PodGroups and Pods, ``kueue_workload`` the Kueue Workload when Kueue manages the job.
    ``missing_pod_groups`` are PodGroup names pods refer to that do not exist; ``problems`` are (code, message)
    pairs found while linking; ``events`` the Events of the job and its objects (newest first); ``jobsets`` the
    job's JobSet (its startup order: which ReplicatedJobs train, which wait through ``dependsOn``). Never raises.
    """
    view = None
    try:
        listed = list(workloads) if workloads is not None else ([workload] if workload else [])
        view = JobView(trainjob, list(pod_groups), list(pods), kueue_workload, listed, list(missing_pod_groups),
                       list(problems), list(events or ()), list(jobsets or ()))
        for name, gate in GATES:
            view.gate = name
            decided = gate(view)
            if decided is not None:
                return decided
        raise AssertionError("the running gate always decides")  # pragma: no cover
    except Exception as error:  # a tracker must survive any object a cluster can hold
        _failures["count"] += 1
        where = view.gate if view is not None else "reading"
        logger.warning("admission gate %s failed on TrainJob %s", where,
                       sig.name_of(trainjob) if isinstance(trainjob, dict) else "?", exc_info=True)
        return Admission(st.UNKNOWN, "Malformed", f"the objects of this TrainJob could not be read ({error!r})",
                         gate=where)


def admission_of_tree(tree) -> Admission:
    """Return the Admission of an ``ownership.JobTree`` (see :func:`admission_of`)."""
    return admission_of(tree.trainjob, None, tree.pod_groups, tree.pods,
                        tree.kueue_workloads[0] if tree.kueue_workloads else None, workloads=tree.workloads,
                        missing_pod_groups=tree.missing_pod_groups, problems=tree.problems, events=tree.events,
                        jobsets=tree.jobsets)
