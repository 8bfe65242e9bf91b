"""Cluster connection status: what the cluster page and ``GET /api/v1/cluster/`` show.

Probes (`probe_cluster`) run only in the background (the worker's check task, "Check now"), with short timeouts
(`connections.probe_gateway`); `check_cluster` stores what they found in the cluster's `ClusterHealth` row with
``checked_at``. Pages, the API and validation read that row (`stored_status`, `scheduling_facts`) and never wait
on a cluster. Every probe reports its own failure with a fix hint instead of raising, so one broken piece (say,
RBAC for pods) never hides the others.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from django.conf import settings as django_settings
from django.utils import timezone

from trainer_portal import kube
from trainer_portal.kube.resources import NAMESPACE_PERMISSIONS, PROBE_PERMISSIONS

from . import connections
from .domain.crd_schema import scheduling_schema
from .gates import probe_dra_claims_gate
from .models import Cluster, ClusterEvent, ClusterHealth, TopologySnapshot, cluster_filter, resolve_cluster

# How often the worker checks every cluster (the beat entry "cluster-health-check"); a check older than
# STALE_AFTER_CHECKS intervals is shown as stale.
CHECK_INTERVAL_SECONDS = 60.0
STALE_AFTER_CHECKS = 3

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

CRD_NAME = f"clustertrainingruntimes.{kube.TRAINER_GROUP}"
TOPOLOGY_GATE = "TopologyAwareWorkloadScheduling"
TOPOLOGY_PROBE_NAME = "trainer-portal-topology-probe"
TOPOLOGY_PROBE_KEY = "topology.kubernetes.io/zone"
TOPOLOGY_PROBE_NAMESPACE = "default"
TOPOLOGY_GATE_HINT = (
    f"Enable --feature-gates={TOPOLOGY_GATE}=true on kube-apiserver and kube-scheduler (alpha, off by default in "
    "Kubernetes 1.37); until then every zone/rack constraint of a policy is ignored by this cluster."
)

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


def probe_cluster(cluster: Cluster | None = None, *, gateway: kube.Gateway | None = None,
                  include_permissions: bool = True) -> dict[str, Any]:
    """Probe the cluster now (its probe gateway, short timeouts) and return its status as plain data; store nothing.

    Keys: ``connection`` (how we connect), ``reachable``, ``error``, ``hint``, ``version``, ``apis`` (one entry per
    checked group/version: served + hint), ``scheduling_versions`` (served), ``crd_scheduling`` ({accepted,
    message, hint}), ``permissions`` (one entry per verb/resource: allowed, reason, hint), ``checked_at``,
    ``elapsed_ms``, and what Trainer v2.4 can silently lose: ``scheduling_support`` ({supported, message, hint}: 1.37
    APIs served, or only 1.36), ``topology_gate`` and ``dra_claims_gate`` ({enabled, message, hint}) and
    ``crd_schema`` (the CRD's spec.scheduling facts, see `crd_schema.SchedulingSchema.as_dict`, plus ``hint``;
    None when unreadable). Never raises.
    """
    started = time.monotonic()
    settings = connections.kube_settings_for(cluster)
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
        "scheduling_support": None,
        "topology_gate": None,
        "dra_claims_gate": None,
        "crd_schema": None,
        "permissions": [],
        "checked_at": time.time(),
    }
    try:
        gateway = gateway or connections.probe_gateway(cluster)
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
    status["scheduling_support"] = scheduling_support(status["scheduling_versions"])
    status["topology_gate"] = probe_topology_gate(gateway, status["scheduling_versions"])
    status["dra_claims_gate"] = probe_dra_claims_gate(gateway, status["scheduling_versions"])
    status["crd_schema"] = probe_crd_schema(gateway)
    if include_permissions:
        # Every grant the manifests give (deploy/kubernetes/base/rbac.yaml is generated from the same lists):
        # cluster-wide reads and applies, the probes' dry-runs, and Leases/Secrets in the Lease namespace.
        lease_namespace = getattr(django_settings, "CLUSTER_WATCH_LEASE_NAMESPACE", "default")
        status["permissions"] = [
            *(_permission(gateway, verb, kind) for verb, kind in (*kube.WORKER_PERMISSIONS, *PROBE_PERMISSIONS)),
            *(_permission(gateway, verb, kind, namespace=lease_namespace) for verb, kind in NAMESPACE_PERMISSIONS),
        ]
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


def facts_of(status: dict[str, Any]) -> dict[str, Any]:
    """Return what validation follows from a status: ``{topology_gate: bool | None, dra_claims_gate: bool | None,
    disruption_mode: str}``."""
    gate = (status.get("topology_gate") or {}).get("enabled")
    claims_gate = (status.get("dra_claims_gate") or {}).get("enabled")
    mode = (status.get("crd_schema") or {}).get("disruption_mode", "")
    return {
        "topology_gate": gate if isinstance(gate, bool) else None,
        "dra_claims_gate": claims_gate if isinstance(claims_gate, bool) else None,
        "disruption_mode": mode if mode in ("union", "string") else "",
    }


def check_cluster(cluster: Cluster | str | None = None, *, gateway: kube.Gateway | None = None,
                  include_permissions: bool = True) -> dict[str, Any]:
    """Probe the cluster (default when None) and store the result in its `ClusterHealth`; return the status.

    A probe that cannot reach the cluster is stored too (``reachable: false``), but it keeps the scheduling facts
    of the last check that could read them: an outage does not change what validation answers. Raises
    Cluster.DoesNotExist for an unknown cluster.
    """
    cluster = resolve_cluster(cluster)
    status = probe_cluster(cluster, gateway=gateway, include_permissions=include_permissions)
    record_check(cluster, status)
    return status


def _storable(value: Any) -> Any:
    """Return ``value`` with NUL and unpaired surrogates removed from every string (PostgreSQL refuses them in JSON;
    a cluster's error message is not ours to trust)."""
    if isinstance(value, str):
        return value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_storable(key): _storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_storable(item) for item in value]
    return value


