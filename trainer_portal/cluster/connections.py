"""From a Cluster row to how the gateway reaches it, and the encryption of stored kubeconfigs.

The gateway (``trainer_portal.kube``) knows no database: :func:`connection_for` turns a row into a frozen
:class:`~trainer_portal.kube.config.ClusterConnection` (plain data, the kubeconfig decrypted in memory only), and
``trainer_portal.kube.client.gateway_for`` builds and caches the gateway from it.

Stored kubeconfigs are encrypted with Fernet (AES-128-CBC + HMAC-SHA256) under ``TRAINER_PORTAL_ENCRYPTION_KEY``
(several comma-separated keys rotate: the first encrypts, all decrypt). Embedded mode without that setting derives
the key from ``SECRET_KEY``; production refuses to start without it (``settings.py``). Nothing here logs or returns
a kubeconfig except :func:`connection_for`, to the gateway.

Gateways with bounded timeouts: background probes use `probe_gateway` (``CLUSTER_PROBE_TIMEOUT_SECONDS``); anything
a web request must do on a cluster (dry-run, apply, drift check) uses `action_gateway`
(``CLUSTER_ACTION_TIMEOUT_SECONDS``), so a hung API server costs a web worker that long at most and the request
answers 503 with Retry-After. `gateway_for_cluster` is the one place that maps a Cluster row to its gateway.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
import threading

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

from trainer_portal.kube.client import Gateway, build_gateway, gateway_for, get_gateway
from trainer_portal.kube.config import ClusterConnection, ConnectionKind, KubeSettings, load_settings
from trainer_portal.kube.errors import KubeNotConfigured

# Domain separation: the derived key is not any other use of SECRET_KEY.
_DERIVATION_LABEL = b"trainer-portal/cluster-kubeconfig/v1:"


class KubeconfigUnreadable(KubeNotConfigured):
    """A stored kubeconfig cannot be decrypted (the encryption key changed without keeping the old one): the
    cluster cannot be reached until it is stored again, as with any missing configuration."""


def _fernet() -> MultiFernet:
    """Return the cipher of the configured keys (or the key derived from SECRET_KEY in embedded mode)."""
    keys = list(getattr(settings, "ENCRYPTION_KEYS", []) or [])
    if not keys:
        digest = hashlib.sha256(_DERIVATION_LABEL + settings.SECRET_KEY.encode("utf-8")).digest()
        keys = [base64.urlsafe_b64encode(digest).decode("ascii")]
    return MultiFernet([Fernet(key.encode("ascii")) for key in keys])


def encrypt_kubeconfig(text: str) -> str:
    """Return ``text`` encrypted for the database (a Fernet token, ASCII)."""
    return _fernet().encrypt(text.encode("utf-8")).decode("ascii")


def decrypt_kubeconfig(token: str) -> str:
    """Return the kubeconfig text of a stored ``token``. Raises KubeconfigUnreadable when no key decrypts it."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError, ValueError):
        raise KubeconfigUnreadable("the stored kubeconfig cannot be decrypted with TRAINER_PORTAL_ENCRYPTION_KEY: "
                                   "keep the old key in the list (new,old) or store the kubeconfig again") from None


def parse_secret_ref(ref: str) -> tuple[str, str, str]:
    """Return ``(namespace, name, key)`` of a Secret reference ``namespace/name`` or ``namespace/name/key`` (key ""
    = the first of kubeconfig, config, value). Raises ValueError for another shape."""
    parts = (ref or "").strip().split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise ValueError("a Secret reference is namespace/name or namespace/name/key")
    namespace, name, key = parts[0], parts[1], parts[2] if len(parts) == 3 else ""
    return namespace, name, key


