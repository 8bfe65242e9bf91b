"""Building the Pods of a TrainJob from its runtime's JobSet template (what JobSet + Job controllers would create).

Pure functions over dicts. Pod names are `<trainjob>-<rjob>-<jobIndex>-<podIndex>-<5 chars>`, the suffix being a
hash of the TrainJob UID and the indices, so re-creating a pod after a controller restart hits AlreadyExists
instead of doubling the job.
"""

from __future__ import annotations

import copy
import hashlib

from sandbox.controllers.common import (
    ANCESTOR_LABEL,
    COMPLETION_INDEX_LABEL,
    DURATION_ANNOTATION,
    FAIL_AFTER_ANNOTATION,
    GENERATED_LABEL,
    JOB_INDEX_LABEL,
    JOBSET_NAME_LABEL,
    REPLICATED_JOB_LABEL,
    TRAINER_GROUP_VERSION,
    meta,
)

# Kubernetes' rand.String alphabet (no vowels, no confusable digits).
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NON_EXTENDED = ("cpu", "memory", "ephemeral-storage")


def name_suffix(*parts: object, length: int = 5) -> str:
    """Return a deterministic `length`-character suffix from `parts`."""
    digest = int(hashlib.sha1("/".join(map(str, parts)).encode(), usedforsecurity=False).hexdigest(), 16)
    chars = []
    for _ in range(length):
        digest, index = divmod(digest, len(_ALPHABET))
        chars.append(_ALPHABET[index])
    return "".join(chars)


def pod_name(trainjob: str, rjob: str, job_index: int, pod_index: int, uid: str) -> str:
    """Return `<trainjob>-<rjob>-<jobIndex>-<podIndex>-<5 chars>`."""
    return f"{trainjob}-{rjob}-{job_index}-{pod_index}-{name_suffix(uid, rjob, job_index, pod_index)}"


def replicated_job_template(runtime: dict, rjob: str) -> dict:
    """Return the runtime's `replicatedJobs[name == rjob].template` (a Job template), or {}."""
    spec = runtime.get("spec") or {}
    for item in ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []:
        if item.get("name") == rjob:
            return item.get("template") or {}
    return {}


def _main_container(containers: list[dict], rjob: str, ancestor: str | None) -> dict | None:
    wanted = ["node"] if ancestor == "trainer" else [ancestor or "", rjob, "node"]
    for container in containers:
        if container.get("name") in wanted:
            return container
    return containers[0] if containers else None


