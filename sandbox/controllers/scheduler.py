"""The simulated gang scheduler: admits PodGroups all-or-nothing and binds their pods.

Each pass (on any pod, node or PodGroup change, and every few seconds) walks the PodGroups not yet scheduled in
FIFO order (creationTimestamp, then name). A gang waits until minCount member pods exist, then `try_place` (see
`fit.py`) must fit all of its pending pods into one domain of its topology key; basic groups place pod by pod.
Admitted pods are bound (spec.nodeName + PodScheduled=True) and the group's condition set True; an unschedulable
group gets condition False / `Unschedulable` with the placement message. Later groups may still be admitted when
an earlier one does not fit (best-effort FIFO, like kube-scheduler rather than Kueue's StrictFIFO).

Pods without `spec.schedulingGroup` are placed one by one; pods naming a PodGroup that does not exist stay Pending.
"""

from __future__ import annotations

import logging
import threading

from sandbox.controllers.client import ApiError, Client
from sandbox.controllers.common import (
    DEFAULT_SCHEDULER,
    KubeFlavour,
    condition_is_true,
    is_terminal,
    meta,
    pod_path,
    with_condition,
)
from sandbox.controllers.fit import PlacementAttempt, free_resources, try_place
from sandbox.controllers.informer import Informer, Loop, object_key
from sandbox.controllers.resources import pod_requests

__all__ = ["GangScheduler", "PlacementAttempt", "try_place"]

log = logging.getLogger("sandbox.controllers.scheduler")


def group_policy(group: dict) -> tuple[str, int]:
    """Return ("gang", minCount) or ("basic", 0) for a PodGroup object (gang without minCount means 1)."""
    policy = (group.get("spec") or {}).get("schedulingPolicy") or {}
    if "gang" in policy:
        return "gang", int((policy.get("gang") or {}).get("minCount") or 1)
    return "basic", 0


def group_topology_key(group: dict) -> str | None:
    """Return spec.schedulingConstraints.topology[0].key, or None."""
    topology = ((group.get("spec") or {}).get("schedulingConstraints") or {}).get("topology") or []
    return topology[0].get("key") if topology and isinstance(topology[0], dict) else None


def pod_group_name(pod: dict) -> str | None:
    """Return spec.schedulingGroup.podGroupName, or None."""
    return ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")


