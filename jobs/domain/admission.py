"""The admission state of one TrainJob: a pure, ordered function of the signals around it.

Like Kueue's ``workload.Status()``, the first rule that holds decides, so exactly one reason leads:

1. ``unknown``    the TrainJob object itself is unreadable (no uid / name)
2. ``failed``     TrainJob ``Failed=True``                       3. ``succeeded`` TrainJob ``Complete=True``
4. ``preempted``  a PodGroup ``DisruptionTarget=True`` whose members are no longer bound (evicted: the gang waits
   again), or Kueue ``Evicted``/``Preempted=True`` (not re-admitted). ``DisruptionTarget=True`` while the members
   are still bound is only a request: the job stays ``running``/``admitted`` with a "preemption requested" note
5. suspended jobs (``spec.suspend`` or ``Suspended=True``; v2.4 deletes their Workload/PodGroups, older controllers
   keep them — both are fine): ``quota-reserved`` (Kueue ``QuotaReserved=True``, not admitted) > ``queued``
   (Kueue Workload waiting, or a queue label with no Kueue Workload yet) > ``waiting-for-objects`` (Kueue admitted,
   TrainJob not resumed yet) > ``suspended``
6. ``unknown``    inconsistent links: objects owned by another TrainJob, PodGroups whose Workload is missing while
   the job has none, pods naming a PodGroup that does not exist while others do, unrecognised policies/conditions
7. ``waiting-for-startup`` a ReplicatedJob has no pods yet because its ``dependsOn`` targets are not Complete/Ready
   (read from the JobSet and ``status.jobsStatus``) while everything that exists is placed — or nothing is
   unschedulable (PodGroups with no members while their ReplicatedJob waits are not waiting to be placed)
   ``running``/``admitted`` every PodGroup has its members bound (≥ minCount for gangs; the ``PodGroupScheduled``
   (1.36) / ``PodGroupInitiallyScheduled`` (1.37) condition confirms but pods decide, since the 1.37 condition is
   terminal and does not track evictions) *and the trainer's pods* (every ReplicatedJob but the initializers) are
   bound: initializers alone are ``waiting-for-objects`` (``TrainerPodsNotCreated``); running once they run
8. ``unschedulable`` a PodGroup's scheduled condition is False (``Unschedulable``, ``SchedulerError``)
9. ``gang-pending``  PodGroups exist, members not (all) bound yet
10. ``waiting-for-objects`` no Workload / PodGroups yet, or pods name a PodGroup that does not exist yet; when the
   Trainer controller's Warning Event says why (``TrainJobResourcesCreationFailed``), that is the reason:
   ``TrainingRuntimeNotFound`` naming the runtime, or the API server's refusal (e.g. mixed priorities)

Malformed input never raises: it yields ``unknown`` with a reason.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from . import signals as sig
from . import startup
from . import states as st

UNSCHEDULABLE_REASONS = ("Unschedulable", "SchedulerError")
# The Trainer controller records a failed reconcile as this Warning Event (trainjob_controller.go); a missing
# runtime is one (core/clustertrainingruntime.go, core/trainingruntime.go phrase it so).
RESOURCES_CREATION_FAILED = "TrainJobResourcesCreationFailed"
RUNTIME_NOT_FOUND = "TrainingRuntimeNotFound"
_RUNTIME_NOT_FOUND_TEXT = ("not found ClusterTrainingRuntime specified in TrainJob",
                           "TrainingRuntime specified in TrainJob is not found")
_JOB_TEMPLATE = re.compile(r"^(?P<rjob>.+)-(?P<index>\d+)$")


@dataclass(frozen=True)
class PodGroupStatus:
    """One PodGroup as the job detail shows it ("63 / 64 bound")."""

    name: str
    policy: str
    min_count: int | None
    members: int
    bound: int
    running: int
    condition: str
    reason: str
    message: str
    topology_key: str
    template: str
    verdict: str  # placed | unschedulable | pending | unknown
    since: dt.datetime | None = None

    @property
    def needed(self) -> int:
        """Return how many bound members make the group placed (minCount for gangs, every member otherwise)."""
        if self.policy == "gang":
            return self.min_count or self.members
        return self.members

    def to_dict(self) -> dict:
        """Return the JSON form stored on the TrainJob row."""
        return {"name": self.name, "policy": self.policy, "minCount": self.min_count, "bound": self.bound,
                "members": self.members, "running": self.running, "condition": self.condition,
                "reason": self.reason, "message": self.message, "topologyKey": self.topology_key,
                "template": self.template}


@dataclass(frozen=True)
class Admission:
    """The state of a TrainJob with its one leading reason (a code) and a human message."""

    state: str
    reason: str
    message: str
    since: dt.datetime | None = None
    level: str = st.LEVEL_UNKNOWN
    pod_groups: tuple[PodGroupStatus, ...] = ()
    signals: dict = field(default_factory=dict)


def _first_scheduled_condition(conditions: dict[str, sig.Condition]) -> sig.Condition | None:
    for kind in sig.SCHEDULED_CONDITIONS:
        if kind in conditions:
            return conditions[kind]
    return None


def pod_group_status(pod_group: dict, members: Sequence[dict]) -> PodGroupStatus:
    """Return the status of one PodGroup given its member pods (non-terminal members count as bound when they
    have a node; terminal members that ran count too, so a finishing gang does not look unscheduled)."""
    policy, min_count = sig.pod_group_policy(pod_group)
    conditions = sig.conditions_of(pod_group)
    scheduled = _first_scheduled_condition(conditions)
    live = [p for p in members if sig.pod_phase(p) != "Failed"]
    bound = sum(1 for p in live if sig.pod_is_bound(p))
    running = sum(1 for p in live if sig.pod_phase(p) in ("Running", "Succeeded"))
    _, template = sig.pod_group_workload(pod_group)
    condition_text = f"{scheduled.type}={'True' if scheduled.true else 'False' if scheduled.false else 'Unknown'}" \
        if scheduled else ""
    reason = scheduled.reason if scheduled else ""
    message = scheduled.message if scheduled else ""
    need = (min_count or len(live)) if policy == "gang" else len(live)
    unknown_types = sorted(set(conditions) - sig.KNOWN_PODGROUP_CONDITIONS)
    if policy == "unknown":
        verdict, reason = "unknown", "UnknownPolicy"
        message = "the PodGroup's schedulingPolicy is neither gang nor basic"
    elif need and bound >= need:
        verdict = "placed"
    elif scheduled is not None and scheduled.false:
        verdict = "unschedulable"
        reason = reason or "Unschedulable"
        if not message:
            message = next((m for m in map(sig.pod_unschedulable_message, members) if m), "")
    elif scheduled is None and unknown_types:
        verdict, reason = "unknown", "UnknownCondition"
        condition_text = ", ".join(unknown_types)
        message = f"only unrecognised conditions ({', '.join(unknown_types)}): cannot tell whether it is scheduled"
    else:
        verdict = "pending"
    return PodGroupStatus(sig.name_of(pod_group), policy, min_count, len(live), bound, running, condition_text,
                          reason, message, sig.pod_group_topology_key(pod_group), template, verdict,
                          scheduled.last_transition if scheduled else None)


def scheduling_level(trainjob: dict, pod_groups: Sequence[dict], pods: Sequence[dict],
                     workloads: Sequence[dict] = ()) -> str:
    """Return the gang level the PodGroups were built at: trainjob (one group for the whole job), replicatedjob
    (groups of ReplicatedJobs), job (one group per Job replica), none (pods in no group), or unknown."""
    if not pod_groups:
        if pods and not any(sig.pod_group_name_of(p) for p in pods) and not workloads:
            return st.LEVEL_NONE
        return st.LEVEL_UNKNOWN
    members: dict[str, set[tuple[str, str]]] = {}
    for pod in pods:
        group = sig.pod_group_name_of(pod)
        if group:
            labels = sig.labels_of(pod)
            members.setdefault(group, set()).add((labels.get(sig.REPLICATED_JOB_LABEL, ""),
                                                  labels.get(sig.JOB_INDEX_LABEL, "")))
    all_rjobs = {rjob for pod in pods if (rjob := sig.labels_of(pod).get(sig.REPLICATED_JOB_LABEL))}
    levels = set()
    for group in pod_groups:
        _, template = sig.pod_group_workload(group)
        jobs = members.get(sig.name_of(group), set())
        rjobs = {rjob for rjob, _ in jobs}
        match = _JOB_TEMPLATE.match(template or "")
        if match and len(jobs) <= 1 and (not jobs or (match["rjob"], match["index"]) in jobs):
            levels.add(st.LEVEL_JOB)
        elif len(pod_groups) == 1 and (not all_rjobs or rjobs == all_rjobs):
            levels.add(st.LEVEL_TRAINJOB)
        else:
            levels.add(st.LEVEL_REPLICATEDJOB)
    if levels == {st.LEVEL_JOB}:
        return st.LEVEL_JOB
    if st.LEVEL_TRAINJOB in levels:
        return st.LEVEL_TRAINJOB
    return st.LEVEL_REPLICATEDJOB


def _kueue_conditions(kueue_workload: dict | None) -> dict[str, sig.Condition]:
    return sig.conditions_of(kueue_workload) if kueue_workload else {}


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def admission_of(trainjob: dict, workload: dict | None = None, pod_groups: Iterable[dict] = (),
                 pods: Iterable[dict] = (), kueue_workload: dict | None = None, *,
                 workloads: Iterable[dict] | None = None, missing_pod_groups: Iterable[str] = (),
                 problems: Iterable[tuple[str, str]] = (), events: Iterable[dict] = (),
                 jobsets: Iterable[dict] = ()) -> Admission:
    """Return the Admission of ``trainjob`` from its linked objects (see the module docstring for the order).

    ``workload`` is the scheduling.k8s.io Workload (``workloads`` when there are several), ``pod_groups`` and
    ``pods`` the linked PodGroups and Pods, ``kueue_workload`` the Kueue Workload when Kueue manages the job.
    ``missing_pod_groups`` are PodGroup names pods refer to that do not exist; ``problems`` are (code, message)
    pairs found while linking; ``events`` the Events of the job and its objects (newest first); ``jobsets`` the
    job's JobSet (its startup order: which ReplicatedJobs train, which wait through ``dependsOn``). Never raises.
    """
    try:
        return _admission(trainjob, workload, list(pod_groups), list(pods), kueue_workload,
                          list(workloads) if workloads is not None else None, list(missing_pod_groups),
                          list(problems), list(events), list(jobsets))
    except Exception as error:  # a tracker must survive any object a cluster can hold
        return Admission(st.UNKNOWN, "Malformed", f"the objects of this TrainJob could not be read ({error!r})")


def _admission(trainjob: dict, workload: dict | None, pod_groups: list[dict], pods: list[dict],
               kueue_workload: dict | None, workloads: list[dict] | None, missing: list[str],
               problems: list[tuple[str, str]], events: list[dict] | None = None,
               jobsets: list[dict] | None = None) -> Admission:
    if workloads is None:
        workloads = [workload] if workload else []
    facts = sig.trainjob_facts(trainjob)
    if not facts.uid or not facts.name:
        return Admission(st.UNKNOWN, "Malformed", "the TrainJob has no name or uid")
    conditions = sig.conditions_of(trainjob)
    kueue = _kueue_conditions(kueue_workload)
    by_group: dict[str, list[dict]] = {}
    for pod in pods:
        by_group.setdefault(sig.pod_group_name_of(pod), []).append(pod)
    groups = tuple(pod_group_status(g, by_group.get(sig.name_of(g), [])) for g in pod_groups)
    level = scheduling_level(trainjob, pod_groups, pods, workloads)

    def result(state: str, reason: str, message: str, since: dt.datetime | None = None) -> Admission:
        return Admission(state, reason, message, since, level, groups)

    # 2-3. finished
    failed = conditions.get("Failed")
    if failed is not None and failed.true:
        return result(st.FAILED, failed.reason or "Failed", failed.message or "the TrainJob failed",
                      failed.last_transition)
    complete = conditions.get("Complete")
    if complete is not None and complete.true:
        return result(st.SUCCEEDED, complete.reason or "Completed", complete.message or "the TrainJob completed",
                      complete.last_transition)

    # 4. preempted / disrupted. DisruptionTarget=True is a request: while the gang's members are still bound the
    # job is running (with a note); it is preempted once they are gone and the gang waits to be placed again.
    preemption_note = ""
    for group, group_status in zip(pod_groups, groups, strict=True):
        disruption = sig.conditions_of(group).get(sig.DISRUPTION_CONDITION)
        if disruption is None or not disruption.true:
            continue
        detail = f"PodGroup {sig.name_of(group)}" + (f": {disruption.message}" if disruption.message else "")
        if group_status.verdict != "placed":
            return result(st.PREEMPTED, disruption.reason or "DisruptionTarget",
                          f"{detail} — its members were evicted; the gang waits to be placed again",
                          disruption.last_transition)
        preemption_note = preemption_note or f"; preemption requested ({detail})"
    kueue_admitted = kueue.get("Admitted")
    if kueue_admitted is None or not kueue_admitted.true:
        for kind in ("Preempted", "Evicted"):
            condition = kueue.get(kind)
            if condition is not None and condition.true:
                return result(st.PREEMPTED, condition.reason or kind,
                              f"Kueue {kind.lower()} the workload" + (f": {condition.message}"
                                                                       if condition.message else ""),
                              condition.last_transition)

    # 5. suspended (Kueue queueing happens here: Kueue holds jobs suspended until it admits them)
    suspended = conditions.get("Suspended")
    if facts.suspend or (suspended is not None and suspended.true):
        since = suspended.last_transition if suspended is not None and suspended.true else None
        quota = kueue.get("QuotaReserved")
        if kueue_admitted is not None and kueue_admitted.true:
            return result(st.WAITING_FOR_OBJECTS, "AdmittedByKueue", "Kueue admitted the workload; waiting for the "
                          "TrainJob to resume and create its Workload and PodGroups", kueue_admitted.last_transition)
        if quota is not None and quota.true:
            reason = (kueue_admitted.reason if kueue_admitted is not None and kueue_admitted.reason else
                      "QuotaReserved")
            message = (kueue_admitted.message if kueue_admitted is not None and kueue_admitted.message else
                       "quota reserved in the ClusterQueue; admission checks pending")
            return result(st.QUOTA_RESERVED, reason, message, quota.last_transition)
        if kueue_workload is not None:
            reason = quota.reason if quota is not None and quota.reason else "Pending"
            message = quota.message if quota is not None and quota.message else \
                f"waiting for quota in LocalQueue {facts.queue_name or '(unnamed)'}"
            return result(st.QUEUED, reason, message,
                          quota.last_transition if quota is not None else sig.created_at(kueue_workload))
        if facts.queue_name:
            return result(st.QUEUED, "WaitingForKueue", f"queued in LocalQueue {facts.queue_name}; Kueue has not "
                          "created its workload yet", since)
        return result(st.SUSPENDED, (suspended.reason if suspended is not None and suspended.true and
                                     suspended.reason else "Suspended"),
                      "the TrainJob is suspended (spec.suspend: true)", since)

    # 6. inconsistent links
    if problems:
        code, message = problems[0]
        return result(st.UNKNOWN, code, message)
    workload_names = {sig.name_of(w) for w in workloads}
    orphaned = [g for g in pod_groups if sig.pod_group_workload(g)[0] and
                sig.pod_group_workload(g)[0] not in workload_names]
    if orphaned and not workloads:
        name = sig.name_of(orphaned[0])
        return result(st.UNKNOWN, "PodGroupWithoutWorkload", f"PodGroup {name} refers to Workload "
                      f"{sig.pod_group_workload(orphaned[0])[0]}, which does not exist")
    if missing and pod_groups:
        return result(st.UNKNOWN, "PodGroupMissing", f"pods refer to PodGroup {missing[0]}, which does not exist, "
                      f"while the job's other PodGroups do")
    unknown = [g for g in groups if g.verdict == "unknown"]
    if unknown:
        return result(st.UNKNOWN, unknown[0].reason, f"PodGroup {unknown[0].name}: {unknown[0].message}")

    # Startup order (dependsOn): a ReplicatedJob JobSet has not created because its targets are not done yet.
    jobsets = jobsets or []
    wait = startup.startup_wait(trainjob, jobsets, pods)
    trainer_need, trainer_bound, trainer_running = startup.trainer_pods(jobsets, pods, facts.num_nodes)

    def waiting_for_startup(placed: str) -> Admission:
        message = wait.message if wait is not None else "a ReplicatedJob waits for others (dependsOn)"
        return result(st.WAITING_FOR_STARTUP, "WaitingForStartupOrder", f"{message}{placed}")

    # 7-9. gang states
    if groups:
        # Groups with no member pods while their ReplicatedJob waits for its startup order are not waiting to
        # be placed: the scheduler has nothing of theirs to place yet.
        active = [g for g in groups if g.members or wait is None]
        if all(g.verdict == "placed" for g in active) and active:
            need = sum(g.needed for g in active)
            running = sum(g.running for g in active)
            bound = sum(g.bound for g in active)
            since = max((g.since for g in active if g.since), default=None)
            summary = (f"{_plural(len(active), 'PodGroup')} scheduled; {bound:,} / "
                       f"{sum(g.members for g in active):,} member pods bound")
            if wait is not None:
                return waiting_for_startup(f" ({summary})")
            if trainer_bound < trainer_need:
                # "Running" is the trainer's gang: initializers alone are not the job running.
                return result(st.WAITING_FOR_OBJECTS, "TrainerPodsNotCreated",
                              f"the trainer's pods are not all created yet ({trainer_bound:,} / {trainer_need:,} "
                              f"bound); {summary}", since)
            if need and running >= need and trainer_running >= trainer_need:
                return result(st.RUNNING, "Running",
                              f"{running:,} / {need:,} gang pods running; {summary}{preemption_note}", since)
            return result(st.ADMITTED, "GangScheduled", summary + preemption_note, since)
        blocked = [g for g in active if g.verdict == "unschedulable"]
        if blocked:
            group = blocked[0]
            detail = f": {group.message}" if group.message else ""
            return result(st.UNSCHEDULABLE, group.reason, f"PodGroup {group.name} cannot be scheduled "
                          f"({group.bound:,} / {group.needed:,} bound){detail}", group.since)
        if wait is not None:
            return waiting_for_startup("")
        waiting = next(g for g in groups if g.verdict != "placed")
        if waiting.members < waiting.needed:
            return result(st.GANG_PENDING, "WaitingForMembers", f"PodGroup {waiting.name}: {waiting.members:,} of "
                          f"{waiting.needed:,} member pods exist; the scheduler waits for all of them")
        return result(st.GANG_PENDING, "GangPending", f"PodGroup {waiting.name}: {waiting.bound:,} / "
                      f"{waiting.needed:,} bound; waiting for the scheduler to place the whole gang")

    # 10. no PodGroups
    live_pods = [p for p in pods if sig.pod_phase(p) != "Failed"]
    legacy = [w for w in workloads if sig.as_str(w.get("apiVersion")).endswith("/v1alpha1")]
    if missing:
        return result(st.WAITING_FOR_OBJECTS, "PodGroupMissing", f"pods refer to PodGroup {missing[0]}, which "
                      "does not exist yet; they stay pending until it does")
    if legacy and live_pods:  # 1.35: no PodGroup objects, admission is read from pods only
        need = sum(t["minCount"] or 0 for w in legacy for t in sig.workload_templates(w)) or len(live_pods)
        bound = sum(1 for p in live_pods if sig.pod_is_bound(p))
        if wait is not None and bound >= need:
            return waiting_for_startup(f" ({bound:,} / {need:,} pods bound)")
        if bound >= need and trainer_bound >= trainer_need:
            running = sum(1 for p in live_pods if sig.pod_phase(p) in ("Running", "Succeeded"))
            state = st.RUNNING if running >= need and trainer_running >= trainer_need else st.ADMITTED
            return result(state, "Running" if state == st.RUNNING else "GangScheduled",
                          f"{bound:,} / {need:,} gang pods bound")
        return result(st.GANG_PENDING, "GangPending", f"{bound:,} / {need:,} gang pods bound")
    if workloads:
        return result(st.WAITING_FOR_OBJECTS, "PodGroupsNotCreated", f"Workload {sig.name_of(workloads[0])} exists; "
                      "its PodGroups are not created yet")
    if live_pods and not any(sig.pod_group_name_of(p) for p in live_pods):
        bound = sum(1 for p in live_pods if sig.pod_is_bound(p))
        running = sum(1 for p in live_pods if sig.pod_phase(p) in ("Running", "Succeeded"))
        if wait is not None and bound == len(live_pods):
            return waiting_for_startup(f" ({bound:,} / {len(live_pods):,} pods bound)")
        if bound == len(live_pods) and trainer_bound < trainer_need:
            return result(st.WAITING_FOR_OBJECTS, "TrainerPodsNotCreated", f"the trainer's pods are not all created "
                          f"yet ({trainer_bound:,} / {trainer_need:,} bound); {bound:,} / {len(live_pods):,} pods "
                          "bound (not gang-scheduled)")
        if bound == len(live_pods):
            state = st.RUNNING if running == len(live_pods) else st.ADMITTED
            return result(state, "Running" if state == st.RUNNING else "PodsBound",
                          f"{bound:,} / {len(live_pods):,} pods bound (not gang-scheduled)")
        blocked = next((m for m in map(sig.pod_unschedulable_message, live_pods) if m), "")
        if blocked:
            return result(st.UNSCHEDULABLE, "Unschedulable", f"{bound:,} / {len(live_pods):,} pods bound: {blocked}")
        return result(st.GANG_PENDING, "PodsPending", f"{bound:,} / {len(live_pods):,} pods bound (not "
                      "gang-scheduled)")
    failure = _reconcile_failure(facts, events or [])
    if failure is not None and not live_pods:
        return result(st.WAITING_FOR_OBJECTS, *failure)
    return result(st.WAITING_FOR_OBJECTS, "NoSchedulingObjects", "no Workload or PodGroups yet: the Trainer "
                  "controller has not created the job's scheduling objects")


def _reconcile_failure(facts: sig.TrainJobFacts, events: list[dict]) -> tuple[str, str] | None:
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


def admission_of_tree(tree) -> Admission:
    """Return the Admission of an ``ownership.JobTree`` (see :func:`admission_of`)."""
    return admission_of(tree.trainjob, None, tree.pod_groups, tree.pods,
                        tree.kueue_workloads[0] if tree.kueue_workloads else None, workloads=tree.workloads,
                        missing_pod_groups=tree.missing_pod_groups, problems=tree.problems, events=tree.events,
                        jobsets=tree.jobsets)
