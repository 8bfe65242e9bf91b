"""A minimal simulated Kueue: quota admission of TrainJobs against a per-namespace GPU quota.

On start it installs the `workloads.kueue.x-k8s.io` CRD (v1beta2), as installing Kueue would. For every TrainJob
labelled `kueue.x-k8s.io/queue-name` it keeps a Kueue Workload (`trainjob-<name>-<5 hex>`, label
`kueue.x-k8s.io/job-uid`, owned by the TrainJob; one podSet per ReplicatedJob, count = pods) and holds the TrainJob
suspended until admitted (what Kueue's webhook and job reconciler do). Admission, best-effort FIFO per namespace
(one ClusterQueue `cq-<namespace>` per namespace, flavor `default-flavor`): when the GPUs the TrainJob requests fit
the namespace's unused quota, the Workload gets `QuotaReserved` and `Admitted` True and `status.admission`, and the
TrainJob gets a `runtimePatches` entry of manager `kueue.x-k8s.io/manager` and `suspend: false`. Otherwise
`QuotaReserved` is False, reason `Pending`, with Kueue's message ("couldn't assign flavors to pod set node:
insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 16 more needed"). A finished TrainJob's
Workload gets `Finished` True and frees its quota.

Not modelled: LocalQueue/ClusterQueue objects, cohorts, borrowing, preemption, admission checks, TAS.
"""

from __future__ import annotations

import hashlib
import logging
import threading

from sandbox.controllers.client import ApiError, Client
from sandbox.controllers.common import condition_is_true, meta, now, trainjob_path, with_condition
from sandbox.controllers.expansion import PlanError, plan_for
from sandbox.controllers.informer import Informer, Loop, object_key
from sandbox.controllers.resources import parse_quantity

