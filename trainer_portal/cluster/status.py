"""Cluster connection status: what the cluster page and ``GET /api/v1/cluster/`` show.

Every check runs against the configured cluster through the gateway and reports its own failure with a fix
hint instead of raising, so one broken piece (say, RBAC for pods) never hides the others.
"""

from __future__ import annotations

import time
from typing import Any

from trainer_portal import kube
from trainer_portal.kube.client import get_gateway

PROBE_NAME = "trainer-portal-scheduling-probe"
# The smallest ClusterTrainingRuntime that uses the v2.4 `spec.scheduling` field (level 1, zone gang).
PROBE_MANIFEST: dict[str, Any] = {
    "apiVersion": f"{kube.TRAINER_GROUP}/{kube.TRAINER_VERSION}",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": PROBE_NAME},
    "spec": {
        "scheduling": {
            "schedulingPolicy": {"gang": {}},
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
        },
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {  # one ReplicatedJob "node" labelled as the trainer step, one container
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                            "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "busybox"}]}}},
                        },
                    }
                ]
            }
        },
    },
}

API_CHECKS: tuple[tuple[str, str, str], ...] = (
    (
        kube.TRAINER_GROUP,
        kube.TRAINER_VERSION,
        "Install Kubeflow Trainer (its CRDs): kubectl apply --server-side -k "
        '"https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=<release>".',
    ),
    (
        kube.SCHEDULING_GROUP,
        "v1beta1",
        "Kubernetes 1.37+: enable the GenericWorkload feature gate on kube-apiserver and "
        "--runtime-config=scheduling.k8s.io/v1beta1=true.",
    ),
    (
        kube.SCHEDULING_GROUP,
        "v1alpha3",
        "Kubernetes 1.37+: --runtime-config=scheduling.k8s.io/v1alpha3=true with the CompositePodGroup gate "
        "(needed only for gang-of-gangs).",
    ),
    (
        kube.SCHEDULING_GROUP,
        "v1alpha2",
        "Kubernetes 1.36: --runtime-config=scheduling.k8s.io/v1alpha2=true with the GenericWorkload gate.",
    ),
)


def cluster_status(*, gateway: kube.Gateway | None = None, include_permissions: bool = True) -> dict[str, Any]:
    """Return the cluster's status as plain data.

    Keys: ``connection`` (how we connect), ``reachable``, ``error``, ``hint``, ``version``, ``apis`` (one entry per
    checked group/version: served + hint), ``scheduling_versions`` (served), ``crd_scheduling`` ({accepted,
    message, hint}), ``permissions`` (one entry per verb/resource: allowed, reason, hint), ``checked_at``,
    ``elapsed_ms``. Never raises.
    """
    started = time.monotonic()
    settings = kube.load_settings()
    status: dict[str, Any] = {
        "connection": settings.describe(),
        "field_manager": settings.field_manager,
        "reachable": False,
        "error": "",
        "hint": "",
        "version": None,
        "apis": [],
        "scheduling_versions": [],
        "crd_scheduling": None,
        "permissions": [],
        "checked_at": time.time(),
    }
    try:
        gateway = gateway or get_gateway()
        version = gateway.server_version()
    except kube.KubeNotConfigured as exc:
        status.update(error=exc.message, hint=_config_hint())
        return _finish(status, started)
    except kube.KubeError as exc:
        status.update(error=exc.message, hint=_connect_hint(exc))
        return _finish(status, started)
    status["reachable"] = True
    status["server"] = gateway.host
    status["version"] = {
        "git_version": version.get("gitVersion", ""),
        "major": version.get("major", ""),
        "minor": version.get("minor", ""),
        "platform": version.get("platform", ""),
    }
    status["apis"] = [_api_check(gateway, group, version, hint) for group, version, hint in API_CHECKS]
    try:
        status["scheduling_versions"] = [
            v for v in gateway.served_versions(kube.SCHEDULING_GROUP) if v in kube.SCHEDULING_VERSIONS
        ]
    except kube.KubeError:
        status["scheduling_versions"] = []
    status["crd_scheduling"] = probe_scheduling_field(gateway)
    if include_permissions:
        status["permissions"] = [_permission(gateway, verb, kind) for verb, kind in kube.WORKER_PERMISSIONS]
    return _finish(status, started)


