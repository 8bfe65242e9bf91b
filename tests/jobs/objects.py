"""Builders of raw cluster objects (the dicts a watch delivers) for the jobs tests.

Names are salted with the TrainJob UID the way the controllers salt them, so nothing can be found by predicting a
name.
"""

from __future__ import annotations

import itertools

_RV = itertools.count(100)


def _rv() -> str:
    return str(next(_RV))


def condition(kind: str, status: bool | str, reason: str = "", message: str = "",
              at: str = "2026-12-01T12:00:00Z") -> dict:
    """A metav1.Condition."""
    value = status if isinstance(status, str) else ("True" if status else "False")
    return {"type": kind, "status": value, "reason": reason, "message": message, "lastTransitionTime": at}


def trainjob(name: str = "llm", uid: str = "uid-1", *, namespace: str = "team-a", suspend: bool = False,
             conditions: list[dict] | None = None, num_nodes: int = 4, gpus: int = 8, queue: str = "",
             runtime: str = "torch-distributed", jobs_status: list[dict] | None = None,
             created: str = "2026-12-01T11:00:00Z", rv: str | None = None, creator: str = "") -> dict:
    """A TrainJob."""
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    annotations = {"trainer.kubeflow.org/creator": creator} if creator else {}
    obj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "resourceVersion": rv or _rv(),
                     "creationTimestamp": created, "labels": labels, "annotations": annotations},
        "spec": {"runtimeRef": {"name": runtime, "kind": "ClusterTrainingRuntime"}, "suspend": suspend,
                 "trainer": {"numNodes": num_nodes, "resourcesPerNode": {"requests": {"nvidia.com/gpu": str(gpus)}}}},
        "status": {},
    }
    if conditions:
        obj["status"]["conditions"] = conditions
    if jobs_status:
        obj["status"]["jobsStatus"] = jobs_status
    return obj


def _owner(kind: str, name: str, uid: str, *, controller: bool = True, api: str = "trainer.kubeflow.org/v1alpha1"):
    return {"apiVersion": api, "kind": kind, "name": name, "uid": uid, "controller": controller}


def workload(job: dict, *, templates: list[dict] | None = None, version: str = "v1beta1", owner: bool = True) -> dict:
    """The scheduling.k8s.io Workload of ``job`` (name salted with the job's UID)."""
    meta = job["metadata"]
    templates = templates if templates is not None else [
        {"name": meta["name"], "schedulingPolicy": {"gang": {"minCount": job["spec"]["trainer"]["numNodes"]}}}]
    spec: dict = {"controllerRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainJob", "name": meta["name"]}}
    spec["podGroups" if version == "v1alpha1" else "podGroupTemplates"] = templates
    return {
        "apiVersion": f"scheduling.k8s.io/{version}", "kind": "Workload",
        "metadata": {"name": f"{meta['name']}-{meta['uid'][-6:]}w", "namespace": meta["namespace"],
                     "uid": f"wl-{meta['uid']}", "resourceVersion": _rv(),
                     "ownerReferences": [_owner("TrainJob", meta["name"], meta["uid"])] if owner else []},
        "spec": spec,
    }


def pod_group(job: dict, wl: dict | None, *, template: str | None = None, min_count: int | None = None,
              policy: str = "gang", conditions: list[dict] | None = None, version: str = "v1beta1",
              suffix: str = "", topology_key: str = "", owner_uid: str | None = None, workload_name: str | None = None):
    """A PodGroup of ``job`` referring to Workload ``wl`` (1.37 ``workloadRef`` or 1.36 ``podGroupTemplateRef``)."""
    meta = job["metadata"]
    template = template or meta["name"]
    min_count = min_count if min_count is not None else job["spec"]["trainer"]["numNodes"]
    wl_name = workload_name if workload_name is not None else (wl["metadata"]["name"] if wl else "")
    owners = [_owner("TrainJob", meta["name"], owner_uid or meta["uid"])]
    if wl:
        owners.append(_owner("Workload", wl_name, wl["metadata"]["uid"], controller=False,
                             api=wl["apiVersion"]))
    spec: dict = {"schedulingPolicy": {"gang": {"minCount": min_count}} if policy == "gang" else {policy: {}}}
    if wl_name:
        if version == "v1alpha2":
            spec["podGroupTemplateRef"] = {"workload": {"workloadName": wl_name, "podGroupTemplateName": template}}
        else:
            spec["workloadRef"] = {"workloadName": wl_name, "templateName": template}
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    name = f"{wl_name or meta['name']}-{template}{suffix}-{meta['uid'][-5:]}"
    return {
        "apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": meta["namespace"], "uid": f"pg-{name}", "resourceVersion": _rv(),
                     "ownerReferences": owners},
        "spec": spec,
        "status": {"conditions": conditions or []},
    }


