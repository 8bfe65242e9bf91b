"""Objects every cluster of the kind the sandbox stands for has from the start, beyond namespaces and CRDs.

- The `kubernetes` Service in `default` (what kube-apiserver creates for itself; `kubectl cluster-info` and
  in-cluster clients look for it).
- The Kubeflow Trainer's `kubeflow-system` namespace and its public ConfigMap `kubeflow-trainer-public`
  (`data.kubeflow_trainer_version`), which the Kubeflow SDK's `TrainerClient` reads to report the control-plane
  version (namespace overridable on the SDK side with `KUBEFLOW_SYSTEM_NAMESPACE`).
"""

from __future__ import annotations

from typing import Any

TRAINER_NAMESPACE = "kubeflow-system"
TRAINER_PUBLIC_CONFIGMAP = "kubeflow-trainer-public"
CRD_VARIANT_ANNOTATION = "sandbox.trainer-portal.dev/trainer-crd"
# The Trainer release each CRD variant (`--trainer-crd`) stands for.
_TRAINER_VERSIONS = {"v2.3": "v2.3.0"}
_DEFAULT_TRAINER_VERSION = "v2.4.0"


def trainer_version(crds: list[dict[str, Any]]) -> str:
    """Returns the Trainer release the installed CRDs stand for (`v2.4.0` unless a v2.3 variant is installed)."""
    for crd in crds:
        variant = ((crd.get("metadata") or {}).get("annotations") or {}).get(CRD_VARIANT_ANNOTATION)
        if variant in _TRAINER_VERSIONS:
            return _TRAINER_VERSIONS[variant]
    return _DEFAULT_TRAINER_VERSION


def kubernetes_service() -> dict[str, Any]:
    """Returns the `default/kubernetes` Service of the API server."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                     "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
                     "internalTrafficPolicy": "Cluster",
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]},
            "status": {"loadBalancer": {}}}


def trainer_public_configmap(crds: list[dict[str, Any]]) -> dict[str, Any]:
    """Returns the Trainer's public ConfigMap with the version the installed CRDs stand for."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": TRAINER_PUBLIC_CONFIGMAP, "namespace": TRAINER_NAMESPACE,
                         "labels": {"app.kubernetes.io/name": "trainer", "app.kubernetes.io/component": "manager"}},
            "data": {"kubeflow_trainer_version": trainer_version(crds)}}