def probe_scheduling_field(gateway: kube.Gateway) -> dict[str, Any]:
    """Return ``{accepted, message, hint}``: whether the installed CRD stores ``spec.scheduling``.

    Probed with a server-side dry-run apply with strict field validation: an unknown field is refused (or, on
    servers that prune instead, missing from the answer). ``accepted`` is None when the probe could not run.
    """
    try:
        resource = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
        answer = gateway.apply(resource, body=PROBE_MANIFEST, dry_run=True, force=True)
    except kube.KubeInvalid as exc:
        return {
            "accepted": False,
            "message": exc.message,
            "hint": "The installed ClusterTrainingRuntime CRD predates Trainer v2.4: upgrade Kubeflow Trainer to "
            "v2.4+ (and enable its TrainJobWorkloadAwareScheduling gate) to sync policies that use spec.scheduling.",
        }
    except kube.KubeError as exc:
        return {"accepted": None, "message": exc.message, "hint": _error_hint(exc)}
    accepted = "scheduling" in ((answer or {}).get("spec") or {})
    return {
        "accepted": accepted,
        "message": "Dry run accepted spec.scheduling." if accepted else "The server pruned spec.scheduling.",
        "hint": "" if accepted else "Upgrade the Trainer CRDs to v2.4+ so spec.scheduling is kept.",
    }


def _api_check(gateway: kube.Gateway, group: str, version: str, hint: str) -> dict[str, Any]:
    try:
        served = version in gateway.served_versions(group)
        error = ""
    except kube.KubeError as exc:
        served, error = False, exc.message
    return {
        "group_version": f"{group}/{version}",
        "served": served,
        "error": error,
        "hint": "" if served else hint,
    }


def _permission(gateway: kube.Gateway, verb: str, kind: kube.ResourceKind) -> dict[str, Any]:
    review = gateway.access_review(verb=verb, kind=kind)
    hint = ""
    if not review.allowed:
        hint = (
            f'Grant "{verb}" on {kind.label} to the worker\'s identity (see the ClusterRole in docs/operations.md): '
            f"kubectl auth can-i {verb} {kind.label} --as=<worker identity>"
        )
    return {
        "verb": verb,
        "resource": kind.label,
        "allowed": review.allowed,
        "reason": review.reason,
        "error": review.error,
        "hint": hint,
    }


def _finish(status: dict[str, Any], started: float) -> dict[str, Any]:
    status["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
    return status


def _config_hint() -> str:
    return (
        "Set TRAINER_PORTAL_KUBECONFIG (and TRAINER_PORTAL_KUBE_CONTEXT) to a kubeconfig the worker can read, or "
        "TRAINER_PORTAL_IN_CLUSTER=1 when the portal runs in a pod with a service account."
    )


def _connect_hint(exc: kube.KubeError) -> str:
    if isinstance(exc, kube.KubeForbidden):
        return "The API server rejected the credentials: refresh the token or client certificate in the kubeconfig."
    if isinstance(exc, kube.KubeUnavailable):
        return (
            "The API server did not answer: check the server URL in the kubeconfig, network access from the worker "
            "and TRAINER_PORTAL_KUBE_TIMEOUT."
        )
    return _error_hint(exc)


def _error_hint(exc: kube.KubeError) -> str:
    if isinstance(exc, kube.KubeForbidden):
        return "Grant the worker the ClusterRole from docs/operations.md."
    if isinstance(exc, kube.KubeNotFound):
        return "Install the Kubeflow Trainer CRDs on the cluster."
    if isinstance(exc, kube.KubeUnavailable):
        return "The cluster is unreachable or overloaded; it will be retried."
    return ""
