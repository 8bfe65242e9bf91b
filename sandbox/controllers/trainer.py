"""The simulated Kubeflow Trainer TrainJob controller (plus what JobSet and Job would do underneath).

For each TrainJob referencing a (Cluster)TrainingRuntime it plans the runtime with its own `expansion` module
(the upstream controller's rules), then creates, in order, the scheduling Workload, its PodGroups
(ownerReferences: the TrainJob as controller, plus the Workload) and one Pod per (ReplicatedJob, Job, pod) with
`spec.schedulingGroup.podGroupName`. Workload and PodGroup names are salted with the TrainJob UID and its
incarnation (the last resume), so they are found only through ownerReferences / `spec.controllerRef`. It keeps
`status.jobsStatus` and the `Suspended`, `Complete` and `Failed` conditions up to date.

Decisions:
- A missing runtime is not terminal: the TrainJob waits (the portal may sync the runtime later), and the Warning
  Event upstream's reconciler records for any reconcile error is recorded once: reason
  `TrainJobResourcesCreationFailed`, message `TrainJob resources reconciliation failed: not found
  ClusterTrainingRuntime specified in TrainJob: …` (trainjob_controller.go, core/clustertrainingruntime.go).
  An unsupported `runtimeRef.kind` or a runtime the plan rejects sets `Failed` with reason
  `TrainingRuntimeNotSupported` and the error message.
- A Workload or PodGroup the API server refuses (e.g. "detected multiple priority configurations" when only some
  ReplicatedJobs set `priorityClassName`) leaves the TrainJob without pods, as upstream's failed apply does, with
  the same Warning Event `TrainJobResourcesCreationFailed` carrying the API server's message; it is retried on
  every pass (counted on the one Event), so fixing the runtime for a new TrainJob is what helps.
- The runtime is read once per TrainJob UID and kept: runtime edits only affect later TrainJobs (KEP-3015).
- Suspend deletes the pods, the Workload and the PodGroups (KEP-3015 lifecycle, v2.4); resume creates them
  again under new names (a new incarnation). PodGroups keep their protection finalizer until their pods are gone.
- Startup order is JobSet's: a ReplicatedJob with `dependsOn` gets its pods only once every Job of its target is
  Ready (all pods Ready or Succeeded) or Complete, as the entry's `status` says; with
  `startupPolicy.startupPolicyOrder: InOrder` each ReplicatedJob waits for all earlier ones to be Ready. A gang
  PodGroup holding both ends of such a wait can never reach minCount: the pods stay Pending for ever, as on a real
  cluster, and a Warning Event `StartupOrderDeadlock` on the PodGroup and the TrainJob says why.
- A failed pod fails the TrainJob (JobSet's default failure policy, no restarts); on Complete or Failed the
  remaining running pods are deleted, freeing capacity. `successPolicy` (All/Any over target rJobs) is honoured.
- `spec.activeDeadlineSeconds` (counted from creation, or from the last resume) sets `Failed`/`DeadlineExceeded`
  and deletes the running pods, checked on every pass (so within the 5 s resync).
"""

from __future__ import annotations

import logging
import threading
import time

from sandbox.controllers.client import ApiError, Client
from sandbox.controllers.common import (
    COMPLETION_INDEX_LABEL,
    JOB_INDEX_LABEL,
    REPLICATED_JOB_LABEL,
    TRAINER_GROUP_VERSION,
    KubeFlavour,
    condition_is_true,
    find_condition,
    is_terminal,
    meta,
    owner_uid,
    parse_time,
    pod_path,
    trainjob_path,
    with_condition,
)
from sandbox.controllers.events import WARNING, EventRecorder
from sandbox.controllers.expansion import Plan, PlanError, plan_for, pod_claims
from sandbox.controllers.informer import Informer, Loop, object_key
from sandbox.controllers.kueue import kueue_admitted, queued
from sandbox.controllers.podspec import build_pod, pod_name

log = logging.getLogger("sandbox.controllers.trainer")

RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
# The reason upstream's TrainJob reconciler gives every Warning Event of a failed reconcile.
RESOURCES_CREATION_FAILED = "TrainJobResourcesCreationFailed"


def _ready(pod: dict) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )


def jobs_status(plan: Plan, pods: list[dict], suspended: bool) -> list[dict]:
    """Return TrainJob `status.jobsStatus`: per ReplicatedJob, counts of its Jobs (replicas) by state.

    A Job is succeeded when all its pods Succeeded, failed when one Failed, ready when every pod is Ready or
    Succeeded, active when it has a pending or running pod (JobSet's replicatedJobsStatus semantics).
    """
    by_job: dict[tuple[str, str], list[dict]] = {}
    for pod in pods:
        labels = meta(pod).get("labels") or {}
        by_job.setdefault((labels.get(REPLICATED_JOB_LABEL, ""), labels.get(JOB_INDEX_LABEL, "")), []).append(pod)
    result = []
    for rjob in plan.replicated_jobs:
        counts = {"ready": 0, "active": 0, "succeeded": 0, "failed": 0, "suspended": 0}
        for job_index in range(rjob.replicas):
            job_pods = by_job.get((rjob.name, str(job_index)), [])
            phases = [(p.get("status") or {}).get("phase") for p in job_pods]
            if suspended and not any(phase in ("Succeeded", "Failed") for phase in phases):
                counts["suspended"] += 1
            elif "Failed" in phases:
                counts["failed"] += 1
            elif rjob.pods_per_job and phases.count("Succeeded") >= rjob.pods_per_job:
                counts["succeeded"] += 1
            else:
                if job_pods and sum(1 for p in job_pods if _ready(p) or
                                    (p.get("status") or {}).get("phase") == "Succeeded") >= rjob.pods_per_job:
                    counts["ready"] += 1
                if any(not is_terminal(p) for p in job_pods):
                    counts["active"] += 1
        result.append({"name": rjob.name, **counts})
    return result


def is_complete(runtime: dict, plan: Plan, status: list[dict]) -> bool:
    """Return True when the JobSet success policy is met (default: every Job of every ReplicatedJob succeeded)."""
    policy = (((runtime.get("spec") or {}).get("template") or {}).get("spec") or {}).get("successPolicy") or {}
    targets = set(policy.get("targetReplicatedJobs") or [r.name for r in plan.replicated_jobs])
    by_name = {s["name"]: s for s in status}
    relevant = [r for r in plan.replicated_jobs if r.name in targets]
    if not relevant:
        return False
    if policy.get("operator") == "Any":
        return any(by_name[r.name]["succeeded"] > 0 for r in relevant)
    return all(by_name[r.name]["succeeded"] >= r.replicas for r in relevant)


def _started(status: dict, replicas: int, wanted: str) -> bool:
    """Return True when a ReplicatedJob's Jobs are all Ready (or Succeeded) or, for "Complete", all Succeeded."""
    if wanted == "Complete":
        return status.get("succeeded", 0) >= replicas
    return status.get("ready", 0) + status.get("succeeded", 0) >= replicas


def startup_waits(runtime: dict, plan: Plan, status: list[dict]) -> dict[str, tuple[str, str]]:
    """Return ReplicatedJob -> (the ReplicatedJob it waits for, "Ready" | "Complete") for every one JobSet holds back.

    `status` is `jobs_status(...)`; dependsOn and `startupPolicyOrder: InOrder` follow JobSet's semantics.
    """
    by_name = {s["name"]: s for s in status}
    rjobs = {r.name: r for r in plan.replicated_jobs}
    waits: dict[str, tuple[str, str]] = {}
    for rjob in plan.replicated_jobs:
        for target, wanted in rjob.depends_on:
            if not _started(by_name.get(target, {}), rjobs[target].replicas, wanted):
                waits[rjob.name] = (target, wanted)
                break
    jobset = ((runtime.get("spec") or {}).get("template") or {}).get("spec") or {}
    if ((jobset.get("startupPolicy") or {}).get("startupPolicyOrder")) == "InOrder":
        for earlier, later in zip(plan.replicated_jobs, plan.replicated_jobs[1:], strict=False):
            if later.name not in waits and (earlier.name in waits or not _started(
                    by_name.get(earlier.name, {}), earlier.replicas, "Ready")):
                waits[later.name] = (earlier.name, "Ready")
    return waits