def pod(job: dict, index: int, *, group: dict | str | None = None, node: str = "", phase: str = "Pending",
        rjob: str = "node", job_index: int = 0, unschedulable: str = "", owner: bool = True) -> dict:
    """Pod ``index`` of ``job``, member of PodGroup ``group`` (an object or a bare name)."""
    meta = job["metadata"]
    name = f"{meta['name']}-{rjob}-{job_index}-{index}-{meta['uid'][-5:]}"
    spec: dict = {"containers": [{"name": "node", "image": "trainer"}]}
    if node:
        spec["nodeName"] = node
    group_name = group["metadata"]["name"] if isinstance(group, dict) else group
    if group_name:
        spec["schedulingGroup"] = {"podGroupName": group_name}
    status: dict = {"phase": phase}
    if unschedulable:
        status["conditions"] = [condition("PodScheduled", False, "Unschedulable", unschedulable)]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": meta["namespace"], "uid": f"pod-{name}", "resourceVersion": _rv(),
                     "labels": {"jobset.sigs.k8s.io/jobset-name": meta["name"],
                                "jobset.sigs.k8s.io/replicatedjob-name": rjob,
                                "jobset.sigs.k8s.io/job-index": str(job_index)},
                     "ownerReferences": [_owner("TrainJob", meta["name"], meta["uid"])] if owner else []},
        "spec": spec,
        "status": status,
    }


def pods(job: dict, count: int, **kwargs) -> list[dict]:
    """``count`` pods of ``job`` (same keyword arguments as :func:`pod`)."""
    return [pod(job, i, **kwargs) for i in range(count)]


def kueue_workload(job: dict, conditions: list[dict] | None = None) -> dict:
    """Kueue's Workload for ``job`` (owned by it, labelled with its UID)."""
    meta = job["metadata"]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": f"trainjob-{meta['name']}-ab12c", "namespace": meta["namespace"],
                     "uid": f"kq-{meta['uid']}", "resourceVersion": _rv(),
                     "labels": {"kueue.x-k8s.io/job-uid": meta["uid"]},
                     "ownerReferences": [_owner("TrainJob", meta["name"], meta["uid"])]},
        "spec": {"queueName": "lq"},
        "status": {"conditions": conditions or []},
    }


def event(obj: dict, reason: str, message: str, *, kind: str = "Normal", at: str = "2026-12-01T12:00:00Z",
          uid: str | None = None) -> dict:
    """A core/v1 Event about ``obj``."""
    meta = obj["metadata"]
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{reason}", "namespace": meta.get("namespace", "default"),
                     "uid": uid or f"ev-{meta['uid']}-{reason}-{at}", "resourceVersion": _rv()},
        "involvedObject": {"kind": obj.get("kind", ""), "name": meta["name"], "namespace": meta.get("namespace"),
                           "uid": meta["uid"]},
        "type": kind, "reason": reason, "message": message, "count": 1, "lastTimestamp": at,
    }


def jobset(job: dict, replicated_jobs: list[dict], *, replicated_jobs_status: list[dict] | None = None) -> dict:
    """The JobSet of ``job`` (owned by it) with ``replicated_jobs`` as JobSet spells them ({name, replicas,
    dependsOn, template: {metadata: {labels}, spec: {parallelism}}})."""
    meta = job["metadata"]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": f"js-{meta['uid']}",
                     "resourceVersion": _rv(), "ownerReferences": [_owner("TrainJob", meta["name"], meta["uid"])]},
        "spec": {"replicatedJobs": replicated_jobs},
        "status": {"replicatedJobsStatus": replicated_jobs_status or []},
    }


def replicated_job(name: str, *, replicas: int = 1, parallelism: int = 1, depends_on: list[tuple[str, str]] = (),
                   ancestor: str = "") -> dict:
    """One JobSet ReplicatedJob (a pod template is left out: the tracker never reads it)."""
    labels = {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor} if ancestor else {}
    raw: dict = {"name": name, "replicas": replicas,
                 "template": {"metadata": {"labels": labels}, "spec": {"parallelism": parallelism}}}
    if depends_on:
        raw["dependsOn"] = [{"name": target, "status": status} for target, status in depends_on]
    return raw
