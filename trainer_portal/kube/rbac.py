"""The Kubernetes RBAC objects the portal needs, derived from the permissions its code declares.

``trainer_portal.kube.resources`` lists every (verb, resource) the portal's processes use: ``WORKER_PERMISSIONS``
(cluster-wide reads, server-side apply of ClusterTrainingRuntimes), ``PROBE_PERMISSIONS`` (dry-run creates and the
CRD read of the cluster page's probes) and ``NAMESPACE_PERMISSIONS`` (Leases for leader election and the Secrets
holding registered clusters' kubeconfigs, in the portal's own namespace only). ``manage.py portal_rbac`` prints
the objects built here; ``deploy/kubernetes/base/rbac.yaml`` is that output, and a test fails when the two
disagree, so the manifests never grant less (a broken feature) or more (a wider blast radius) than the code uses.
No rule ever uses ``*`` and none reads Secrets cluster-wide.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from .resources import NAMESPACE_PERMISSIONS, PROBE_PERMISSIONS, WORKER_PERMISSIONS, ResourceKind

# Verbs in the order kubectl and the Kubernetes docs print them.
_VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete")
# A rule for "list" or "watch" without "get" makes `kubectl get x NAME` fail for the service account while the
# portal's own list works; operators expect the read triple together.
_READ_VERBS = {"list", "watch"}


def _rules(permissions: Iterable[tuple[str, ResourceKind]]) -> list[dict]:
    """Return RBAC rules, one per API group and resource, verbs sorted; ``get`` added wherever list/watch is."""
    verbs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for verb, kind in permissions:
        if verb not in _VERB_ORDER:
            raise ValueError(f"unknown verb {verb!r} for {kind.label}")
        verbs[(kind.group, kind.plural)].add(verb)
        if verb in _READ_VERBS:
            verbs[(kind.group, kind.plural)].add("get")
    return [
        {"apiGroups": [group], "resources": [plural], "verbs": [v for v in _VERB_ORDER if v in found]}
        for (group, plural), found in sorted(verbs.items())
    ]


def portal_rbac(*, name: str = "trainer-portal", namespace: str = "trainer-portal",
                service_account: str = "trainer-portal-controller") -> list[dict]:
    """Return the ClusterRole, ClusterRoleBinding, Role and RoleBinding (as dicts) the portal's controllers need.

    ``namespace`` is where the portal runs (its Leases live there); ``service_account`` is the account of the
    worker and ``cluster-watch`` pods (web and beat run with no token).
    """
    labels = {"app.kubernetes.io/name": "trainer-portal", "app.kubernetes.io/component": "rbac"}
    subject = [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}]
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": name, "labels": labels},
         "rules": _rules((*WORKER_PERMISSIONS, *PROBE_PERMISSIONS))},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": name, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": subject},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": f"{name}-namespace", "namespace": namespace, "labels": labels},
         "rules": _rules(NAMESPACE_PERMISSIONS)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": f"{name}-namespace", "namespace": namespace, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{name}-namespace"},
         "subjects": subject},
    ]
