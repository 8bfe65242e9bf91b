"""Leader election over a coordination.k8s.io/v1 Lease, as kube-controller-manager does it.

One Lease per cluster, in the cluster it elects for (``settings.CLUSTER_WATCH_LEASE_NAMESPACE`` /
``CLUSTER_WATCH_LEASE_NAME``, defaults "default" / "trainer-portal-cluster-watch", suffixed with the cluster's name by
:func:`lease_name_for`), names the holder in ``spec.holderIdentity``. The holder renews ``renewTime`` every
``renew_interval`` (2 s); a candidate takes the Lease over when it is free or when it has not changed for
``lease_duration`` (15 s) of the candidate's own clock (so clock skew between hosts does not matter). The holder
stops calling itself leader ``renew_deadline`` (10 s) after its last successful renewal began — before any
candidate may take over — so a deposed leader never writes: ``is_leader`` is computed from that deadline at every
call. Every write is a compare-and-set on the Lease's resourceVersion (PUT with ``metadata.resourceVersion``; a 409
means someone else won). On a clean stop the holder releases the Lease (empty holder), so the next candidate takes
over at once.

Where Leases are not served or forbidden, the elector runs in "standalone" mode: this process acts as the leader,
logs why, and reports ``mode: standalone`` (docs/decisions.md, "Cluster app and watcher").
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from trainer_portal.kube.client import Gateway, get_gateway
from trainer_portal.kube.errors import KubeConflict, KubeError, KubeForbidden, KubeNotFound
from trainer_portal.kube.resources import LEASE, Resource, ResourceKind

logger = logging.getLogger(__name__)

LEASE_DURATION_SECONDS = 15.0
RENEW_DEADLINE_SECONDS = 10.0
RENEW_INTERVAL_SECONDS = 2.0
RETRY_INTERVAL_SECONDS = 2.0
DEFAULT_LEASE_NAMESPACE = "default"
DEFAULT_LEASE_NAME = "trainer-portal-cluster-watch"


def default_identity() -> str:
    """Return "<host>_<pid>_<random>": unique per process, readable in ``kubectl get lease``."""
    return f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:6]}"


def lease_name_for(base: str, cluster_name: str) -> str:
    """Return the Lease name of ``cluster_name``'s watcher: ``<base>-<cluster>``, cut to a DNS subdomain (253)."""
    return f"{base}-{cluster_name}"[:253].rstrip("-.")


