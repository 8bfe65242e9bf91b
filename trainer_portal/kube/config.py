"""Where the cluster is and how to talk to it, read lazily from Django settings.

Settings used (see ``trainer_portal/settings.py``): ``KUBE_CONFIG_PATH`` (kubeconfig file), ``KUBE_CONTEXT``
(context name; empty = the file's current context), ``KUBE_IN_CLUSTER`` (use the pod's service account),
``KUBE_REQUEST_TIMEOUT_SECONDS`` (read timeout of every call) and ``KUBE_FIELD_MANAGER``.

Nothing is read at import time. The values are snapshotted into a frozen :class:`KubeSettings`; the gateway built
from them is cached by ``trainer_portal.kube.client.get_gateway`` and dropped whenever a ``KUBE_*`` setting changes
(pytest's ``settings`` fixture sends ``setting_changed``), so tests can point the gateway at a sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

DEFAULT_FIELD_MANAGER = "trainer-portal"
DEFAULT_TIMEOUT_SECONDS = 10.0
# Connecting should be quick even when reading is slow (big lists); keep it short so an unreachable API server
# is reported within seconds.
CONNECT_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class KubeSettings:
    """How to reach the cluster. ``describe()`` gives a human summary for the cluster page."""

    config_path: str = ""
    context: str = ""
    in_cluster: bool = False
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    field_manager: str = DEFAULT_FIELD_MANAGER
    # A kubeconfig held in memory (decrypted from the portal's database or read from a Secret); never shown,
    # never in a repr. When set it is used instead of ``config_path``.
    config_text: str = field(default="", repr=False, compare=False)
    # Where ``config_text`` came from, for ``describe()`` (e.g. 'cluster "gpu-west" (stored kubeconfig)').
    source: str = ""

    @property
    def request_timeout(self) -> tuple[float, float]:
        """Return the ``(connect, read)`` timeout pair applied to every non-watch call."""
        return (min(CONNECT_TIMEOUT_SECONDS, self.timeout), self.timeout)

    def describe(self) -> str:
        """Return e.g. ``kubeconfig /etc/kube/config (context "prod")`` or ``in-cluster service account``."""
        if self.in_cluster:
            return "in-cluster service account"
        if self.config_text or self.source:
            context = f' (context "{self.context}")' if self.context else " (current context)"
            return f"{self.source or 'kubeconfig held in memory'}{context}"
        if not self.config_path:
            return "default kubeconfig (~/.kube/config)" + (f' (context "{self.context}")' if self.context else "")
        context = f' (context "{self.context}")' if self.context else " (current context)"
        return f"kubeconfig {self.config_path}{context}"


def load_settings() -> KubeSettings:
    """Return the cluster settings from ``django.conf.settings`` (defaults where unset)."""
    from django.conf import settings

    return KubeSettings(
        config_path=str(getattr(settings, "KUBE_CONFIG_PATH", "") or ""),
        context=str(getattr(settings, "KUBE_CONTEXT", "") or ""),
        in_cluster=bool(getattr(settings, "KUBE_IN_CLUSTER", False)),
        timeout=float(getattr(settings, "KUBE_REQUEST_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS)),
        field_manager=str(getattr(settings, "KUBE_FIELD_MANAGER", "") or DEFAULT_FIELD_MANAGER),
    )


class ConnectionKind:
    """How a cluster is reached (the values of ``trainer_portal.cluster.models.ConnectionKind``)."""

    SETTINGS = "settings"
    KUBECONFIG = "kubeconfig"
    SECRET = "secret"
    IN_CLUSTER = "in_cluster"
    ALL = (SETTINGS, KUBECONFIG, SECRET, IN_CLUSTER)


@dataclass(frozen=True)
class ClusterConnection:
    """How to reach one managed cluster, as plain data (the gateway knows no database row).

    ``name`` and ``version`` key the gateway cache: a changed row (new version) builds a new gateway. ``kind`` is
    one of :class:`ConnectionKind`: ``settings`` (the process's KUBE_* settings), ``kubeconfig`` (``kubeconfig``,
    the decrypted text, with ``context``), ``secret`` (a kubeconfig in the Secret ``secret_namespace``/
    ``secret_name``, key ``secret_key``, read through the settings connection) or ``in_cluster``. The kubeconfig
    text never appears in a repr.
    """

    name: str
    version: int = 1
    kind: str = ConnectionKind.SETTINGS
    kubeconfig: str = field(default="", repr=False)
    context: str = ""
    secret_namespace: str = ""
    secret_name: str = ""
    secret_key: str = ""

    def cache_key(self) -> tuple:
        """Return what identifies the gateway of this connection (name, version, kind)."""
        return (self.name, self.version, self.kind)


SECRET_KEYS_TRIED = ("kubeconfig", "config", "value")


def settings_for(connection: ClusterConnection, base: KubeSettings, *, kubeconfig_text: str = "") -> KubeSettings:
    """Return the :class:`KubeSettings` of ``connection`` (timeouts and field manager from ``base``, the process's
    settings). ``kubeconfig_text`` is the kubeconfig of a ``secret`` connection, read by the caller.

    Raises ValueError for an unknown kind or a kubeconfig/secret connection without its kubeconfig.
    """
    label = f'cluster "{connection.name}"'
    if connection.kind == ConnectionKind.SETTINGS:
        return base
    if connection.kind == ConnectionKind.IN_CLUSTER:
        return replace(base, config_path="", context="", in_cluster=True, config_text="", source="")
    if connection.kind == ConnectionKind.KUBECONFIG:
        if not connection.kubeconfig:
            raise ValueError(f"{label} has no stored kubeconfig")
        return replace(base, config_path="", context=connection.context, in_cluster=False,
                       config_text=connection.kubeconfig, source=f"{label} (stored kubeconfig)")
    if connection.kind == ConnectionKind.SECRET:
        if not kubeconfig_text:
            raise ValueError(f"{label}: the Secret {connection.secret_namespace}/{connection.secret_name} holds no "
                             "kubeconfig")
        return replace(base, config_path="", context=connection.context, in_cluster=False,
                       config_text=kubeconfig_text,
                       source=f"{label} (kubeconfig in Secret {connection.secret_namespace}/{connection.secret_name})")
    raise ValueError(f"{label}: unknown connection kind {connection.kind!r}")
