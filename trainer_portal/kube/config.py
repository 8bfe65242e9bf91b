"""Where the cluster is and how to talk to it, read lazily from Django settings.

Settings used (see ``trainer_portal/settings.py``): ``KUBE_CONFIG_PATH`` (kubeconfig file), ``KUBE_CONTEXT``
(context name; empty = the file's current context), ``KUBE_IN_CLUSTER`` (use the pod's service account),
``KUBE_REQUEST_TIMEOUT_SECONDS`` (read timeout of every call) and ``KUBE_FIELD_MANAGER``.

Nothing is read at import time. The values are snapshotted into a frozen :class:`KubeSettings`; the gateway built
from them is cached by ``trainer_portal.kube.client.get_gateway`` and dropped whenever a ``KUBE_*`` setting changes
(pytest's ``settings`` fixture sends ``setting_changed``), so tests can point the gateway at a sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass

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

    @property
    def request_timeout(self) -> tuple[float, float]:
        """Return the ``(connect, read)`` timeout pair applied to every non-watch call."""
        return (min(CONNECT_TIMEOUT_SECONDS, self.timeout), self.timeout)

    def describe(self) -> str:
        """Return e.g. ``kubeconfig /etc/kube/config (context "prod")`` or ``in-cluster service account``."""
        if self.in_cluster:
            return "in-cluster service account"
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