def record_check(cluster: Cluster, status: dict[str, Any]) -> ClusterHealth:
    """Store ``status`` (from `probe_cluster`) as the cluster's last check and return the row."""
    status = _storable(status)
    checked_at = datetime.fromtimestamp(status.get("checked_at") or time.time(), UTC)
    defaults: dict[str, Any] = {"reachable": bool(status.get("reachable")), "status": status,
                                "checked_at": checked_at}
    if status.get("reachable"):
        defaults["facts"] = {**facts_of(status), "checked_at": status.get("checked_at")}
    health, _ = ClusterHealth.objects.update_or_create(cluster=cluster, defaults=defaults)
    _record_changes(cluster, status)
    return health


def _latest_kind(cluster: Cluster, kinds: tuple[str, str]) -> str | None:
    return (ClusterEvent.objects.filter(cluster=cluster, kind__in=kinds).order_by("-id")
            .values_list("kind", flat=True).first())


def watcher_stale_seconds() -> float:
    """Return how old a cluster's topology snapshot may get before its watcher counts as stale
    (``TRAINER_PORTAL_WATCHER_STALE_SECONDS``, default 300)."""
    return float(getattr(django_settings, "WATCHER_STALE_SECONDS", 300))


def _record_changes(cluster: Cluster, status: dict[str, Any]) -> None:
    """Append a ClusterEvent when reachability or the watcher's freshness changed since the last event of its pair
    (the outbox of notifications). A cluster seen reachable first, or a watcher never started, records nothing."""
    pair = (ClusterEvent.Kind.UNREACHABLE, ClusterEvent.Kind.REACHABLE)
    last = _latest_kind(cluster, pair)
    if not status.get("reachable") and last != ClusterEvent.Kind.UNREACHABLE:
        ClusterEvent.objects.create(cluster=cluster, kind=ClusterEvent.Kind.UNREACHABLE,
                                    message=str(status.get("error") or "")[:2000])
    elif status.get("reachable") and last == ClusterEvent.Kind.UNREACHABLE:
        ClusterEvent.objects.create(cluster=cluster, kind=ClusterEvent.Kind.REACHABLE)
    taken_at = TopologySnapshot.objects.filter(cluster=cluster).values_list("taken_at", flat=True).first()
    if taken_at is None:
        return
    age = (timezone.now() - taken_at).total_seconds()
    pair = (ClusterEvent.Kind.WATCHER_STALE, ClusterEvent.Kind.WATCHER_FRESH)
    last = _latest_kind(cluster, pair)
    if age > watcher_stale_seconds() and last != ClusterEvent.Kind.WATCHER_STALE:
        ClusterEvent.objects.create(cluster=cluster, kind=ClusterEvent.Kind.WATCHER_STALE,
                                    message=f"The watcher last wrote the topology {int(age)} s ago.")
    elif age <= watcher_stale_seconds() and last == ClusterEvent.Kind.WATCHER_STALE:
        ClusterEvent.objects.create(cluster=cluster, kind=ClusterEvent.Kind.WATCHER_FRESH)


