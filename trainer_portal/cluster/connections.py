"""How the portal reaches one cluster: the gateway for a `Cluster`, and gateways with bounded timeouts.

Background probes use `probe_gateway` (``CLUSTER_PROBE_TIMEOUT_SECONDS``); anything a web request must do on a
cluster (dry-run, apply, drift check) uses `action_gateway` (``CLUSTER_ACTION_TIMEOUT_SECONDS``), so a hung API
server costs a web worker that long at most and the request answers 503 with Retry-After.

Every cluster is reached through the process's settings today (the default cluster's connection);
`gateway_for_cluster` is the one place that maps a cluster to its gateway.
"""

from __future__ import annotations

import dataclasses
import os
import threading

from django.conf import settings

from trainer_portal.kube.client import Gateway, build_gateway, get_gateway
from trainer_portal.kube.config import load_settings

from .models import Cluster

DEFAULT_ACTION_TIMEOUT_SECONDS = 5.0
DEFAULT_PROBE_TIMEOUT_SECONDS = 5.0

_bounded: dict[str, Gateway] = {}
_bounded_lock = threading.Lock()


def gateway_for_cluster(cluster: Cluster | None = None) -> Gateway:
    """Return the gateway of ``cluster`` (the default cluster when None), with the settings' request timeout.

    Raises KubeNotConfigured when the cluster's connection cannot be loaded.
    """
    return get_gateway()


def action_timeout() -> float:
    """Return the seconds a web request may wait on a cluster (``CLUSTER_ACTION_TIMEOUT_SECONDS``)."""
    return float(getattr(settings, "CLUSTER_ACTION_TIMEOUT_SECONDS", DEFAULT_ACTION_TIMEOUT_SECONDS))


def probe_timeout() -> float:
    """Return the seconds one background probe call may take (``CLUSTER_PROBE_TIMEOUT_SECONDS``)."""
    return float(getattr(settings, "CLUSTER_PROBE_TIMEOUT_SECONDS", DEFAULT_PROBE_TIMEOUT_SECONDS))


def _bounded_gateway(cluster: Cluster | None, timeout: float) -> Gateway:
    base = gateway_for_cluster(cluster)
    bounded = dataclasses.replace(base.settings, timeout=min(float(timeout), base.settings.timeout))
    if bounded == base.settings:
        return base
    key = f"{os.getpid()}:{bounded!r}"
    with _bounded_lock:
        gateway = _bounded.get(key)
        if gateway is None:
            if len(_bounded) > 16:
                _bounded.clear()
            gateway = build_gateway(bounded)
            _bounded[key] = gateway
        return gateway


def action_gateway(cluster: Cluster | None = None) -> Gateway:
    """Return the cluster's gateway with every call bounded by `action_timeout` (for work a web request waits on).

    Raises KubeNotConfigured.
    """
    return _bounded_gateway(cluster, action_timeout())


def probe_gateway(cluster: Cluster | None = None) -> Gateway:
    """Return the cluster's gateway with every call bounded by `probe_timeout` (for background checks).

    Raises KubeNotConfigured.
    """
    return _bounded_gateway(cluster, probe_timeout())


def kube_settings_for(cluster: Cluster | None = None):
    """Return the `KubeSettings` the cluster is reached with (for describing the connection without a call)."""
    return load_settings()