def connection_for(cluster) -> ClusterConnection:
    """Return how to reach ``cluster`` (a ``Cluster`` row) as plain data for ``gateway_for``.

    Raises KubeNotConfigured: KubeconfigUnreadable for a stored kubeconfig no key decrypts, or a malformed Secret
    reference.
    """
    kind = cluster.connection
    common = {"name": cluster.name, "version": cluster.version, "kind": kind, "context": cluster.kubeconfig_context}
    if kind == ConnectionKind.KUBECONFIG:
        return ClusterConnection(**common, kubeconfig=decrypt_kubeconfig(cluster.kubeconfig_encrypted))
    if kind == ConnectionKind.SECRET:
        try:
            namespace, name, key = parse_secret_ref(cluster.secret_ref)
        except ValueError as exc:
            raise KubeNotConfigured(f'cluster "{cluster.name}": {exc}') from None
        return ClusterConnection(**common, secret_namespace=namespace, secret_name=name, secret_key=key)
    return ClusterConnection(**common)


def default_connection() -> ClusterConnection | None:
    """Return the default cluster's connection, or None when the process's settings are the answer: the default
    connects through them, there is no default row, or no database can be asked (a process or test without one).
    Registered as the gateway's default resolver by the cluster app."""
    from django.db import DatabaseError

    from .models import Cluster

    try:
        cluster = Cluster.objects.filter(is_default=True).first()
    except (DatabaseError, RuntimeError):  # RuntimeError: database access forbidden here (tests, async code)
        return None
    if cluster is None or cluster.connection == ConnectionKind.SETTINGS:
        return None
    return connection_for(cluster)


DEFAULT_ACTION_TIMEOUT_SECONDS = 5.0
DEFAULT_PROBE_TIMEOUT_SECONDS = 5.0

_bounded: dict[str, Gateway] = {}
_bounded_lock = threading.Lock()


def gateway_for_cluster(cluster=None) -> Gateway:
    """Return the gateway of ``cluster`` (a ``Cluster`` row; the default cluster when None).

    Raises KubeNotConfigured when the cluster's connection cannot be loaded (and KubeError when a Secret holding its
    kubeconfig cannot be read).
    """
    if cluster is None or cluster.is_default:
        return get_gateway()
    return gateway_for(connection_for(cluster))


def action_timeout() -> float:
    """Return the seconds a web request may wait on a cluster (``CLUSTER_ACTION_TIMEOUT_SECONDS``)."""
    return float(getattr(settings, "CLUSTER_ACTION_TIMEOUT_SECONDS", DEFAULT_ACTION_TIMEOUT_SECONDS))


def probe_timeout() -> float:
    """Return the seconds one background probe call may take (``CLUSTER_PROBE_TIMEOUT_SECONDS``)."""
    return float(getattr(settings, "CLUSTER_PROBE_TIMEOUT_SECONDS", DEFAULT_PROBE_TIMEOUT_SECONDS))


def _bounded_gateway(cluster, timeout: float) -> Gateway:
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


def action_gateway(cluster=None) -> Gateway:
    """Return the cluster's gateway with every call bounded by `action_timeout` (for work a web request waits on).

    Raises KubeNotConfigured.
    """
    return _bounded_gateway(cluster, action_timeout())


def probe_gateway(cluster=None) -> Gateway:
    """Return the cluster's gateway with every call bounded by `probe_timeout` (for background checks).

    Raises KubeNotConfigured.
    """
    return _bounded_gateway(cluster, probe_timeout())


def kube_settings_for(cluster=None) -> KubeSettings:
    """Return the `KubeSettings` describing how ``cluster`` is reached (the default cluster when None), without
    reaching it: no Secret is read and no kubeconfig decrypted, so pages can describe a connection at no cost.
    Never raises."""
    base = load_settings()
    if cluster is None:
        return base
    kind = cluster.connection
    if kind == ConnectionKind.IN_CLUSTER:
        return dataclasses.replace(base, config_path="", context="", in_cluster=True)
    if kind == ConnectionKind.KUBECONFIG:
        return dataclasses.replace(base, config_path="", context=cluster.kubeconfig_context,
                                   source=f'kubeconfig stored for cluster "{cluster.name}"')
    if kind == ConnectionKind.SECRET:
        return dataclasses.replace(base, config_path="", context=cluster.kubeconfig_context,
                                   source=f"kubeconfig in Secret {cluster.secret_ref}")
    return base


# Other secrets the portal stores (notification webhook secrets, chat URLs) use the same keys and rotation.
encrypt_secret = encrypt_kubeconfig
decrypt_secret = decrypt_kubeconfig