class GangScheduler:
    """The controller: informers for nodes, pods and PodGroups feed one scheduling loop."""

    def __init__(self, api_url: str, flavour: KubeFlavour, stop: threading.Event, *, nodes: Informer,
                 pods: Informer, pod_groups: Informer):
        self.client = Client(api_url, user_agent="sandbox-scheduler")
        self.flavour = flavour
        self.nodes, self.pods, self.pod_groups = nodes, pods, pod_groups
        # Pods bound by us that the pod informer has not shown bound yet (kube-scheduler's "assume" cache).
        self.assumed: dict[str, str] = {}
        # Watch order of PodGroup creation breaks creationTimestamp ties (second precision) in FIFO order.
        self._arrival: dict[str, int] = {}
        # object key -> (resourceVersion seen, status, reason, message) of our last condition write.
        self._written: dict[str, tuple] = {}
        self._failed_writes = False
        # Bumped whenever capacity may have grown (a bound pod ends or goes, a node changes). A group that did not
        # fit is not retried until the epoch or its own pods change: nothing could make it fit meanwhile.
        self._capacity_epoch = 0
        self._unfit: dict[str, tuple[int, int, int]] = {}
        self.loop = Loop("scheduler", self.sync, stop, resync=3.0, min_interval=0.05,
                         wait_for=(nodes, pods, pod_groups))
        pod_groups.add_handler(self._note_arrival)
        pods.add_handler(self._note_pod_capacity)
        nodes.add_handler(self._note_node_change)
        for informer in (nodes, pods, pod_groups):
            informer.add_handler(self.loop.poke)

    def _note_arrival(self, event_type: str, _old: dict | None, new: dict | None) -> None:
        if new is not None:
            self._arrival.setdefault(object_key(new), len(self._arrival))
        elif _old is not None:
            self._arrival.pop(object_key(_old), None)
            self._written.pop(object_key(_old), None)
            self._unfit.pop(object_key(_old), None)

    def _note_pod_capacity(self, _event: str, old: dict | None, new: dict | None) -> None:
        if new is None and old is not None:
            self._written.pop(object_key(old), None)
        was_holding = old is not None and (old.get("spec") or {}).get("nodeName") and not is_terminal(old)
        holds = new is not None and (new.get("spec") or {}).get("nodeName") and not is_terminal(new) and not meta(
            new).get("deletionTimestamp")
        if was_holding and not holds:
            self._capacity_epoch += 1

    def _note_node_change(self, *_args: object) -> None:
        self._capacity_epoch += 1

    def _fifo_key(self, obj: dict) -> tuple:
        m = meta(obj)
        return (m.get("creationTimestamp") or "", self._arrival.get(object_key(obj), 1 << 62),
                m.get("namespace") or "", m.get("name") or "")

    def start(self) -> None:
        """Start the scheduling loop thread."""
        self.loop.start()

    # -- one pass -------------------------------------------------------------------------------------------------

    def _effective_pods(self) -> list[dict]:
        """Cached pods with assumed bindings applied; forgets assumptions the cache has caught up with."""
        pods = self.pods.items()
        present = set()
        result = []
        for pod in pods:
            key = object_key(pod)
            present.add(key)
            node = self.assumed.get(key)
            if node is not None:
                if (pod.get("spec") or {}).get("nodeName"):
                    self.assumed.pop(key, None)
                else:
                    pod = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node}}
            result.append(pod)
        for key in list(self.assumed):
            if key not in present:
                self.assumed.pop(key, None)
        return result

    def sync(self) -> bool:
        """Run one scheduling pass over every pending PodGroup and ungrouped pod; True when a write failed."""
        self._failed_writes = False
        nodes = self.nodes.items()
        node_labels = {meta(n)["name"]: meta(n).get("labels") or {} for n in nodes}
        pods = [p for p in self._effective_pods() if not meta(p).get("deletionTimestamp")]
        live = [p for p in pods if not is_terminal(p)]
        bound = [p for p in live if (p.get("spec") or {}).get("nodeName")]
        free = free_resources(nodes, bound)
        members: dict[tuple[str, str], list[dict]] = {}
        ungrouped: list[dict] = []
        for pod in live:
            if ((pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
                continue
            group_name = pod_group_name(pod)
            if group_name:
                members.setdefault((meta(pod).get("namespace"), group_name), []).append(pod)
            elif not (pod.get("spec") or {}).get("nodeName"):
                ungrouped.append(pod)

        for group in sorted(self.pod_groups.items(), key=self._fifo_key):
            if meta(group).get("deletionTimestamp"):
                continue
            group_pods = members.get((meta(group).get("namespace"), meta(group)["name"]), [])
            self._schedule_group(group, group_pods, nodes, node_labels, free)
        for pod in sorted(ungrouped, key=self._fifo_key):
            attempt = try_place([pod], nodes, [], None, free=free)
            if attempt.fits:
                self._bind_all([pod], attempt, free)
            else:
                self._mark_unschedulable(pod, attempt.message)
        return self._failed_writes

    def _schedule_group(self, group: dict, group_pods: list[dict], nodes: list[dict],
                        node_labels: dict[str, dict], free: dict) -> None:
        policy, min_count = group_policy(group)
        key = group_topology_key(group)
        pending = [p for p in group_pods if not (p.get("spec") or {}).get("nodeName")]
        if not pending:
            return
        bound_nodes = {p["spec"]["nodeName"] for p in group_pods if (p.get("spec") or {}).get("nodeName")}
        domain = None
        if key and bound_nodes:
            domains = {node_labels.get(n, {}).get(key) for n in bound_nodes}
            domain = sorted(d for d in domains if d is not None)[0] if domains - {None} else None
        admitted = condition_is_true(group, self.flavour.scheduled_condition)

        group_key = object_key(group)
        state = (self._capacity_epoch, len(group_pods), len(pending))
        if self._unfit.get(group_key) == state:
            return  # failed before and nothing that could change that has happened since
        if policy == "gang" and not admitted:
            if len(group_pods) < min_count:
                return  # PreEnqueue: wait until minCount member pods exist
            attempt = try_place(pending, nodes, [], key, domain=domain, free=free)
            if attempt.fits:
                self._unfit.pop(group_key, None)
                self._bind_all(pending, attempt, free)
                self._set_condition(group, True, "Scheduled", attempt.message)
            else:
                self._unfit[group_key] = state
                self._set_condition(group, False, "Unschedulable", attempt.message)
            return

        # Basic groups, and stragglers of an admitted gang: one pod at a time, inside the group's domain.
        last_failure = None
        for pod in sorted(pending, key=lambda p: meta(p)["name"]):
            attempt = try_place([pod], nodes, [], key, domain=domain, free=free)
            if attempt.fits:
                self._bind_all([pod], attempt, free)
                if key and domain is None:
                    domain = attempt.domain
                if not admitted:
                    self._set_condition(group, True, "Scheduled", attempt.message)
                    admitted = True
            else:
                last_failure = attempt
        if last_failure is not None:
            placed = sum(1 for p in pending if object_key(p) in self.assumed)
            if not self._failed_writes:  # a failed bind must be retried, not remembered as "does not fit"
                self._unfit[group_key] = (self._capacity_epoch, len(group_pods), len(pending) - placed)
            if not admitted:
                self._set_condition(group, False, "Unschedulable", last_failure.message)

    # -- writes ---------------------------------------------------------------------------------------------------

    def _bind_all(self, pods: list[dict], attempt: PlacementAttempt, free: dict) -> None:
        """Bind every pod of a successful attempt; capacity is reserved first so a failed write cannot double-book."""
        by_name = {meta(p)["name"]: p for p in pods}
        for pod_name, node_name in sorted(attempt.assignments.items()):
            pod = by_name[pod_name]
            for resource, amount in pod_requests(pod).items():
                free[node_name][resource] = free[node_name].get(resource, 0) - amount
            self.assumed[object_key(pod)] = node_name
        for pod_name, node_name in sorted(attempt.assignments.items()):
            self._bind(by_name[pod_name], node_name)

    def _bind(self, pod: dict, node_name: str) -> None:
        namespace, name = meta(pod)["namespace"], meta(pod)["name"]
        path = pod_path(namespace, name)
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": namespace},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        try:
            # pods/binding sets spec.nodeName and PodScheduled=True in one write, as kube-scheduler does.
            self.client.create(path + "/binding", binding)
        except (ApiError, OSError) as error:
            # Deleted meanwhile (NotFound), already bound (Conflict) or a server error: forget the assumption,
            # the next pass (soon) re-evaluates from the informer's view.
            self.assumed.pop(object_key(pod), None)
            self._failed_writes = True
            log.info("bind %s/%s -> %s failed: %s", namespace, name, node_name, error)

    def _mark_unschedulable(self, pod: dict, message: str) -> None:
        """Set PodScheduled=False/Unschedulable on a pod outside any PodGroup (as kube-scheduler does)."""
        key = object_key(pod)
        if self._written.get(key) == (meta(pod).get("resourceVersion"), False, "Unschedulable", message):
            return
        conditions = with_condition(pod, "PodScheduled", False, "Unschedulable", message)
        if conditions is None:
            return
        self._written[key] = (meta(pod).get("resourceVersion"), False, "Unschedulable", message)
        try:
            self.client.patch_status(pod_path(meta(pod)["namespace"], meta(pod)["name"]),
                                     {"status": {"conditions": conditions}})
        except (ApiError, OSError) as error:
            self._written.pop(key, None)
            log.info("pod %s status update failed: %s", key, error)

    def _set_condition(self, group: dict, status: bool, reason: str, message: str) -> None:
        key = object_key(group)
        if self._written.get(key) == (meta(group).get("resourceVersion"), status, reason, message):
            return  # already written; the informer has not caught up yet
        conditions = with_condition(group, self.flavour.scheduled_condition, status, reason, message)
        if conditions is None:
            return  # identical condition: no write, no resourceVersion churn
        self._written[key] = (meta(group).get("resourceVersion"), status, reason, message)
        path = self.flavour.collection("podgroups", meta(group)["namespace"]) + "/" + meta(group)["name"]
        try:
            self.client.patch_status(path, {"status": {"conditions": conditions}})
        except (ApiError, OSError) as error:
            self._written.pop(key, None)
            self._failed_writes = True
            log.info("podgroup %s status update failed: %s", path, error)