def _micro_time(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseElector:
    """Acquires and renews the Lease; ``is_leader`` says whether this process holds it right now.

    ``run(stop)`` loops until ``stop`` is set (the hub runs it in a thread); ``step()`` is one attempt.
    """

    def __init__(
        self,
        *,
        gateway: Gateway | None = None,
        namespace: str | None = None,
        name: str | None = None,
        identity: str | None = None,
        lease_duration: float = LEASE_DURATION_SECONDS,
        renew_interval: float = RENEW_INTERVAL_SECONDS,
        retry_interval: float = RETRY_INTERVAL_SECONDS,
        renew_deadline: float | None = None,
        lease_kind: ResourceKind = LEASE,
    ) -> None:
        self.gateway = gateway or get_gateway()
        self.namespace = namespace or getattr(settings, "CLUSTER_WATCH_LEASE_NAMESPACE", DEFAULT_LEASE_NAMESPACE)
        self.name = name or getattr(settings, "CLUSTER_WATCH_LEASE_NAME", DEFAULT_LEASE_NAME)
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_interval = renew_interval
        # Must be shorter than the lease duration, so we stop writing before anyone may take over.
        self.renew_deadline = min(renew_deadline or RENEW_DEADLINE_SECONDS, lease_duration * 2 / 3)
        self.retry_interval = retry_interval
        self.lease_kind = lease_kind
        self.mode = "lease"
        self.reason = ""
        self.holder = ""
        self.transitions = 0
        self._leader = False
        self._renewed_at = 0.0  # monotonic, our last successful write while leader
        self._observed: tuple[str, float] = ("", 0.0)  # (resourceVersion, monotonic time we first saw it)
        self._resource: Resource | None = None
        self._lock = threading.Lock()

    @property
    def is_leader(self) -> bool:
        """Return True while this process holds the Lease (always, in standalone mode): its last successful
        renewal began less than ``renew_deadline`` ago. Computed at every call; call it right before writing."""
        with self._lock:
            if self._leader and self.mode == "lease" and time.monotonic() - self._renewed_at > self.renew_deadline:
                self._leader = False  # we could not renew in time: stop before anyone may take over
            return self._leader

    def status(self) -> dict[str, Any]:
        """Return ``{mode, leader, identity, holder, lease, reason}`` for the cluster page and tests."""
        return {"mode": self.mode, "leader": self.is_leader, "identity": self.identity, "holder": self.holder,
                "lease": f"{self.namespace}/{self.name}", "reason": self.reason}

    def run(self, stop: threading.Event) -> None:
        """Acquire/renew until ``stop`` is set; the holder renews every ``renew_interval``."""
        while not stop.is_set():
            self.step()
            if self.mode == "standalone":
                return
            stop.wait(self.renew_interval if self.is_leader else self.retry_interval)

    def step(self) -> bool:
        """Try once to acquire or renew the Lease; return whether this process holds it afterwards."""
        try:
            resource = self._resource or self.gateway.resolve(self.lease_kind)
            self._resource = resource
            lease = self.gateway.get(resource, name=self.name, namespace=self.namespace)
            if lease is None:
                self._write(resource, None)
            else:
                self._consider(resource, lease)
        except (KubeForbidden, KubeNotFound) as exc:
            if isinstance(exc, KubeNotFound) and self._resource is not None:
                return self._lost(exc)  # the Lease vanished between get and write: try again next time
            self._standalone(exc)
        except KubeConflict:
            self._set(False)  # someone else wrote first
        except KubeError as exc:
            return self._lost(exc)
        return self.is_leader

    def release(self) -> None:
        """Give the Lease up (empty holder) when we hold it, so another process takes over at once."""
        if self.mode != "lease" or not self.is_leader or self._resource is None:
            self._set(False)
            return
        try:
            lease = self.gateway.get(self._resource, name=self.name, namespace=self.namespace)
            if lease and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"] = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1}
                self._put(self._resource, lease)
        except KubeError as exc:
            logger.info("could not release the Lease %s/%s: %s", self.namespace, self.name, exc.message)
        self._set(False)

    # -- internals ------------------------------------------------------------------------------------------

    def _consider(self, resource: Resource, lease: dict) -> None:
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        self.holder = holder
        version = (lease.get("metadata") or {}).get("resourceVersion", "")
        now = time.monotonic()
        if version != self._observed[0]:
            self._observed = (version, now)
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        expired = not holder or now - self._observed[1] > duration
        if holder == self.identity or expired:
            self._write(resource, lease)
        else:
            self._set(False)

    def _write(self, resource: Resource, lease: dict | None) -> None:
        """Create the Lease, or take over / renew it with a compare-and-set on its resourceVersion."""
        began = time.monotonic()  # the deadline counts from before the request: it may have taken long
        now = time.time()
        spec = dict((lease or {}).get("spec") or {})
        taking_over = spec.get("holderIdentity") != self.identity
        spec.update(holderIdentity=self.identity, leaseDurationSeconds=max(1, round(self.lease_duration)),
                    renewTime=_micro_time(now))
        if taking_over:
            spec["acquireTime"] = _micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if lease else 0)
        if lease is None:
            body = {"apiVersion": resource.api_version, "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec}
            stored = self.gateway.create(resource, body=body)
        else:
            stored = self._put(resource, {**lease, "spec": spec})
        self._observed = ((stored or {}).get("metadata", {}).get("resourceVersion", ""), time.monotonic())
        self.holder = self.identity
        if taking_over:
            self.transitions += 1
            logger.info("acquired the Lease %s/%s as %s", self.namespace, self.name, self.identity)
        with self._lock:
            self._renewed_at = began
        self._set(True)

    def _put(self, resource: Resource, lease: dict) -> dict:
        # PUT carries metadata.resourceVersion: the server answers 409 when the Lease changed since we read it.
        path = resource.path(namespace=self.namespace, name=self.name)
        return self.gateway.request("PUT", path, body=lease) or {}

    def _lost(self, exc: KubeError) -> bool:
        self.reason = exc.message
        logger.warning("Lease %s/%s: %s", self.namespace, self.name, exc.message)
        return self.is_leader  # keeps leading until the lease duration runs out without a renewal

    def _standalone(self, exc: KubeError) -> None:
        self.mode = "standalone"
        self.reason = exc.message
        logger.warning("Leases are not usable (%s): this cluster watcher acts as the only one. Grant get/create/"
                       "update on coordination.k8s.io leases to run more than one.", exc.message)
        self._set(True)

    def _set(self, leader: bool) -> None:
        with self._lock:
            self._leader = leader