def request_check(cluster: Cluster) -> ClusterHealth:
    """Record that someone asked for a check of ``cluster`` now ("Check now") and return the row."""
    health, _ = ClusterHealth.objects.update_or_create(cluster=cluster,
                                                       defaults={"check_requested_at": timezone.now()})
    return health


def check_interval_seconds() -> float:
    """Return the seconds between two background checks of a cluster (``CLUSTER_CHECK_INTERVAL_SECONDS``)."""
    return float(getattr(django_settings, "CLUSTER_CHECK_INTERVAL_SECONDS", CHECK_INTERVAL_SECONDS))


def stored_status(cluster: Cluster | str | None = None) -> dict[str, Any]:
    """Return the last stored status of the cluster (default when None), as `probe_cluster` returned it, plus
    ``cluster`` (its name), ``checked`` (False before the first check), ``stale`` (older than
    ``STALE_AFTER_CHECKS`` check intervals) and ``check_requested_at`` (unix time or None). Never reaches the
    cluster. Raises Cluster.DoesNotExist for an unknown cluster.
    """
    cluster = resolve_cluster(cluster)
    health = ClusterHealth.objects.filter(cluster=cluster).first()
    requested = health.check_requested_at.timestamp() if health and health.check_requested_at else None
    if health is None or health.checked_at is None or not health.status:
        status = _never_checked(cluster)
    else:
        status = dict(health.status)
        status["checked"] = True
        age = time.time() - health.checked_at.timestamp()
        status["stale"] = age > STALE_AFTER_CHECKS * check_interval_seconds()
    status["cluster"] = cluster.name
    status["check_requested_at"] = requested
    return status


def _never_checked(cluster: Cluster) -> dict[str, Any]:
    settings = connections.kube_settings_for(cluster)
    return {
        "connection": settings.describe(), "field_manager": settings.field_manager, "reachable": False,
        "error": "The cluster has not been checked yet.",
        "hint": "The worker checks every cluster in the background (Celery beat); press \"Check now\" or run "
                "`manage.py cluster_check` to check it at once.",
        "version": None, "apis": [], "scheduling_versions": [], "crd_scheduling": None, "scheduling_support": None,
        "topology_gate": None, "dra_claims_gate": None, "crd_schema": None, "permissions": [], "checked_at": None,
        "elapsed_ms": 0.0,
        "checked": False, "stale": True,
    }


def scheduling_facts(cluster: Cluster | str | None = None) -> dict[str, Any]:
    """Return ``{topology_gate: bool | None, disruption_mode: str}`` from the cluster's last successful check
    (unknowns when there was none, or no such cluster). Every web replica reads the same row."""
    facts = ClusterHealth.objects.filter(**cluster_filter(cluster, prefix="cluster__")).values_list(
        "facts", flat=True).first()
    facts = facts if isinstance(facts, dict) else {}
    gate = facts.get("topology_gate")
    claims_gate = facts.get("dra_claims_gate")
    mode = facts.get("disruption_mode")
    return {
        "topology_gate": gate if isinstance(gate, bool) else None,
        "dra_claims_gate": claims_gate if isinstance(claims_gate, bool) else None,
        "disruption_mode": mode if mode in ("union", "string") else "",
    }


def scheduling_support(served: list[str]) -> dict[str, Any]:
    """Return ``{supported, message, hint}``: whether the served scheduling.k8s.io versions are the ones Trainer v2.4
    works with (Kubernetes 1.37+, ``v1beta1``); a cluster serving only 1.36's ``v1alpha2`` is reported as such."""
    if "v1beta1" in served:
        return {"supported": True, "message": "Kubernetes 1.37 scheduling APIs (scheduling.k8s.io/v1beta1) are served.",
                "hint": ""}
    if "v1alpha2" in served:
        return {
            "supported": False,
            "message": "This cluster serves only the Kubernetes 1.36 scheduling APIs (scheduling.k8s.io/v1alpha2), "
            "which Trainer v2.4 does not support: it needs the Kubernetes 1.37 Workload beta APIs.",
            "hint": "Upgrade to Kubernetes 1.37+ and enable GenericWorkload with "
            "--runtime-config=scheduling.k8s.io/v1beta1=true; previews can still show the 1.36 objects.",
        }
    return {
        "supported": False,
        "message": "This cluster serves no scheduling.k8s.io Workload API, so TrainJobs get no gang scheduling.",
        "hint": "Kubernetes 1.37+: enable the GenericWorkload feature gate and "
        "--runtime-config=scheduling.k8s.io/v1beta1=true.",
    }