def build_pod(trainjob: dict, runtime: dict, rjob: str, job_index: int, pod_index: int,
              resources_per_pod: dict[str, str], pod_group: str | None, claims: list[dict] | None = None) -> dict:
    """Return the Pod object for one (ReplicatedJob, Job index, pod index) of `trainjob`.

    The main container (the one the plan sized) gets `resources_per_pod` as requests, and as limits for
    extended resources such as nvidia.com/gpu (which must have equal limits). The trainer container also takes
    the TrainJob's image/command/args/env overrides; with MPI, the image also reaches the `node` pods. `claims`
    (`[{name, resourceClaimName}]`, the PodGroup's shared claims) become `spec.resourceClaims` and the main
    container's `resources.claims`.
    """
    tj_meta = meta(trainjob)
    name, namespace, uid = tj_meta["name"], tj_meta.get("namespace", "default"), tj_meta.get("uid", "")
    job_template = replicated_job_template(runtime, rjob)
    job_labels = (job_template.get("metadata") or {}).get("labels") or {}
    ancestor = job_labels.get(ANCESTOR_LABEL)
    pod_template = (job_template.get("spec") or {}).get("template") or {}
    spec = copy.deepcopy(pod_template.get("spec") or {})
    spec.setdefault("containers", [{"name": "node", "image": "busybox"}])
    spec.setdefault("restartPolicy", "Never")
    spec["hostname"] = f"{name}-{rjob}-{job_index}-{pod_index}"[:63].rstrip("-")
    spec["subdomain"] = name
    container = _main_container(spec["containers"], rjob, ancestor)
    if container is not None:
        resources = container.setdefault("resources", {})
        resources["requests"] = dict(resources_per_pod)
        limits = {k: v for k, v in (resources.get("limits") or {}).items() if k in _NON_EXTENDED}
        limits.update({k: v for k, v in resources_per_pod.items() if k not in _NON_EXTENDED})
        if limits:
            resources["limits"] = limits
        else:
            resources.pop("limits", None)
        trainer = (trainjob.get("spec") or {}).get("trainer") or {}
        is_mpi = ((runtime.get("spec") or {}).get("mlPolicy") or {}).get("mpi") is not None
        if is_mpi and rjob in ("launcher", "node") and trainer.get("image"):
            container["image"] = trainer["image"]  # Trainer v2.4.0 (#4301): MPI launcher and nodes run the image
        if ancestor == "trainer":
            for field in ("image", "command", "args"):
                if trainer.get(field):
                    container[field] = copy.deepcopy(trainer[field])
            if trainer.get("env"):
                by_name = {e.get("name"): e for e in container.get("env") or []}
                by_name.update({e.get("name"): e for e in trainer["env"]})
                container["env"] = list(by_name.values())
    _apply_runtime_patches(spec, trainjob, rjob)
    if pod_group:
        spec["schedulingGroup"] = {"podGroupName": pod_group}
    if claims:
        spec["resourceClaims"] = [*(spec.get("resourceClaims") or []), *(dict(c) for c in claims)]
        if container is not None:
            resources = container.setdefault("resources", {})
            resources["claims"] = [*(resources.get("claims") or []), *({"name": c["name"]} for c in claims)]
    labels = {
        **((pod_template.get("metadata") or {}).get("labels") or {}),
        JOBSET_NAME_LABEL: name,
        REPLICATED_JOB_LABEL: rjob,
        JOB_INDEX_LABEL: str(job_index),
        COMPLETION_INDEX_LABEL: str(pod_index),
        "trainer.kubeflow.org/trainjob-name": name,
    }
    if ancestor:
        labels[ANCESTOR_LABEL] = ancestor
    if GENERATED_LABEL in (tj_meta.get("labels") or {}):
        labels[GENERATED_LABEL] = tj_meta["labels"][GENERATED_LABEL]
    annotations = dict((pod_template.get("metadata") or {}).get("annotations") or {})
    for key in (DURATION_ANNOTATION, FAIL_AFTER_ANNOTATION):
        value = (tj_meta.get("annotations") or {}).get(key)
        if value is not None:
            annotations[key] = value
    metadata = {
        "name": pod_name(name, rjob, job_index, pod_index, uid),
        "namespace": namespace,
        "labels": labels,
        "ownerReferences": [{"apiVersion": TRAINER_GROUP_VERSION, "kind": "TrainJob", "name": name, "uid": uid,
                             "controller": True, "blockOwnerDeletion": True}],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _apply_runtime_patches(spec: dict, trainjob: dict, rjob: str) -> None:
    """Merge the TrainJob's `runtimePatches` pod-spec patches for `rjob` (nodeSelector, tolerations — what Kueue
    writes on admission) into the pod spec, in order; malformed entries are skipped."""
    for patch in (trainjob.get("spec") or {}).get("runtimePatches") or []:
        if not isinstance(patch, dict):
            continue
        template = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        for entry in template.get("replicatedJobs") or []:
            if not isinstance(entry, dict) or entry.get("name") != rjob:
                continue
            pod_spec = (((entry.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
            if isinstance(pod_spec.get("nodeSelector"), dict):
                spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **pod_spec["nodeSelector"]}
            if isinstance(pod_spec.get("tolerations"), list):
                have = list(spec.get("tolerations") or [])
                spec["tolerations"] = [*have, *(t for t in pod_spec["tolerations"] if t not in have)]
