"""The PodGroup protection controller (kube-controller-manager, GenericWorkload): lets a deleted PodGroup go.

Leaf PodGroups carry the finalizer `scheduling.k8s.io/podgroup-protection`, so deleting one only marks it
(`deletionTimestamp`). Once no pod that still runs or waits (phase not Succeeded/Failed) names it in
`spec.schedulingGroup.podGroupName`, this controller removes the finalizer and the API server completes the deletion.
"""

from __future__ import annotations

import logging
import threading

from sandbox.controllers.client import ApiError, Client
from sandbox.controllers.common import KubeFlavour, is_terminal, meta
from sandbox.controllers.expansion import PROTECTION_FINALIZER
from sandbox.controllers.informer import Informer, Loop

log = logging.getLogger("sandbox.controllers.protection")


def pods_using(pods: list[dict]) -> set[tuple[str, str]]:
    """Return (namespace, PodGroup name) for every PodGroup referenced by a pod that is not finished."""
    return {(meta(p).get("namespace", ""), ((p.get("spec") or {}).get("schedulingGroup") or {})["podGroupName"])
            for p in pods if ((p.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
            and not is_terminal(p)}


class PodGroupProtection:
    """Removes the protection finalizer from deleted PodGroups that no live pod uses any more."""

    def __init__(self, api_url: str, flavour: KubeFlavour, stop: threading.Event, *, pods: Informer,
                 pod_groups: Informer):
        self.client = Client(api_url, user_agent="sandbox-podgroup-protection")
        self.flavour = flavour
        self.pods, self.pod_groups = pods, pod_groups
        self.loop = Loop("podgroup-protection", self.sync, stop, resync=2.0, min_interval=0.05,
                         wait_for=(pods, pod_groups))
        for informer in (pods, pod_groups):
            informer.add_handler(self.loop.poke)

    def start(self) -> None:
        """Start the loop thread."""
        self.loop.start()

    def sync(self) -> bool:
        """Release every releasable PodGroup once; return True when a write failed (retry soon)."""
        used = pods_using(self.pods.items())
        retry = False
        for group in self.pod_groups.items():
            group_meta = meta(group)
            finalizers = group_meta.get("finalizers") or []
            if not group_meta.get("deletionTimestamp") or PROTECTION_FINALIZER not in finalizers:
                continue
            if (group_meta.get("namespace", ""), group_meta.get("name")) in used:
                continue
            path = f"{self.flavour.collection('podgroups', group_meta['namespace'])}/{group_meta['name']}"
            remaining = [f for f in finalizers if f != PROTECTION_FINALIZER]
            body = {**group, "metadata": {**group_meta, "finalizers": remaining}}
            try:
                self.client.replace(path, body)
            except ApiError as error:
                if error.status not in (404, 409):
                    retry = True
                log.info("podgroup %s finalizer not removed yet: %s", path, error)
            except OSError as error:
                retry = True
                log.info("podgroup %s finalizer not removed yet: %s", path, error)
        return retry