def probe_topology_gate(gateway: kube.Gateway, served: list[str]) -> dict[str, Any]:
    """Return ``{enabled, message, hint}``: whether the API server keeps ``schedulingConstraints`` on PodGroups.

    Probed with a server-side dry-run create of a PodGroup with one topology constraint: an API server with the
    TopologyAwareWorkloadScheduling gate off drops the constraint silently (or refuses the field). ``enabled`` is
    None when the probe could not run. A scheduler with the gate off stores constraints without enforcing them,
    which no API call can see; the hint says so.
    """
    if not served:
        return {"enabled": None, "message": "No PodGroup API is served, so there is nothing to probe.",
                "hint": "Enable the Workload API first (see scheduling support)."}
    try:
        resource = gateway.resolve(kube.PODGROUP)
        answer = gateway.create(resource, body=_topology_probe(resource), dry_run=True)
    except kube.KubeInvalid as exc:
        if "schedulingConstraints" not in exc.message and "topology" not in exc.message:
            return {"enabled": None, "message": exc.message, "hint": _error_hint(exc)}
        return {"enabled": False, "message": f"The API server refuses PodGroup topology constraints: {exc.message}",
                "hint": TOPOLOGY_GATE_HINT}
    except kube.KubeError as exc:
        return {"enabled": None, "message": exc.message, "hint": _error_hint(exc)}
    kept = ((answer or {}).get("spec") or {}).get("schedulingConstraints") or {}
    if kept.get("topology"):
        return {
            "enabled": True,
            "message": f"The API server keeps PodGroup topology constraints ({TOPOLOGY_GATE} is on in "
            "kube-apiserver).",
            "hint": f"kube-scheduler needs {TOPOLOGY_GATE}=true too, or the constraints are stored but not enforced.",
        }
    return {
        "enabled": False,
        "message": f"The API server dropped the topology constraint of a dry-run PodGroup: {TOPOLOGY_GATE} is off, "
        "so zone/rack constraints of every policy are silently ignored by this cluster.",
        "hint": TOPOLOGY_GATE_HINT,
    }


def _topology_probe(resource: kube.Resource) -> dict[str, Any]:
    return {
        "apiVersion": f"{resource.group}/{resource.version}",
        "kind": "PodGroup",
        "metadata": {"name": TOPOLOGY_PROBE_NAME, "namespace": TOPOLOGY_PROBE_NAMESPACE},
        "spec": {
            "schedulingPolicy": {"basic": {}},
            "schedulingConstraints": {"topology": [{"key": TOPOLOGY_PROBE_KEY}]},
        },
    }


def probe_crd_schema(gateway: kube.Gateway) -> dict[str, Any] | None:
    """Return the installed ClusterTrainingRuntime CRD's spec.scheduling facts (`SchedulingSchema.as_dict` plus a
    ``hint``), or None when the CRD cannot be read (not installed, or no RBAC to read CRDs)."""
    try:
        crd = gateway.get(gateway.resolve(kube.CRD), name=CRD_NAME)
    except kube.KubeError:
        return None
    if crd is None:
        return None
    schema = scheduling_schema(crd)
    hint = "" if schema.present else (
        "Upgrade Kubeflow Trainer to v2.4+ and enable its TrainJobWorkloadAwareScheduling feature gate."
    )
    return {**schema.as_dict(), "hint": hint}


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


def _permission(gateway: kube.Gateway, verb: str, kind: kube.ResourceKind, *,
                namespace: str | None = None) -> dict[str, Any]:
    review = gateway.access_review(verb=verb, kind=kind, namespace=namespace)
    hint = ""
    if not review.allowed:
        where = f" -n {namespace}" if namespace else ""
        hint = (
            f'Grant "{verb}" on {kind.label}{" in namespace " + namespace if namespace else ""} to the worker\'s '
            "identity (`manage.py portal_rbac` prints the Role and ClusterRole): "
            f"kubectl auth can-i {verb} {kind.label}{where} --as=<worker identity>"
        )
    return {
        "verb": verb,
        "resource": kind.label,
        "namespace": namespace or "",
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