log = logging.getLogger("sandbox.controllers.kueue")

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
MANAGER = "kueue.x-k8s.io/manager"
GROUP_VERSION = "kueue.x-k8s.io/v1beta2"
FLAVOR = "default-flavor"
GPU = "nvidia.com/gpu"
WORKLOADS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "workloads.kueue.x-k8s.io"},
    "spec": {"group": "kueue.x-k8s.io", "scope": "Namespaced",
             "names": {"plural": "workloads", "singular": "workload", "kind": "Workload", "listKind": "WorkloadList",
                       "shortNames": ["wl"]},
             "versions": [{"name": "v1beta2", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


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


class Kueue:
    """The simulated Kueue controller manager (one loop: workloads, suspension, admission)."""

    def __init__(self, api_url: str, stop: threading.Event, *, trainjobs: Informer, cluster_runtimes: Informer,
                 runtimes: Informer, quotas: dict[str, int] | None = None, default_quota: int = 128):
        self.client = Client(api_url, user_agent="sandbox-kueue")
        self.trainjobs, self.cluster_runtimes, self.runtimes = trainjobs, cluster_runtimes, runtimes
        self.workloads = Informer(api_url, f"/apis/{GROUP_VERSION}/workloads", stop)
        self.quotas, self.default_quota = dict(quotas or {}), default_quota
        self.loop = Loop("kueue", self.sync, stop, resync=3.0, min_interval=0.1,
                         wait_for=(trainjobs, cluster_runtimes, runtimes, self.workloads))
        for informer in (trainjobs, self.workloads):
            informer.add_handler(self.loop.poke)
        self._installed = False
        self._admitted: set[str] = set()  # TrainJob UIDs admitted by us (the caches may not show it yet)

    def start(self) -> None:
        """Install the CRD (retried by the loop when it fails) and start the watch and the loop."""
        self._install()
        self.workloads.start()
        self.loop.start()

    def _install(self) -> None:
        if self._installed:
            return
        try:
            self.client.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WORKLOADS_CRD)
        except ApiError as error:
            if error.status != 409:
                log.warning("installing the Kueue Workload CRD failed: %s", error)
                return
        except OSError as error:
            log.warning("installing the Kueue Workload CRD failed: %s", error)
            return
        self._installed = True

    # -- one pass -------------------------------------------------------------------------------------------------

    def _gpus(self, trainjob: dict) -> tuple[list[dict], int] | None:
        """Return (podSets, GPUs requested) of a TrainJob, or None when its runtime is missing or invalid."""
        ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
        if (ref.get("kind") or "ClusterTrainingRuntime") == "ClusterTrainingRuntime":
            runtime = self.cluster_runtimes.get(ref.get("name", ""))
        else:
            runtime = self.runtimes.get(f"{meta(trainjob).get('namespace')}/{ref.get('name', '')}")
        if runtime is None:
            return None
        try:
            plan = plan_for(runtime, trainjob)
            total = sum(r.pods * parse_quantity(r.resources.get(GPU, "0")) for r in plan.replicated_jobs) // 1000
        except (PlanError, ValueError):
            return None
        return [{"name": r.name, "count": r.pods} for r in plan.replicated_jobs], total

    def sync(self) -> bool:
        """Keep Workloads and suspension in line and admit what fits; return True when a write failed."""
        self._install()
        retry = False
        by_uid = {(meta(w).get("labels") or {}).get(JOB_UID_LABEL): w for w in self.workloads.items()}
        pending: dict[str, list[tuple[dict, dict, int]]] = {}
        used: dict[str, int] = {}
        for trainjob in sorted(self.trainjobs.items(), key=lambda j: (meta(j).get("creationTimestamp") or "",
                                                                       object_key(j))):
            if not queued(trainjob) or meta(trainjob).get("deletionTimestamp"):
                continue
            namespace = meta(trainjob).get("namespace", "default")
            try:
                workload = by_uid.get(meta(trainjob).get("uid")) or self._create_workload(trainjob)
                if workload is None:
                    continue
                finished = condition_is_true(trainjob, "Complete") or condition_is_true(trainjob, "Failed")
                if finished:
                    self._condition(workload, "Finished", True, "Succeeded" if condition_is_true(
                        trainjob, "Complete") else "Failed", "Job finished")
                    continue
                sized = self._gpus(trainjob)
                if meta(trainjob).get("uid") in self._admitted or (
                        kueue_admitted(trainjob) and condition_is_true(workload, "Admitted")):
                    used[namespace] = used.get(namespace, 0) + (sized[1] if sized else 0)
                    continue
                if not (trainjob.get("spec") or {}).get("suspend"):
                    self.client.merge_patch(trainjob_path(namespace, meta(trainjob)["name"]),
                                            {"spec": {"suspend": True}})
                if sized is not None:
                    pending.setdefault(namespace, []).append((trainjob, workload, sized[1]))
            except (ApiError, OSError) as error:
                log.info("kueue: %s: %s (will retry)", object_key(trainjob), error)
                retry = True
        for namespace, queue in pending.items():
            quota = self.quotas.get(namespace, self.default_quota)
            for trainjob, workload, gpus in queue:
                try:
                    free = quota - used.get(namespace, 0)
                    if gpus <= free:
                        self._admit(trainjob, workload, namespace)
                        used[namespace] = used.get(namespace, 0) + gpus
                        continue
                    first = (workload.get("spec") or {}).get("podSets", [{}])[0].get("name", "node")
                    if gpus > quota:
                        message = (f"couldn't assign flavors to pod set {first}: insufficient quota for {GPU} in "
                                   f"flavor {FLAVOR}, request > maximum capacity ({gpus} > {quota})")
                    else:
                        message = (f"couldn't assign flavors to pod set {first}: insufficient unused quota for "
                                   f"{GPU} in flavor {FLAVOR}, {gpus - free} more needed")
                    self._condition(workload, "QuotaReserved", False, "Pending", message)
                except (ApiError, OSError) as error:
                    log.info("kueue: admitting %s: %s (will retry)", object_key(trainjob), error)
                    retry = True
        return retry

    def _create_workload(self, trainjob: dict) -> dict | None:
        sized = self._gpus(trainjob)
        if sized is None:
            return None
        namespace = meta(trainjob).get("namespace", "default")
        workload = {
            "apiVersion": GROUP_VERSION, "kind": "Workload",
            "metadata": {"name": workload_name(trainjob), "namespace": namespace,
                         "labels": {JOB_UID_LABEL: meta(trainjob).get("uid", "")},
                         "ownerReferences": [{"apiVersion": trainjob.get("apiVersion"), "kind": "TrainJob",
                                              "name": meta(trainjob)["name"], "uid": meta(trainjob).get("uid", ""),
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"queueName": meta(trainjob)["labels"][QUEUE_LABEL], "podSets": sized[0], "priority": 0,
                     "active": True},
        }
        path = f"/apis/{GROUP_VERSION}/namespaces/{namespace}/workloads"
        try:
            return self.client.create(path, workload)
        except ApiError as error:
            if error.status != 409:
                raise
            return self.client.get(f"{path}/{workload['metadata']['name']}")

    def _admit(self, trainjob: dict, workload: dict, namespace: str) -> None:
        queue = f"cq-{namespace}"
        conditions = with_condition(workload, "QuotaReserved", True, "QuotaReserved",
                                    f"Quota reserved in ClusterQueue {queue}") or \
            (workload.get("status") or {}).get("conditions") or []
        current = {**workload, "status": {**(workload.get("status") or {}), "conditions": conditions}}
        conditions = with_condition(current, "Admitted", True, "Admitted", "The workload is admitted") or conditions
        assignments = [{"name": p["name"], "count": p["count"], "flavors": {GPU: FLAVOR}}
                       for p in (workload.get("spec") or {}).get("podSets") or []]
        self.client.patch_status(f"/apis/{GROUP_VERSION}/namespaces/{namespace}/workloads/{meta(workload)['name']}",
                                 {"status": {"conditions": conditions,
                                             "admission": {"clusterQueue": queue, "podSetAssignments": assignments}}})
        patches = [p for p in (trainjob.get("spec") or {}).get("runtimePatches") or [] if p.get("manager") != MANAGER]
        self.client.merge_patch(trainjob_path(namespace, meta(trainjob)["name"]),
                                {"spec": {"suspend": False,
                                          "runtimePatches": [*patches, {"manager": MANAGER, "time": now()}]}})
        self._admitted.add(meta(trainjob).get("uid", ""))

    def _condition(self, workload: dict, condition_type: str, status: bool, reason: str, message: str) -> None:
        conditions = with_condition(workload, condition_type, status, reason, message)
        if conditions is None:
            return
        self.client.patch_status(f"/apis/{GROUP_VERSION}/namespaces/{meta(workload)['namespace']}/workloads/"
                                 f"{meta(workload)['name']}", {"status": {"conditions": conditions}})