def deadlocks(plan: Plan, waits: dict[str, tuple[str, str]]) -> list[tuple]:
    """Return (group, waiting ReplicatedJob, target, status) for every gang that holds both ends of a startup wait."""
    found = []
    for group in plan.groups:
        if group.policy != "gang":
            continue
        for rjob in group.replicated_jobs:
            if rjob in waits and waits[rjob][0] in group.replicated_jobs:
                found.append((group, rjob, *waits[rjob]))
                break
    return found


def incarnation_of(trainjob: dict) -> str:
    """Return what distinguishes this run of the TrainJob from earlier ones: the time it was last resumed, or ""."""
    resumed = find_condition(trainjob, "Suspended")
    if resumed and resumed.get("status") == "False":
        return resumed.get("lastTransitionTime") or ""
    return ""


def pod_slot(pod: dict) -> tuple[str, str, str]:
    """Return (ReplicatedJob, Job index, completion index) of a TrainJob pod."""
    labels = meta(pod).get("labels") or {}
    return (labels.get(REPLICATED_JOB_LABEL, ""), labels.get(JOB_INDEX_LABEL, ""),
            labels.get(COMPLETION_INDEX_LABEL, ""))


class TrainerController:
    """Reconciles every TrainJob on each pass (event-driven, plus a periodic resync)."""

    def __init__(self, api_url: str, flavour: KubeFlavour, stop: threading.Event, *, trainjobs: Informer,
                 cluster_runtimes: Informer, runtimes: Informer, pods: Informer, kueue: bool = False):
        self.client = Client(api_url, user_agent="sandbox-trainer")
        self.flavour = flavour
        self.kueue = kueue  # the simulated Kueue manages TrainJobs labelled kueue.x-k8s.io/queue-name
        self.trainjobs, self.cluster_runtimes, self.runtimes, self.pods = trainjobs, cluster_runtimes, runtimes, pods
        # TrainJob UID -> the runtime as read when first reconciled: kept, so runtime edits affect later jobs only.
        self._runtimes_read: dict[str, dict] = {}
        self._scheduling_created: set[tuple[str, str]] = set()  # (UID, incarnation) whose Workload + PodGroups exist
        self._pending_pods: set[str] = set()  # pod keys created but not yet seen by the informer
        # (TrainJob UID, rJob, Job index, pod index) -> (attempt, name of the pod last created for it)
        self._slots: dict[tuple[str, str, int, int], tuple[int, str]] = {}
        self._slot_of: dict[str, tuple[tuple[str, str, int, int], int]] = {}  # pod key -> its slot, while planned
        self._warned: set[str] = set()
        self._resume_sent: dict[str, str | None] = {}  # UID -> resourceVersion the Resumed condition was written on
        self._scheduling_deleted: set[str] = set()  # UIDs of suspended TrainJobs whose scheduling objects are gone
        # TrainJob UID -> {PodGroup name: the object as created} (Events need its UID)
        self._group_objects: dict[str, dict[str, dict]] = {}
        self._deadlocks_reported: set[str] = set()  # PodGroup names
        self.events = EventRecorder(Client(api_url, user_agent="sandbox-jobset"), "jobset-controller")
        self.trainer_events = EventRecorder(Client(api_url, user_agent="sandbox-trainer"), "trainer-controller-manager")
        self._arrival: dict[str, int] = {}  # TrainJob UID -> watch arrival order (creation order within a second)
        self.loop = Loop("trainer", self.sync, stop, resync=5.0, min_interval=0.05,
                         wait_for=(trainjobs, cluster_runtimes, runtimes, pods))
        for informer in (trainjobs, cluster_runtimes, runtimes, pods):
            informer.add_handler(self.loop.poke)
        trainjobs.add_handler(self._forget)

    def start(self) -> None:
        """Start the reconcile loop thread."""
        self.loop.start()

    def _forget(self, _event: str, old: dict | None, new: dict | None) -> None:
        if new is not None:
            self._arrival.setdefault(meta(new).get("uid", ""), len(self._arrival))
        if new is None and old is not None:
            self._arrival.pop(meta(old).get("uid", ""), None)
            uid = meta(old).get("uid", "")
            self._runtimes_read.pop(uid, None)
            self._scheduling_created = {key for key in self._scheduling_created if key[0] != uid}
            self._scheduling_deleted.discard(uid)
            self._resume_sent.pop(uid, None)
            self._warned.discard(uid)
            self.trainer_events.forget(uid)
            for name in self._group_objects.pop(uid, {}):
                self._deadlocks_reported.discard(name)
            self._slots = {slot: value for slot, value in self._slots.items() if slot[0] != uid}

    # -- pass -----------------------------------------------------------------------------------------------------

    def sync(self) -> bool:
        """Reconcile every TrainJob once; return True when a write failed and a retry is due soon."""
        pods_by_owner: dict[str, list[dict]] = {}
        seen = set()
        for pod in self.pods.items():
            seen.add(object_key(pod))
            uid = owner_uid(pod, "TrainJob")
            if uid:
                pods_by_owner.setdefault(uid, []).append(pod)
        self._pending_pods -= seen
        retry = False
        for trainjob in sorted(self.trainjobs.items(), key=lambda j: (meta(j).get("creationTimestamp") or "",
                                                                       self._arrival.get(meta(j).get("uid"), 0))):
            try:
                self.reconcile(trainjob, pods_by_owner.get(meta(trainjob).get("uid", ""), []))
            except (ApiError, OSError) as error:
                log.info("trainjob %s: %s (will retry)", object_key(trainjob), error)
                retry = True
        return retry

    def _runtime(self, trainjob: dict) -> tuple[dict | None, str | None]:
        """Return (runtime object or None, error for an unsupported kind or None)."""
        ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
        kind = ref.get("kind") or "ClusterTrainingRuntime"
        group = ref.get("apiGroup") or "trainer.kubeflow.org"
        if kind not in RUNTIME_KINDS or group != "trainer.kubeflow.org":
            return None, f"unsupported runtime {group}/{kind}; use ClusterTrainingRuntime or TrainingRuntime"
        name = ref.get("name", "")
        if kind == "ClusterTrainingRuntime":
            cached = self.cluster_runtimes.get(name)
            path = f"/apis/{TRAINER_GROUP_VERSION}/clustertrainingruntimes/{name}"
        else:
            namespace = meta(trainjob).get("namespace", "default")
            cached = self.runtimes.get(f"{namespace}/{name}")
            path = f"/apis/{TRAINER_GROUP_VERSION}/namespaces/{namespace}/trainingruntimes/{name}"
        if cached is None:
            return None, None
        # The informer may lag (a runtime deleted a moment ago, or a reset): read the authoritative copy once.
        try:
            return self.client.get(path), None
        except ApiError as error:
            if error.status == 404:
                return None, None
            raise

    def reconcile(self, trainjob: dict, pods: list[dict]) -> None:
        """Bring one TrainJob's children and status in line with its spec. Raises ApiError on write failures."""
        tj_meta = meta(trainjob)
        if tj_meta.get("deletionTimestamp"):
            return
        uid = tj_meta.get("uid", "")
        finished = condition_is_true(trainjob, "Complete") or condition_is_true(trainjob, "Failed")
        if finished:
            self._delete_running(pods)
            return
        runtime = self._runtimes_read.get(uid)
        if runtime is None:
            runtime, unsupported = self._runtime(trainjob)
            if unsupported:
                self._set_conditions(trainjob, [("Failed", True, "TrainingRuntimeNotSupported", unsupported)])
                return
            if runtime is None:
                self._warn_missing_runtime(trainjob)
                return
            self._runtimes_read[uid] = runtime
        incarnation = incarnation_of(trainjob)
        try:
            plan = plan_for(runtime, trainjob, incarnation)
        except PlanError as error:
            self._set_conditions(trainjob, [("Failed", True, "TrainingRuntimeNotSupported", str(error))])
            return

        suspended = bool((trainjob.get("spec") or {}).get("suspend"))
        if self.kueue and queued(trainjob) and not kueue_admitted(trainjob):
            suspended = True  # Kueue's webhook would have suspended it on creation; it waits for admission
        changes = []
        if suspended:
            changes.append(("Suspended", True, "Suspended", "TrainJob is suspended"))
            self._delete_running(pods)
            if uid not in self._scheduling_deleted:
                self._delete_scheduling_objects(trainjob)
                self._scheduling_deleted.add(uid)
            self._scheduling_created = {k for k in self._scheduling_created if k[0] != uid}
        else:
            self._scheduling_deleted.discard(uid)
            if condition_is_true(trainjob, "Suspended"):
                # Resume first: the new incarnation (and so every new object name) follows this condition. Written
                # once per version of the TrainJob, so a lagging cache cannot start a second incarnation.
                if self._resume_sent.get(uid) != tj_meta.get("resourceVersion"):
                    self._set_conditions(trainjob, [("Suspended", False, "Resumed", "TrainJob is resumed")])
                    self._resume_sent[uid] = tj_meta.get("resourceVersion")
                return
            key = (uid, incarnation)
            if key not in self._scheduling_created:
                if not self._still_exists(trainjob):
                    return  # stale cache (deleted, or a reset): creating children now would leave orphans
                try:
                    self._create_scheduling_objects(trainjob, plan)
                except ApiError as error:
                    if error.status not in (400, 403, 404, 422):
                        raise
                    self._reconcile_failed(trainjob, error.message)
                    return
                self._scheduling_created.add(key)
            # After the PodGroups: pods share the claims the created PodGroups kept.
            waits = startup_waits(runtime, plan, jobs_status(plan, pods, False))
            wanted = [p for p in self._missing_pods(trainjob, runtime, plan, pods, incarnation)
                      if p["metadata"]["labels"][REPLICATED_JOB_LABEL] not in waits]
            if wanted and not self._still_exists(trainjob):
                return
            self._create_pods(wanted)
            self._report_deadlocks(trainjob, plan, waits)

        status = jobs_status(plan, pods, suspended)
        failed = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"]
        if not suspended and self._deadline_exceeded(trainjob):
            deadline = (trainjob.get("spec") or {}).get("activeDeadlineSeconds")
            changes.append(("Failed", True, "DeadlineExceeded",
                            f"TrainJob exceeded its activeDeadlineSeconds ({deadline}s)"))
            self._set_conditions(trainjob, changes, jobs=status)
            self._delete_running(pods)
            return
        if failed:
            names = ", ".join(sorted(meta(p)["name"] for p in failed)[:3])
            changes.append(("Failed", True, "FailedJobs", f"jobset failed: pod(s) {names} failed"))
        elif is_complete(runtime, plan, status):
            changes.append(("Complete", True, "AllJobsCompleted", "jobset completed successfully"))
        self._set_conditions(trainjob, changes, jobs=status)
        if failed or any(c[0] == "Complete" for c in changes):
            self._delete_running(pods)

    @staticmethod
    def _deadline_exceeded(trainjob: dict) -> bool:
        """Return True when `spec.activeDeadlineSeconds` has passed since the job started (or last resumed)."""
        deadline = (trainjob.get("spec") or {}).get("activeDeadlineSeconds")
        if not isinstance(deadline, int) or isinstance(deadline, bool) or deadline <= 0:
            return False
        resumed = find_condition(trainjob, "Suspended")
        started = parse_time(resumed.get("lastTransitionTime")) if resumed and resumed.get("status") == "False" \
            else parse_time(meta(trainjob).get("creationTimestamp"))
        return started is not None and time.time() - started > deadline

    # -- children -------------------------------------------------------------------------------------------------

    def _create_scheduling_objects(self, trainjob: dict, plan: Plan) -> None:
        workload = plan.workload(trainjob, self.flavour)
        if workload is None:
            return
        namespace = meta(trainjob).get("namespace", "default")
        created = self._create_or_get(self.flavour.collection("workloads", namespace), workload)
        for group in plan.pod_groups(trainjob, self.flavour, created):
            self._group_objects.setdefault(meta(trainjob).get("uid", ""), {})[group["metadata"]["name"]] = \
                self._create_or_get(
                self.flavour.collection("podgroups", namespace), group)

    def _delete_scheduling_objects(self, trainjob: dict) -> None:
        """Delete the PodGroups and the Workload the TrainJob controls (found by ownerReference, never by name)."""
        namespace, uid = meta(trainjob).get("namespace", "default"), meta(trainjob).get("uid", "")
        for plural in ("podgroups", "workloads"):
            collection = self.flavour.collection(plural, namespace)
            for obj in self.client.list(collection).get("items") or []:
                if owner_uid(obj, "TrainJob") != uid or meta(obj).get("deletionTimestamp"):
                    continue
                try:
                    self.client.delete(f"{collection}/{meta(obj)['name']}")
                except ApiError as error:
                    if error.status != 404:
                        raise

    def _report_deadlocks(self, trainjob: dict, plan: Plan, waits: dict) -> None:
        """Record, once per gang, why it can never reach minCount (what JobSet will not create, and why)."""
        for group, rjob, target, wanted in deadlocks(plan, waits):
            if group.name in self._deadlocks_reported:
                continue
            self._deadlocks_reported.add(group.name)
            possible = sum(r.pods if group.job_index is None else r.pods_per_job for r in plan.replicated_jobs
                           if r.name in group.replicated_jobs and r.name not in waits)
            message = (f"PodGroup {group.name} (gang, minCount {group.min_count}) waits for pods that JobSet will not "
                       f"create before `{target}` is {wanted}: ReplicatedJob `{rjob}` dependsOn `{target}` "
                       f"({wanted}) and both are in this gang, so at most {possible} of {group.min_count} pods "
                       f"can exist and the gang never schedules")
            for obj in (self._group_objects.get(meta(trainjob).get("uid", ""), {}).get(group.name), trainjob):
                if obj is not None:
                    self.events.record(obj, WARNING, "StartupOrderDeadlock", message)

    def _create_or_get(self, collection: str, obj: dict) -> dict:
        """Create `obj`; when it already exists return the existing one. Raises ApiError otherwise."""
        try:
            return self.client.create(collection, obj)
        except ApiError as error:
            if error.reason != "AlreadyExists" and error.status != 409:
                raise
            return self.client.get(f"{collection}/{obj['metadata']['name']}")

    def _still_exists(self, trainjob: dict) -> bool:
        """Return True when the server still has this TrainJob (same UID). Raises ApiError on other errors."""
        tj_meta = meta(trainjob)
        try:
            current = self.client.get(trainjob_path(tj_meta.get("namespace", "default"), tj_meta["name"]))
        except ApiError as error:
            if error.status == 404:
                return False
            raise
        return meta(current).get("uid") == tj_meta.get("uid") and not meta(current).get("deletionTimestamp")

    def _missing_pods(self, trainjob: dict, runtime: dict, plan: Plan, pods: list[dict],
                      incarnation: str) -> list[dict]:
        """Return the Pod objects of `trainjob` that neither exist nor were just created."""
        tj_meta = meta(trainjob)
        namespace, uid = tj_meta.get("namespace", "default"), tj_meta.get("uid", "")
        salt = f"{uid}/{incarnation}" if incarnation else uid
        existing = {pod_slot(p) for p in pods if not meta(p).get("deletionTimestamp")}
        missing = []
        for rjob in plan.replicated_jobs:
            for job_index in range(rjob.replicas):
                group = plan.group_for(rjob.name, job_index)
                for pod_index in range(rjob.pods_per_job):
                    if (rjob.name, str(job_index), str(pod_index)) in existing:
                        continue
                    # A pod that existed and went (evicted, deleted) is replaced under a new name, as the Job
                    # controller does; one created a moment ago and not yet in the cache is not created twice.
                    attempt, last = self._slots.get((uid, rjob.name, job_index, pod_index), (-1, None))
                    if last is not None and f"{namespace}/{last}" in self._pending_pods:
                        continue
                    attempt += 1
                    name = pod_name(tj_meta["name"], rjob.name, job_index, pod_index,
                                    f"{salt}/{attempt}" if attempt else salt)
                    created = self._group_objects.get(uid, {}).get(group.name) if group else None
                    pod = build_pod(trainjob, runtime, rjob.name, job_index, pod_index, rjob.resources,
                                    group.name if group else None, pod_claims(created))
                    pod["metadata"]["name"] = name
                    self._slot_of[f"{namespace}/{name}"] = ((uid, rjob.name, job_index, pod_index), attempt)
                    missing.append(pod)
        return missing

    def _create_pods(self, pods: list[dict]) -> None:
        """Create `pods` (AlreadyExists is fine: names are deterministic per attempt). Raises ApiError otherwise."""
        for pod in pods:
            namespace = pod["metadata"]["namespace"]
            try:
                self.client.create(f"/api/v1/namespaces/{namespace}/pods", pod)
            except ApiError as error:
                if error.status != 409:
                    raise
            key = f"{namespace}/{pod['metadata']['name']}"
            self._pending_pods.add(key)
            slot, attempt = self._slot_of.pop(key, (None, 0))
            if slot is not None:
                self._slots[slot] = (attempt, pod["metadata"]["name"])

    def _delete_running(self, pods: list[dict]) -> None:
        for pod in pods:
            if is_terminal(pod) or meta(pod).get("deletionTimestamp"):
                continue
            try:
                self.client.delete(pod_path(meta(pod)["namespace"], meta(pod)["name"]))
            except ApiError as error:
                if error.status != 404:
                    raise

    # -- status ---------------------------------------------------------------------------------------------------

    def _set_conditions(self, trainjob: dict, changes: list[tuple[str, bool, str, str]],
                        jobs: list[dict] | None = None) -> None:
        current = trainjob
        dirty = False
        for condition_type, status, reason, message in changes:
            conditions = with_condition(current, condition_type, status, reason, message)
            if conditions is not None:
                current = {**current, "status": {**(current.get("status") or {}), "conditions": conditions}}
                dirty = True
        patch: dict = {}
        if dirty:
            patch["conditions"] = current["status"]["conditions"]
        if jobs is not None and jobs != (trainjob.get("status") or {}).get("jobsStatus"):
            patch["jobsStatus"] = jobs
        if not patch:
            return
        tj_meta = meta(trainjob)
        self.client.patch_status(trainjob_path(tj_meta.get("namespace", "default"), tj_meta["name"]),
                                 {"status": patch})

    def _reconcile_failed(self, trainjob: dict, message: str) -> None:
        """Record upstream's Warning Event for a failed reconcile (message cut at 950 characters, as upstream)."""
        text = f"TrainJob resources reconciliation failed: {message[:950]}" + (" ..." if len(message) > 950 else "")
        self.trainer_events.record(trainjob, WARNING, RESOURCES_CREATION_FAILED, text)

    def _warn_missing_runtime(self, trainjob: dict) -> None:
        tj_meta = meta(trainjob)
        uid = tj_meta.get("uid", "")
        if uid in self._warned or not self._still_exists(trainjob):
            return
        self._warned.add(uid)
        ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
        name = ref.get("name", "")
        if (ref.get("kind") or "ClusterTrainingRuntime") == "ClusterTrainingRuntime":
            cause = (f"not found ClusterTrainingRuntime specified in TrainJob: "
                     f"clustertrainingruntimes.trainer.kubeflow.org \"{name}\" not found")
        else:
            cause = (f"TrainingRuntime specified in TrainJob is not found: "
                     f"trainingruntimes.trainer.kubeflow.org \"{name}\" not found")
        self._reconcile_failed(trainjob, cause)
