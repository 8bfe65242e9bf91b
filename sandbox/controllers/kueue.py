"""A simulated Kueue (v1beta2, as of 0.19): quota admission of TrainJobs through LocalQueues and ClusterQueues.

On start it installs Kueue's CRDs (`sandbox/crds/kueue/`: ResourceFlavor, ClusterQueue, LocalQueue, Cohort,
WorkloadPriorityClass, Workload) over the API, as installing Kueue would, and — when SANDBOX_KUEUE_GPU_QUOTA names
namespaces — creates for each a ResourceFlavor `default-flavor`, a ClusterQueue `cq-<namespace>` and a LocalQueue
`user-queue` (the shape of Kueue's quick start).

The TrainJob integration (`pkg/controller/jobs/trainjob`): a TrainJob labelled `kueue.x-k8s.io/queue-name` is held
suspended; it gets a Workload (`trainjob-<name>-<5 hex>`, label `kueue.x-k8s.io/job-uid`, owned by the TrainJob) with
one podSet per ReplicatedJob (count = pods, template = the pod template with its sized requests) and a priority
(`kueue.x-k8s.io/priority-class` → WorkloadPriorityClass, else the pod template's PriorityClass). Admission per
ClusterQueue in priority then FIFO order (StrictFIFO: the head blocks; BestEffortFIFO: what fits goes): flavors are
tried in order per resource group; a cohort lends unused quota within borrowing and lending limits; when nothing
fits, lower-priority workloads of the same ClusterQueue (`withinClusterQueue`) and borrowers of the cohort
(`reclaimWithinCohort`) are evicted. An admitted Workload gets `QuotaReserved`/`Admitted` True and
`status.admission`; its TrainJob a `runtimePatches` entry (manager `kueue.x-k8s.io/manager`) carrying the flavors'
nodeSelector and tolerations, then `suspend: false`. A pending one gets `QuotaReserved=False` with Kueue 0.19's reason
(`WaitingForQuota`, `ExceedsMaxQuota`, `NoMatchingFlavor`, `Misconfigured`) and message. An evicted one is suspended
again. A finished TrainJob's Workload gets `Finished` and frees its quota. ClusterQueue and LocalQueue status carry
the counts and usage per flavor; Events as Kueue records them.

Not modelled: admission checks, TAS, fair sharing, hierarchical cohorts, partial admission, borrowWithinCohort.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import threading
import time
from pathlib import Path

import yaml

from sandbox.controllers.client import ApiError, Client
from sandbox.controllers.common import (
    condition_is_true,
    find_condition,
    meta,
    now,
    parse_time,
    trainjob_path,
    with_condition,
)
from sandbox.controllers.events import EventRecorder
from sandbox.controllers.expansion import PlanError, plan_for
from sandbox.controllers.informer import Informer, Loop, object_key
from sandbox.controllers.kueue_quota import (
    INADMISSIBLE,
    WAITING,
    Assignment,
    Cohorts,
    Queue,
    Usage,
    assign,
    format_quantity,
)
from sandbox.controllers.resources import parse_quantity, pod_requests

log = logging.getLogger("sandbox.controllers.kueue")

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
MANAGER = "kueue.x-k8s.io/manager"
GROUP = "kueue.x-k8s.io"
GROUP_VERSION = f"{GROUP}/v1beta2"
BASE = f"/apis/{GROUP_VERSION}"
FLAVOR = "default-flavor"
GPU = "nvidia.com/gpu"
CRD_FILE = Path(__file__).resolve().parents[1] / "crds" / "kueue" / "kueue.x-k8s.io_v1beta2.yaml"
QUOTA_RESOURCES = (GPU, "cpu", "memory")


def kueue_crds() -> list[dict]:
    """Return Kueue's CustomResourceDefinitions as vendored in sandbox/crds/kueue/."""
    with CRD_FILE.open() as fh:
        return [d for d in yaml.safe_load_all(fh) if d]


def kueue_admitted(trainjob: dict) -> bool:
    """Return True when Kueue has admitted the TrainJob (its runtimePatches carry Kueue's manager)."""
    patches = (trainjob.get("spec") or {}).get("runtimePatches") or []
    return any(isinstance(p, dict) and p.get("manager") == MANAGER for p in patches)


def queued(trainjob: dict) -> bool:
    """Return True when the TrainJob names a Kueue LocalQueue."""
    return bool((meta(trainjob).get("labels") or {}).get(QUEUE_LABEL))


