"""Shared names, API paths and small object helpers for the simulated controllers."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

TRAINER_GROUP_VERSION = "trainer.kubeflow.org/v1alpha1"
DURATION_ANNOTATION = "sandbox.trainer-portal.io/duration-seconds"
FAIL_AFTER_ANNOTATION = "sandbox.trainer-portal.io/fail-after-seconds"
GENERATED_LABEL = "sandbox.trainer-portal.io/generated"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
DEFAULT_SCHEDULER = "default-scheduler"


@dataclass(frozen=True)
class KubeFlavour:
    """What differs between the 1.36 and 1.37 scheduling APIs (docs/reference/kubernetes-apis.md §4.4)."""

    scheduling_version: str  # "v1beta1" | "v1alpha2"
    scheduled_condition: str  # "PodGroupInitiallyScheduled" | "PodGroupScheduled"

    @property
    def scheduling_api_version(self) -> str:
        """Return e.g. "scheduling.k8s.io/v1beta1"."""
        return f"scheduling.k8s.io/{self.scheduling_version}"

    def collection(self, plural: str, namespace: str | None = None) -> str:
        """Return the path of a scheduling.k8s.io collection (all namespaces when `namespace` is None)."""
        base = f"/apis/scheduling.k8s.io/{self.scheduling_version}"
        return f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"


def flavour_for(kube_version: str) -> KubeFlavour:
    """Return the API flavour of `kube_version` ("1.36" -> v1alpha2; anything else -> v1beta1, i.e. 1.37)."""
    if str(kube_version).startswith("1.36"):
        return KubeFlavour("v1alpha2", "PodGroupScheduled")
    return KubeFlavour("v1beta1", "PodGroupInitiallyScheduled")


def now() -> str:
    """Return the current UTC time as RFC 3339 with second precision, as metav1.Time serialises."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str | None) -> float | None:
    """Return the POSIX timestamp of an RFC 3339 string, or None when missing/malformed."""
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def pod_path(namespace: str, name: str) -> str:
    """Return the path of one Pod."""
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def trainjob_path(namespace: str, name: str | None = None) -> str:
    """Return the path of one TrainJob (or the namespace's collection when `name` is None)."""
    base = f"/apis/{TRAINER_GROUP_VERSION}/namespaces/{namespace}/trainjobs"
    return f"{base}/{name}" if name else base


def meta(obj: dict) -> dict:
    """Return obj.metadata (an empty dict when missing)."""
    return obj.get("metadata") or {}


def find_condition(obj: dict, condition_type: str) -> dict | None:
    """Return the status condition of `condition_type`, or None."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return condition
    return None


def condition_is_true(obj: dict, condition_type: str) -> bool:
    """Return True when the condition exists with status "True"."""
    condition = find_condition(obj, condition_type)
    return condition is not None and condition.get("status") == "True"


def with_condition(obj: dict, condition_type: str, status: bool, reason: str, message: str) -> list[dict] | None:
    """Return the object's conditions with one condition set, or None when nothing would change.

    lastTransitionTime moves only when the status flips (metav1 convention); observedGeneration follows the object.
    """
    status_text = "True" if status else "False"
    conditions = [dict(c) for c in (obj.get("status") or {}).get("conditions") or []]
    for condition in conditions:
        if condition.get("type") != condition_type:
            continue
        if (condition.get("status"), condition.get("reason"), condition.get("message")) == (
            status_text, reason, message
        ):
            return None
        if condition.get("status") != status_text:
            condition["lastTransitionTime"] = now()
        condition.update(status=status_text, reason=reason, message=message)
        if meta(obj).get("generation") is not None:
            condition["observedGeneration"] = meta(obj)["generation"]
        return conditions
    new = {"type": condition_type, "status": status_text, "reason": reason, "message": message,
           "lastTransitionTime": now()}
    if meta(obj).get("generation") is not None:
        new["observedGeneration"] = meta(obj)["generation"]
    conditions.append(new)
    return conditions


def is_terminal(pod: dict) -> bool:
    """Return True when the pod is Succeeded or Failed."""
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def owner_uid(obj: dict, kind: str) -> str | None:
    """Return the UID of the controlling (or first) ownerReference of `kind`, or None."""
    owners = [o for o in meta(obj).get("ownerReferences") or [] if o.get("kind") == kind]
    for owner in owners:
        if owner.get("controller"):
            return owner.get("uid")
    return owners[0].get("uid") if owners else None
