"""Watch-event interfaces of the policy app: the cluster watcher's ClusterTrainingRuntime events become drift checks.

Registered with the informer hub (`trainer_portal.cluster.informers`) from `RuntimesConfig.ready()`; the hub runs
in ``manage.py cluster_watch``. A runtime that someone edits or deletes on the cluster is re-checked within a flush
(a fraction of a second), not at the next periodic check: its policy says "drifted" or "missing" at once.
Like a Celery task, the handler only translates and calls one service; the checks and writes are the sync service's.
"""

from __future__ import annotations

import logging

from trainer_portal.kube import CLUSTER_TRAINING_RUNTIME

logger = logging.getLogger(__name__)


class RuntimeDriftHandler:
    """Remembers the last observed object of every ClusterTrainingRuntime and, on the leader, re-checks the policies
    whose runtime changed (all applied policies after a relist or on gaining leadership)."""

    name = "runtimes-drift"
    kinds = (CLUSTER_TRAINING_RUNTIME,)
    needs_leader = True

    def __init__(self, cluster: str | None = None) -> None:
        # The name of the cluster whose watch feeds this handler (None: the default cluster).
        self.cluster = cluster
        self.live: dict[str, dict] = {}
        self.dirty: set[str] = set()
        self.everything = False
        self.checks = 0
        self.drifted = 0

    def relisted(self, kind, items: list[dict], resource_version: str) -> None:
        self.live = {item["metadata"]["name"]: item for item in items}
        self.everything = True  # a relist may hide deletions and edits that happened while no watch was open

    def changed(self, kind, event_type: str, obj: dict) -> None:
        name = obj["metadata"]["name"]
        if event_type == "DELETED":
            self.live.pop(name, None)
        else:
            self.live[name] = obj
        self.dirty.add(name)

    def leadership_gained(self) -> None:
        self.everything = True

    def flush(self, *, leader: bool) -> None:
        if not leader or not (self.everything or self.dirty):
            return
        from runtimes.services import sync  # the app registry is ready only after this module is imported

        cluster_id = self._cluster_id()
        if self.cluster is not None and cluster_id is None:
            return  # the cluster's row is gone: never check another cluster's policies against this watch
        names = None if self.everything else sorted(self.dirty)
        self.everything, self.dirty = False, set()
        results, retry = sync.policies_drift_check_observed(live_by_name=self.live, names=names, cluster_id=cluster_id)
        self.dirty.update(retry)
        self.checks += len(results)
        self.drifted += sum(1 for result in results if result.drifted)

    def _cluster_id(self) -> int | None:
        if self.cluster is None:
            return None
        from trainer_portal.cluster.models import Cluster

        return Cluster.objects.filter(name=self.cluster).values_list("pk", flat=True).first()

    def close(self) -> None:
        # The hub's dispatch thread ends: its database connection goes with it.
        from django.db import connections

        connections.close_all()

    def status(self) -> dict:
        return {"cluster": self.cluster or "", "runtimes": len(self.live), "pending": len(self.dirty),
                "checks": self.checks, "drifted": self.drifted}