def workload_name(trainjob: dict) -> str:
    """Return Kueue's Workload name for a TrainJob: `trainjob-<name>-<5 hex of sha1>` (≤ 63 characters)."""
    digest = hashlib.sha1(f"{meta(trainjob)['name']}/{meta(trainjob).get('uid', '')}".encode(),
                          usedforsecurity=False).hexdigest()[:5]
    return f"trainjob-{meta(trainjob)['name']}"[:57].rstrip("-") + f"-{digest}"


def parse_quotas(text: str) -> tuple[dict[str, int], int]:
    """Return ({namespace: GPUs}, default GPUs) from "team-a=64,team-b=32,*=128". Raises ValueError when malformed."""
    quotas, default = {}, 128
    for item in filter(None, (part.strip() for part in text.split(","))):
        namespace, _, value = item.partition("=")
        if not value.strip().isdigit():
            raise ValueError(f"SANDBOX_KUEUE_GPU_QUOTA: {item!r} is not NAMESPACE=GPUS")
        if namespace.strip() == "*":
            default = int(value)
        else:
            quotas[namespace.strip()] = int(value)
    return quotas, default


def workload_priority(workload: dict) -> int:
    """Return the Workload's priority (0 when unset)."""
    value = (workload.get("spec") or {}).get("priority")
    return value if isinstance(value, int) else 0


def queue_order_time(workload: dict) -> str:
    """Return the time the Workload queues by: its last eviction (requeued at the back), else its creation."""
    evicted = find_condition(workload, "Evicted")
    if evicted and evicted.get("status") == "True":
        return evicted.get("lastTransitionTime") or ""
    return meta(workload).get("creationTimestamp") or ""


def pending_order(workloads: list[dict]) -> list[dict]:
    """Return pending Workloads in Kueue's queue order: higher priority first, then earlier queue time, then name."""
    return sorted(workloads, key=lambda w: (-workload_priority(w), queue_order_time(w), object_key(w)))


def _pod_set_requests(pod_set: dict) -> dict[str, int]:
    """Return a podSet's total requests (count × one pod's), quota resources only, in milli-units."""
    try:
        one = pod_requests(pod_set.get("template") or {})
    except ValueError:
        return {}
    count = pod_set.get("count") or 0
    return {r: one.get(r, 0) * count for r in QUOTA_RESOURCES if one.get(r)}


def _usage_of(workload: dict) -> list[tuple[dict[str, int], dict[str, str]]]:
    """Return [(requests, {resource: flavor})] per admitted podSet of a Workload."""
    admission = (workload.get("status") or {}).get("admission") or {}
    by_name = {p.get("name"): p for p in (workload.get("spec") or {}).get("podSets") or []}
    return [(_pod_set_requests(by_name.get(a.get("name")) or {}), a.get("flavors") or {})
            for a in admission.get("podSetAssignments") or []]


