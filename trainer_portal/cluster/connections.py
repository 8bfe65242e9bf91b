"""From a Cluster row to how the gateway reaches it, and the encryption of stored kubeconfigs.

The gateway (``trainer_portal.kube``) knows no database: :func:`connection_for` turns a row into a frozen
:class:`~trainer_portal.kube.config.ClusterConnection` (plain data, the kubeconfig decrypted in memory only), and
``trainer_portal.kube.client.gateway_for`` builds and caches the gateway from it.

Stored kubeconfigs are encrypted with Fernet (AES-128-CBC + HMAC-SHA256) under ``TRAINER_PORTAL_ENCRYPTION_KEY``
(several comma-separated keys rotate: the first encrypts, all decrypt). Embedded mode without that setting derives
the key from ``SECRET_KEY``; production refuses to start without it (``settings.py``). Nothing here logs or returns
a kubeconfig except :func:`connection_for`, to the gateway.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

from trainer_portal.kube.config import ClusterConnection, ConnectionKind
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
