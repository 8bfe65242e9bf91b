"""Gate 3, scheduling objects: links that contradict each other (``unknown``), and the Workload/PodGroups the
Trainer controller has not created yet (``waiting-for-objects``), with the controller's own complaint when it
recorded one (a missing runtime, the API server refusing the objects).

Pure: no framework.
"""

from __future__ import annotations

from . import signals as sig
from . import states as st
from .gates import Admission, GateFacts, JobView

# The Trainer controller records a failed reconcile as this Warning Event (trainjob_controller.go); a missing
# runtime is one (core/clustertrainingruntime.go, core/trainingruntime.go phrase it so).
RESOURCES_CREATION_FAILED = "TrainJobResourcesCreationFailed"
RUNTIME_NOT_FOUND = "TrainingRuntimeNotFound"
_RUNTIME_NOT_FOUND_TEXT = ("not found ClusterTrainingRuntime specified in TrainJob",
                           "TrainingRuntime specified in TrainJob is not found")


def links(view: JobView) -> Admission | None:
    """Return ``unknown`` when the job's objects contradict each other (owned by another TrainJob, PodGroups whose
    Workload is missing while the job has none, pods naming a missing PodGroup while the others exist, a policy or
    conditions we cannot read); None when they are consistent."""
    if view.problems:
        code, message = view.problems[0]
        return view.result(st.UNKNOWN, code, message)
    workload_names = {sig.name_of(w) for w in view.workloads}
    orphaned = [(g, workload) for g, (workload, _) in zip(view.pod_groups, view.group_refs, strict=True)
                if workload and workload not in workload_names]
    if orphaned and not view.workloads:
        group, workload = orphaned[0]
        return view.result(st.UNKNOWN, "PodGroupWithoutWorkload", f"PodGroup {sig.name_of(group)} refers to "
                           f"Workload {workload}, which does not exist")
    if view.missing and view.pod_groups:
        return view.result(st.UNKNOWN, "PodGroupMissing", f"pods refer to PodGroup {view.missing[0]}, which does "
                           "not exist, while the job's other PodGroups do")
    unknown = [g for g in view.groups if g.verdict == "unknown"]
    if unknown:
        return view.result(st.UNKNOWN, unknown[0].reason, f"PodGroup {unknown[0].name}: {unknown[0].message}")
    return None


def gate(view: JobView) -> Admission | None:
    """Return ``waiting-for-objects`` while the job has no PodGroups to be placed (none created, a Workload without
    its PodGroups, pods naming a PodGroup not created yet, the controller failing); None when there is something
    for the scheduler: PodGroups, 1.35 gang pods, or pods in no group."""
    if view.groups:
        return None
    live = view.live_pods
    if view.missing:
        return view.result(st.WAITING_FOR_OBJECTS, "PodGroupMissing", f"pods refer to PodGroup {view.missing[0]}, "
                           "which does not exist yet; they stay pending until it does")
    if view.legacy and live:
        return None
    if view.workloads:
        return view.result(st.WAITING_FOR_OBJECTS, "PodGroupsNotCreated", f"Workload "
                           f"{sig.name_of(view.workloads[0])} exists; its PodGroups are not created yet")
    if live and not any(sig.pod_group_name_of(p) for p in live):
        return None
    failure = reconcile_failure(view.facts, view.events)
    if failure is not None and not live:
        return view.result(st.WAITING_FOR_OBJECTS, *failure)
    return view.result(st.WAITING_FOR_OBJECTS, "NoSchedulingObjects", "no Workload or PodGroups yet: the Trainer "
                       "controller has not created the job's scheduling objects")


def reconcile_failure(facts: sig.TrainJobFacts | GateFacts, events: list[dict]) -> tuple[str, str] | None:
    """Return (reason, message) from the newest Warning Event of the Trainer controller failing to create this
    TrainJob's objects, or None. A missing runtime is ``TrainingRuntimeNotFound`` with a message naming it."""
    for event in events:
        involved = event.get("involvedObject") or event.get("regarding") or {}
        if sig.as_str(involved.get("uid")) not in ("", facts.uid) or sig.as_str(involved.get("kind")) != "TrainJob":
            continue
        reason = sig.as_str(event.get("reason"))
        message = sig.as_str(event.get("message") or event.get("note"))
        if reason == RUNTIME_NOT_FOUND or (reason == RESOURCES_CREATION_FAILED and
                                           any(text in message for text in _RUNTIME_NOT_FOUND_TEXT)):
            return RUNTIME_NOT_FOUND, (f"{facts.runtime_kind} {facts.runtime_name!r} does not exist: the Trainer "
                                       "controller creates nothing until it does (sync the policy, or fix "
                                       "spec.runtimeRef)")
        if reason == RESOURCES_CREATION_FAILED:
            return RESOURCES_CREATION_FAILED, message or "the Trainer controller could not create the job's objects"
    return None