class Kueue:
    """The simulated Kueue controller manager (one loop: workloads, suspension, admission, queue status)."""

    def __init__(self, api_url: str, stop: threading.Event, *, trainjobs: Informer, cluster_runtimes: Informer,
                 runtimes: Informer, quotas: dict[str, int] | None = None, default_quota: int = 128,
                 cohort: str = ""):
        self.client = Client(api_url, user_agent="sandbox-kueue")
        self.events = EventRecorder(Client(api_url, user_agent="sandbox-kueue-events"), "kueue-admission")
        self.trainjobs, self.cluster_runtimes, self.runtimes = trainjobs, cluster_runtimes, runtimes
        watch = {name: Informer(api_url, path, stop) for name, path in (
            ("workloads", f"{BASE}/workloads"), ("clusterqueues", f"{BASE}/clusterqueues"),
            ("localqueues", f"{BASE}/localqueues"), ("flavors", f"{BASE}/resourceflavors"),
            ("wpcs", f"{BASE}/workloadpriorityclasses"),
            ("priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses"))}
        self.workloads, self.clusterqueues, self.localqueues = (watch["workloads"], watch["clusterqueues"],
                                                                watch["localqueues"])
        self.flavors, self.wpcs, self.priorityclasses = watch["flavors"], watch["wpcs"], watch["priorityclasses"]
        self._informers = list(watch.values())
        self.quotas, self.default_quota = dict(quotas or {}), default_quota
        self.cohort = cohort  # the quick-start ClusterQueues share this cohort (and reclaim what they lent)
        self.loop = Loop("kueue", self.sync, stop, resync=3.0, min_interval=0.1,
                         wait_for=(trainjobs, cluster_runtimes, runtimes, *self._informers))
        for informer in (trainjobs, *self._informers):
            informer.add_handler(self.loop.poke)
        self._installed = False
        self._checked = 0.0
        self._bootstrapped = not self.quotas
        self._admitted: dict[str, dict] = {}  # Workload key -> the Workload as we admitted it (caches may lag)
        self._evicted: set[str] = set()  # Workload keys we evicted and whose eviction the cache may not show yet
        self._status_written: dict[str, dict] = {}

    def start(self) -> None:
        """Install the CRDs (retried by the loop when it fails) and start the watches and the loop."""
        self._install()
        for informer in self._informers:
            informer.start()
        self.loop.start()

    def _install(self) -> None:
        """Create Kueue's CRDs; every few seconds check they still exist (a /sandbox/reset drops them) and then
        install again, forgetting what the old objects told us."""
        if self._installed:
            if time.monotonic() - self._checked < 5.0:
                return
            self._checked = time.monotonic()
            try:
                self.client.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workloads.kueue.x-k8s.io")
                return
            except ApiError as error:
                if error.status != 404:
                    return
            except OSError:
                return
            self._installed, self._bootstrapped = False, not self.quotas
            self._admitted.clear()
            self._evicted.clear()
            self._status_written.clear()
        try:
            for crd in kueue_crds():
                try:
                    self.client.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
                except ApiError as error:
                    if error.status != 409:
                        raise
        except (ApiError, OSError) as error:
            log.warning("installing Kueue's CRDs failed: %s", error)
            return
        self._installed = True

    def _bootstrap(self) -> None:
        """Create the quick-start queues of SANDBOX_KUEUE_GPU_QUOTA (once; existing objects are kept)."""
        if self._bootstrapped:
            return
        objects = [(f"{BASE}/resourceflavors", {"apiVersion": GROUP_VERSION, "kind": "ResourceFlavor",
                                                "metadata": {"name": FLAVOR}, "spec": {}})]
        for namespace, gpus in sorted(self.quotas.items()):
            objects.append((f"{BASE}/clusterqueues", {
                "apiVersion": GROUP_VERSION, "kind": "ClusterQueue", "metadata": {"name": f"cq-{namespace}"},
                "spec": {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
                         "resourceGroups": [{"coveredResources": list(QUOTA_RESOURCES), "flavors": [
                             {"name": FLAVOR, "resources": [
                                 {"name": GPU, "nominalQuota": gpus}, {"name": "cpu", "nominalQuota": 100000},
                                 {"name": "memory", "nominalQuota": "1000Ti"}]}]}],
                         **({"cohortName": self.cohort, "preemption": {
                             "reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}}
                            if self.cohort else {})}}))
            objects.append((f"{BASE}/namespaces/{namespace}/localqueues", {
                "apiVersion": GROUP_VERSION, "kind": "LocalQueue",
                "metadata": {"name": "user-queue", "namespace": namespace},
                "spec": {"clusterQueue": f"cq-{namespace}"}}))
        for path, obj in objects:
            try:
                self.client.create(path, obj)
            except ApiError as error:
                if error.status != 409:
                    log.warning("creating %s failed: %s", obj["metadata"]["name"], error)
                    return
        self._bootstrapped = True

    # -- Workloads for TrainJobs ----------------------------------------------------------------------------------

    def _runtime_of(self, trainjob: dict) -> dict | None:
        ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
        if (ref.get("kind") or "ClusterTrainingRuntime") == "ClusterTrainingRuntime":
            return self.cluster_runtimes.get(ref.get("name", ""))
        return self.runtimes.get(f"{meta(trainjob).get('namespace')}/{ref.get('name', '')}")

    def _pod_sets(self, trainjob: dict) -> list[dict] | None:
        """Return one podSet per ReplicatedJob (count = pods, template = its sized pod template), or None when the
        runtime is missing or invalid."""
        runtime = self._runtime_of(trainjob)
        if runtime is None:
            return None
        try:
            plan = plan_for(runtime, trainjob)
        except (PlanError, ValueError):
            return None
        templates = {r.get("name"): ((r.get("template") or {}).get("spec") or {}).get("template") or {}
                     for r in (((runtime.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
                         "replicatedJobs") or []}
        pod_sets = []
        for rjob in plan.replicated_jobs:
            template = copy.deepcopy(templates.get(rjob.name) or {})
            containers = (template.setdefault("spec", {})).get("containers") or []
            main = next((c for c in containers if c.get("name") in (rjob.name, rjob.ancestor, "node")),
                        containers[0] if containers else None)
            if main is not None:
                main["resources"] = {"requests": dict(rjob.resources)}
            pod_sets.append({"name": rjob.name, "count": rjob.pods, "template": template})
        return pod_sets

    def _priority(self, trainjob: dict, pod_sets: list[dict]) -> tuple[int, dict | None]:
        """Return (priority, priorityClassRef): the WorkloadPriorityClass of the label, else the pods' PriorityClass."""
        name = (meta(trainjob).get("labels") or {}).get(PRIORITY_LABEL)
        if name:
            wpc = self.wpcs.get(name)
            if wpc is None:
                try:
                    wpc = self.client.get(f"{BASE}/workloadpriorityclasses/{name}")
                except ApiError:
                    wpc = None
            if wpc is not None:
                return int(wpc.get("value") or 0), {"group": GROUP, "kind": "WorkloadPriorityClass", "name": name}
        for pod_set in pod_sets:
            pc_name = ((pod_set.get("template") or {}).get("spec") or {}).get("priorityClassName")
            pc = self.priorityclasses.get(pc_name) if pc_name else None
            if pc_name and pc is None:
                try:  # the Workload's priority is fixed at creation: do not let a lagging cache decide it
                    pc = self.client.get(f"/apis/scheduling.k8s.io/v1/priorityclasses/{pc_name}")
                except ApiError:
                    pc = None
            if pc is not None:
                return int(pc.get("value") or 0), {"group": "scheduling.k8s.io", "kind": "PriorityClass",
                                                   "name": pc_name}
        return 0, None

    def _create_workload(self, trainjob: dict) -> dict | None:
        pod_sets = self._pod_sets(trainjob)
        if pod_sets is None:
            return None
        namespace = meta(trainjob).get("namespace", "default")
        priority, ref = self._priority(trainjob, pod_sets)
        spec = {"queueName": meta(trainjob)["labels"][QUEUE_LABEL], "podSets": pod_sets, "priority": priority,
                "active": True}
        if ref:
            spec["priorityClassRef"] = ref
        workload = {
            "apiVersion": GROUP_VERSION, "kind": "Workload",
            "metadata": {"name": workload_name(trainjob), "namespace": namespace,
                         "labels": {JOB_UID_LABEL: meta(trainjob).get("uid", "")},
                         "ownerReferences": [{"apiVersion": trainjob.get("apiVersion"), "kind": "TrainJob",
                                              "name": meta(trainjob)["name"], "uid": meta(trainjob).get("uid", ""),
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": spec,
        }
        path = f"{BASE}/namespaces/{namespace}/workloads"
        try:
            created = self.client.create(path, workload)
        except ApiError as error:
            if error.status != 409:
                raise
            return self.client.get(f"{path}/{workload['metadata']['name']}")
        self.events.record(trainjob, "Normal", "CreatedWorkload",
                           f"Created Workload: {namespace}/{workload['metadata']['name']}")
        return created

    # -- one pass -------------------------------------------------------------------------------------------------

    def sync(self) -> bool:
        """Keep Workloads and suspension in line, admit what fits, evict for room, write queue status; return True
        when a write failed (the loop retries)."""
        self._install()
        self._bootstrap()
        retry = False
        by_uid = {(meta(w).get("labels") or {}).get(JOB_UID_LABEL): w for w in self.workloads.items()}
        jobs: dict[str, dict] = {}  # Workload key -> TrainJob
        workloads: list[dict] = []
        for trainjob in self.trainjobs.items():
            if not queued(trainjob) or meta(trainjob).get("deletionTimestamp"):
                continue
            try:
                workload = by_uid.get(meta(trainjob).get("uid")) or self._create_workload(trainjob)
                if workload is None:
                    continue
                key = object_key(workload)
                if key in self._admitted and (workload.get("status") or {}).get("admission"):
                    self._admitted.pop(key)  # the cache has caught up with our admission: it is the fresher copy
                workload = self._admitted.get(key, workload) if key not in self._evicted else workload
                if condition_is_true(workload, "Finished"):
                    continue
                if condition_is_true(trainjob, "Complete") or condition_is_true(trainjob, "Failed"):
                    self._finish(trainjob, workload)
                    continue
                live = by_uid.get(meta(trainjob).get("uid"))
                if live is not None and (live.get("spec") or {}).get("active") is False:
                    # Deactivated (`spec.active: false`): out of the queue; evicted when it held quota.
                    if self._reserved(workload):
                        self._evict(live, trainjob, "InactiveWorkload", "The workload is deactivated")
                    continue
                jobs[key] = trainjob
                workloads.append(workload)
                if not self._reserved(workload) and not (trainjob.get("spec") or {}).get("suspend"):
                    self.client.merge_patch(trainjob_path(meta(trainjob)["namespace"], meta(trainjob)["name"]),
                                            {"spec": {"suspend": True}})
            except (ApiError, OSError) as error:
                log.info("kueue: %s: %s (will retry)", object_key(trainjob), error)
                retry = True
        try:
            retry = self._schedule(workloads, jobs) or retry
        except (ApiError, OSError) as error:
            log.info("kueue: admission pass: %s (will retry)", error)
            retry = True
        return retry

    def _reserved(self, workload: dict) -> bool:
        return object_key(workload) not in self._evicted and (
            object_key(workload) in self._admitted or condition_is_true(workload, "QuotaReserved"))

    def _finish(self, trainjob: dict, workload: dict) -> None:
        succeeded = condition_is_true(trainjob, "Complete")
        self._condition(workload, [("Finished", True, "Succeeded" if succeeded else "Failed",
                                    "Job finished successfully" if succeeded else "Job failed")])
        self._admitted.pop(object_key(workload), None)

    def _schedule(self, workloads: list[dict], jobs: dict[str, dict]) -> bool:
        flavors = {object_key(f): f for f in self.flavors.items()}
        queues = {object_key(cq): Queue.from_object(cq, flavors) for cq in self.clusterqueues.items()}
        cohorts = Cohorts(queues)
        local = {object_key(lq): lq for lq in self.localqueues.items()}
        usage = Usage()
        admitted: dict[str, list[dict]] = {}
        pending: dict[str, list[dict]] = {}
        unqueued: list[tuple[dict, str]] = []
        for workload in workloads:
            lq_name = (workload.get("spec") or {}).get("queueName", "")
            lq = local.get(f"{meta(workload)['namespace']}/{lq_name}")
            if self._reserved(workload):
                cq = ((workload.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
                for requests, assigned in _usage_of(workload):
                    usage.add(cq, assigned, requests)
                admitted.setdefault(cq, []).append(workload)
            elif lq is None:
                unqueued.append((workload, f"LocalQueue {lq_name} doesn't exist"))
            elif (lq.get("spec") or {}).get("clusterQueue") not in queues:
                unqueued.append((workload, f"ClusterQueue {(lq.get('spec') or {}).get('clusterQueue')} doesn't "
                                           f"exist"))
            else:
                pending.setdefault(lq["spec"]["clusterQueue"], []).append(workload)
        for workload, message in unqueued:
            self._pending(workload, jobs, "Misconfigured", message)
        def head_borrows(cq_name: str) -> bool:
            head = pending_order(pending[cq_name])[0]
            result = assign(queues[cq_name], cohorts, flavors, self._pod_set_inputs(head), usage)
            return not result.fits or result.borrows

        # As Kueue's scheduler orders a cycle's heads: those that fit without borrowing first, so a workload that
        # just reclaimed its queue's lent quota gets it before the evicted borrower can borrow it again.
        for cq_name in sorted(pending, key=lambda name: (head_borrows(name), name)):
            queue = queues[cq_name]
            blocked = False
            for workload in pending_order(pending[cq_name]):
                if blocked:
                    self._pending(workload, jobs, WAITING, f"Workload is waiting for the head of ClusterQueue "
                                                           f"{cq_name} (StrictFIFO)")
                    continue
                result = assign(queue, cohorts, flavors, self._pod_set_inputs(workload), usage)
                if result.fits:
                    self._admit(workload, jobs[object_key(workload)], queue, result, flavors)
                    for requests, assigned in zip((_pod_set_requests(p) for p in workload["spec"]["podSets"]),
                                                  result.flavors, strict=False):
                        usage.add(cq_name, assigned, requests)
                    admitted.setdefault(cq_name, []).append(self._admitted[object_key(workload)])
                    continue
                if result.reason == WAITING and self._preempt(workload, queue, queues, cohorts, flavors, usage,
                                                              admitted, jobs):
                    result.message += " (preempting to make room)"
                self._pending(workload, jobs, result.reason, result.message)
                if queue.strategy == "StrictFIFO" and result.reason not in INADMISSIBLE:
                    blocked = True
        self._write_queue_status(queues, cohorts, usage, admitted, pending, local)
        return False

    @staticmethod
    def _pod_set_inputs(workload: dict) -> list[tuple[str, dict[str, int], dict]]:
        return [(p.get("name", "main"), _pod_set_requests(p),
                 ((p.get("template") or {}).get("spec") or {}).get("nodeSelector") or {})
                for p in (workload.get("spec") or {}).get("podSets") or []]

    def _preempt(self, workload: dict, queue: Queue, queues: dict[str, Queue], cohorts: Cohorts,
                 flavors: dict[str, dict], usage: Usage, admitted: dict[str, list[dict]],
                 jobs: dict[str, dict]) -> bool:
        """Evict lower-priority Workloads of the ClusterQueue and borrowers of the cohort when that makes room for
        `workload`; return True when it evicted any."""
        priority = workload_priority(workload)
        candidates: list[tuple[dict, str, str]] = []
        if queue.within in ("LowerPriority", "LowerOrNewerEqualPriority"):
            for other in admitted.get(queue.name, ()):
                lower = workload_priority(other) < priority or (
                    queue.within == "LowerOrNewerEqualPriority" and workload_priority(other) == priority
                    and queue_order_time(other) > queue_order_time(workload))
                if lower:
                    candidates.append((other, queue.name, "InClusterQueue"))
        if queue.reclaim != "Never" and queue.cohort:
            for member in cohorts.members.get(queue.cohort, ()):
                if member.name == queue.name:
                    continue
                for other in admitted.get(member.name, ()):
                    if queue.reclaim == "Any" or workload_priority(other) < priority:
                        candidates.append((other, member.name, "InCohortReclamation"))
        candidates.sort(key=lambda c: (workload_priority(c[0]), [-ord(ch) for ch in queue_order_time(c[0])]))
        trial = usage.copy()
        victims = []
        for other, cq_name, reason in candidates:
            if reason == "InCohortReclamation" and not any(
                    cohorts.borrowing(cq_name, f, r, trial) for requests, assigned in _usage_of(other)
                    for r, f in assigned.items()):
                continue  # reclaim takes back lent quota only
            for requests, assigned in _usage_of(other):
                trial.add(cq_name, assigned, requests, -1)
            victims.append((other, cq_name, reason))
            if assign(queue, cohorts, flavors, self._pod_set_inputs(workload), trial).fits:
                break
        else:
            return False
        for other, cq_name, reason in victims:
            self._preempt_one(other, jobs.get(object_key(other)), workload, reason)
            for requests, assigned in _usage_of(other):
                usage.add(cq_name, assigned, requests, -1)
            admitted[cq_name] = [w for w in admitted.get(cq_name, ()) if object_key(w) != object_key(other)]
        return True

    # -- writes ---------------------------------------------------------------------------------------------------

    def _workload_path(self, workload: dict) -> str:
        return f"{BASE}/namespaces/{meta(workload)['namespace']}/workloads/{meta(workload)['name']}"

    def _condition(self, workload: dict, changes: list[tuple[str, bool, str, str]], extra: dict | None = None) -> dict:
        current = workload
        conditions = None
        for condition_type, status, reason, message in changes:
            updated = with_condition(current, condition_type, status, reason, message)
            if updated is not None:
                conditions = updated
                current = {**current, "status": {**(current.get("status") or {}), "conditions": updated}}
        if conditions is None and extra is None:
            return workload
        patch = {"status": {**({"conditions": conditions} if conditions is not None else {}), **(extra or {})}}
        return self.client.patch_status(self._workload_path(workload), patch)

    def _pending(self, workload: dict, jobs: dict[str, dict], reason: str, message: str) -> None:
        before = find_condition(workload, "QuotaReserved")
        self._condition(workload, [("QuotaReserved", False, reason, message)])
        if not before or before.get("message") != message:
            self.events.record(workload, "Warning", "Pending", message)

    def _admit(self, workload: dict, trainjob: dict, queue: Queue, result: Assignment,
               flavors: dict[str, dict]) -> None:
        pod_sets = (workload.get("spec") or {}).get("podSets") or []
        assignments = []
        node_selector: dict[str, str] = {}
        tolerations: list[dict] = []
        for pod_set, assigned in zip(pod_sets, result.flavors, strict=False):
            requests = _pod_set_requests(pod_set)
            assignments.append({"name": pod_set.get("name"), "count": pod_set.get("count"), "flavors": assigned,
                                "resourceUsage": {r: format_quantity(r, requests[r]) for r in assigned}})
            for flavor_name in sorted(set(assigned.values())):
                spec = (flavors.get(flavor_name) or {}).get("spec") or {}
                node_selector.update(spec.get("nodeLabels") or {})
                tolerations.extend(t for t in spec.get("tolerations") or [] if t not in tolerations)
        waited = _seconds_since(queue_order_time(workload))
        reserved = self._condition(
            workload,
            [("QuotaReserved", True, "QuotaReserved", f"Quota reserved in ClusterQueue {queue.name}"),
             ("Admitted", True, "Admitted", "The workload is admitted"),
             *([("Evicted", False, "QuotaReserved", "Previously: evicted")] if find_condition(workload, "Evicted")
               else []),
             *([("Preempted", False, "QuotaReserved", "Previously: preempted")]
               if find_condition(workload, "Preempted") else [])],
            {"admission": {"clusterQueue": queue.name, "podSetAssignments": assignments}})
        self._admitted[object_key(workload)] = reserved
        self._evicted.discard(object_key(workload))
        self.events.record(workload, "Normal", "QuotaReserved",
                           f"Quota reserved in ClusterQueue {queue.name}, wait time since queued was {waited}s")
        self.events.record(workload, "Normal", "Admitted",
                           f"Admitted by ClusterQueue {queue.name}, wait time since reservation was 0s")
        patch_spec: dict = {}
        if node_selector or tolerations:
            template_spec: dict = {}
            if node_selector:
                template_spec["nodeSelector"] = node_selector
            if tolerations:
                template_spec["tolerations"] = tolerations
            patch_spec = {"template": {"spec": {"replicatedJobs": [
                {"name": p.get("name"), "template": {"spec": {"template": {"spec": template_spec}}}}
                for p in pod_sets]}}}
        entry = {"manager": MANAGER, "time": now(), **({"trainingRuntimeSpec": patch_spec} if patch_spec else {})}
        patches = [p for p in (trainjob.get("spec") or {}).get("runtimePatches") or [] if p.get("manager") != MANAGER]
        self.client.merge_patch(trainjob_path(meta(trainjob)["namespace"], meta(trainjob)["name"]),
                                {"spec": {"suspend": False, "runtimePatches": [*patches, entry]}})
        self.events.record(trainjob, "Normal", "Started", f"Admitted by clusterQueue {queue.name}")

    def _preempt_one(self, workload: dict, trainjob: dict | None, preemptor: dict, reason: str) -> None:
        why = "prioritization in the ClusterQueue" if reason == "InClusterQueue" else "reclamation within the cohort"
        message = (f"Preempted to accommodate a workload (UID: {meta(preemptor).get('uid', '')}, JobUID: "
                   f"{(meta(preemptor).get('labels') or {}).get(JOB_UID_LABEL, '')}) due to {why}")
        self._evict(workload, trainjob, "Preempted", message, preempted=reason)

    def _evict(self, workload: dict, trainjob: dict | None, reason: str, message: str,
               preempted: str | None = None) -> None:
        """Take the Workload's quota back (Evicted, with Preempted when `preempted` names the preemption reason)
        and suspend its TrainJob again."""
        changes = [("Evicted", True, reason, message),
                   *([("Preempted", True, preempted, message)] if preempted else []),
                   ("QuotaReserved", False, reason, message),
                   ("Admitted", False, "NoReservation", "The workload has no reservation")]
        self._condition(workload, changes, {"admission": None})
        self._admitted.pop(object_key(workload), None)
        self._evicted.add(object_key(workload))
        if preempted:
            self.events.record(workload, "Normal", "Preempted", message)
        self.events.record(workload, "Normal", f"EvictedDueTo{reason}", message)
        if trainjob is not None:
            patches = [p for p in (trainjob.get("spec") or {}).get("runtimePatches") or []
                       if p.get("manager") != MANAGER]
            self.client.merge_patch(trainjob_path(meta(trainjob)["namespace"], meta(trainjob)["name"]),
                                    {"spec": {"suspend": True, "runtimePatches": patches}})
            self.events.record(trainjob, "Normal", "Stopped", message)

    def _write_queue_status(self, queues: dict[str, Queue], cohorts: Cohorts, usage: Usage,
                            admitted: dict[str, list[dict]], pending: dict[str, list[dict]],
                            local: dict[str, dict]) -> None:
        for cq in self.clusterqueues.items():
            name = object_key(cq)
            queue = queues[name]
            flavors_usage = []
            for _covered, flavor_names in queue.groups:
                for flavor in flavor_names:
                    resources = [{"name": r, "total": format_quantity(r, usage.get(name, flavor, r)),
                                  "borrowed": format_quantity(r, cohorts.borrowing(name, flavor, r, usage))}
                                 for (f, r) in queue.quotas if f == flavor]
                    flavors_usage.append({"name": flavor, "resources": resources})
            active = queue.problem is None
            status = {"pendingWorkloads": len(pending.get(name, ())),
                      "reservingWorkloads": len(admitted.get(name, ())),
                      "admittedWorkloads": len(admitted.get(name, ())),
                      "flavorsReservation": flavors_usage, "flavorsUsage": flavors_usage,
                      "fairSharing": {"weightedShare": cohorts.weighted_share(name, usage, _weight(cq))}}
            conditions = with_condition(cq, "Active", active, "Ready" if active else "FlavorNotFound",
                                        "Can admit new workloads" if active else queue.problem or "")
            self._write_status(f"{BASE}/clusterqueues/{name}", status, conditions)
        for key, lq in local.items():
            namespace, lq_name = key.split("/", 1)
            cq_name = (lq.get("spec") or {}).get("clusterQueue", "")
            mine = [w for w in admitted.get(cq_name, ()) if meta(w).get("namespace") == namespace
                    and (w.get("spec") or {}).get("queueName") == lq_name]
            lq_usage = Usage()
            for workload in mine:
                for requests, assigned in _usage_of(workload):
                    lq_usage.add(cq_name, assigned, requests)
            by_flavor: dict[str, list[dict]] = {}
            for (_cq, flavor, resource), amount in sorted(lq_usage.amounts.items()):
                by_flavor.setdefault(flavor, []).append({"name": resource, "total": format_quantity(resource,
                                                                                                    amount)})
            flavors_usage = [{"name": f, "resources": r} for f, r in by_flavor.items()]
            status = {"pendingWorkloads": sum(1 for w in pending.get(cq_name, ()) if meta(w).get("namespace") ==
                                              namespace and (w.get("spec") or {}).get("queueName") == lq_name),
                      "reservingWorkloads": len(mine), "admittedWorkloads": len(mine),
                      "flavorsReservation": flavors_usage, "flavorsUsage": flavors_usage}
            active = cq_name in queues
            conditions = with_condition(lq, "Active", active, "Ready" if active else "ClusterQueueDoesNotExist",
                                        "Can submit new workloads to localQueue" if active else
                                        "Can't submit new workloads to clusterQueue")
            self._write_status(f"{BASE}/namespaces/{namespace}/localqueues/{lq_name}", status, conditions)

    def _write_status(self, path: str, status: dict, conditions: list[dict] | None) -> None:
        if self._status_written.get(path) == status and conditions is None:
            return
        body = {**status, **({"conditions": conditions} if conditions is not None else {})}
        try:
            self.client.patch_status(path, {"status": body})
        except ApiError as error:
            if error.status != 404:
                raise
            return
        self._status_written[path] = status


def _weight(cluster_queue: dict) -> float:
    """Return the ClusterQueue's fair-sharing weight (default 1; a malformed one counts as 1)."""
    raw = (((cluster_queue.get("spec") or {}).get("fairSharing") or {}).get("weight"))
    if raw is None:
        return 1.0
    try:
        return parse_quantity(raw) / 1000
    except ValueError:
        return 1.0


def _seconds_since(timestamp: str) -> int:
    """Return whole seconds since an RFC 3339 timestamp (0 when unset)."""
    started = parse_time(timestamp)
    return 0 if started is None else max(0, int(time.time() - started))
