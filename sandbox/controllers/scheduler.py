"""The simulated gang scheduler: admits PodGroups all-or-nothing and binds their pods.

Each pass (on any pod, node or PodGroup change, and every few seconds) walks the PodGroups not yet scheduled in
FIFO order (creationTimestamp, then name). A gang waits until minCount member pods exist, then `try_place` (see
`fit.py`) must fit all of its pending pods into one domain of its topology key; basic groups place pod by pod.
Admitted pods are bound (spec.nodeName + PodScheduled=True) and the group's condition set True; an unschedulable
group gets condition False / `Unschedulable` with the placement message. Later groups may still be admitted when
an earlier one does not fit (best-effort FIFO, like kube-scheduler rather than Kueue's StrictFIFO).

Pods without `spec.schedulingGroup` are placed one by one; pods naming a PodGroup that does not exist stay Pending.

As kube-scheduler does, the queue is ordered by priority first (pods' `priority` or PriorityClass, a PodGroup's
`priority` / `priorityClassName`), then FIFO; `PodGroupInitiallyScheduled` never goes back from True to False; a group
the scheduler cannot evaluate (malformed policy or constraints, an unknown PriorityClass, member pods of different
priorities, malformed quantities) gets False / `SchedulerError`. Events as kube-scheduler records them:
`FailedScheduling` (Warning) on the pods and the PodGroup with the message, `Scheduled` (Normal) "Successfully
assigned ns/pod to node". A gang that fits only by evicting lower-priority gangs preempts them whole (`preemption.py`):
victims' PodGroups get `DisruptionTarget=True` / `PreemptionByScheduler`, their pods the same condition and are
deleted, and `Preempted` Events name the preemptor. An evicted gang is scheduled again as a whole.
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
from sandbox.controllers.events import NORMAL, WARNING, EventRecorder
from sandbox.controllers.fit import PlacementAttempt, free_resources, no_victims_message, try_place
from sandbox.controllers.informer import Informer, Loop, object_key
from sandbox.controllers.preemption import Holder, choose_victims, resolve_priority
from sandbox.controllers.resources import pod_requests

__all__ = ["GangScheduler", "PlacementAttempt", "try_place"]

log = logging.getLogger("sandbox.controllers.scheduler")


DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_REASON = "PreemptionByScheduler"


def group_policy(group: dict) -> tuple[str, int]:
    """Return ("gang", minCount) or ("basic", 0) for a PodGroup object (gang without minCount means 1).

    Raises ValueError when the policy cannot be evaluated (not exactly one of gang/basic, minCount not an integer
    of at least 1).
    """
    policy = (group.get("spec") or {}).get("schedulingPolicy")
    if not isinstance(policy, dict) or len([k for k in ("gang", "basic") if k in policy]) != 1:
        raise ValueError(f"spec.schedulingPolicy must set exactly one of gang or basic, got {policy!r}")
    if "gang" not in policy:
        return "basic", 0
    min_count = (policy.get("gang") or {}).get("minCount", 1)
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise ValueError(f"spec.schedulingPolicy.gang.minCount must be an integer of at least 1, got {min_count!r}")
    return "gang", min_count


def group_topology_key(group: dict) -> str | None:
    """Return spec.schedulingConstraints.topology[0].key, or None. Raises ValueError on a malformed constraint."""
    topology = ((group.get("spec") or {}).get("schedulingConstraints") or {}).get("topology") or []
    if not topology:
        return None
    if not isinstance(topology, list) or len(topology) > 1 or not isinstance(topology[0], dict) \
            or not isinstance(topology[0].get("key"), str) or not topology[0]["key"]:
        raise ValueError(f"spec.schedulingConstraints.topology must be one entry with a label key, got {topology!r}")
    return topology[0]["key"]


def pod_group_name(pod: dict) -> str | None:
    """Return spec.schedulingGroup.podGroupName, or None."""
    return ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")


class GangScheduler:
    """The controller: informers for nodes, pods and PodGroups feed one scheduling loop."""

    def __init__(self, api_url: str, flavour: KubeFlavour, stop: threading.Event, *, nodes: Informer,
                 pods: Informer, pod_groups: Informer, priority_classes: Informer | None = None):
        self.client = Client(api_url, user_agent="sandbox-scheduler")
        self.events = EventRecorder(Client(api_url, user_agent="sandbox-scheduler-events"), "default-scheduler")
        self.flavour = flavour
        self.nodes, self.pods, self.pod_groups = nodes, pods, pod_groups
        self.priority_classes = priority_classes
        self._classes: dict[str, dict] = {}
        # Pods bound by us that the pod informer has not shown bound yet (kube-scheduler's "assume" cache).
        self.assumed: dict[str, str] = {}
        # Watch order of PodGroup creation breaks creationTimestamp ties (second precision) in FIFO order.
        self._arrival: dict[str, int] = {}
        # object key -> (resourceVersion seen, status, reason, message) of our last condition write.
        self._written: dict = {}  # pod key, or (PodGroup key, condition type) -> what we last wrote
        self._last_conditions: dict[str, tuple[str | None, list]] = {}  # PodGroup key -> (base RV, conditions)
        self._failed_writes = False
        # Bumped whenever capacity may have grown (a bound pod ends or goes, a node changes). A group that did not
        # fit is not retried until the epoch or its own pods change: nothing could make it fit meanwhile.
        self._capacity_epoch = 0
        self._unfit: dict[str, tuple[int, int, int]] = {}
        informers = (nodes, pods, pod_groups) + ((priority_classes,) if priority_classes is not None else ())
        self.loop = Loop("scheduler", self.sync, stop, resync=3.0, min_interval=0.05, wait_for=informers)
        pod_groups.add_handler(self._note_arrival)
        pods.add_handler(self._note_pod_capacity)
        nodes.add_handler(self._note_node_change)
        for informer in informers:
            informer.add_handler(self.loop.poke)

    def _note_arrival(self, event_type: str, _old: dict | None, new: dict | None) -> None:
        if new is not None:
            self._arrival.setdefault(object_key(new), len(self._arrival))
        elif _old is not None:
            self._arrival.pop(object_key(_old), None)
            for written in [k for k in self._written if isinstance(k, tuple) and k[0] == object_key(_old)]:
                self._written.pop(written, None)
            self._last_conditions.pop(object_key(_old), None)
            self._unfit.pop(object_key(_old), None)
            self.events.forget(meta(_old).get("uid", ""))

    def _note_pod_capacity(self, _event: str, old: dict | None, new: dict | None) -> None:
        if new is None and old is not None:
            self._written.pop(object_key(old), None)
            self.events.forget(meta(old).get("uid", ""))
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

    def _priority(self, spec: dict) -> int:
        """Return the priority of a pod or PodGroup spec. Raises KeyError for an unknown PriorityClass."""
        return resolve_priority(spec, self._classes)

    def _group_priority(self, group: dict, group_pods: list[dict]) -> int:
        """Return the gang's priority. Raises ValueError when it cannot be told (unknown class, mixed members)."""
        spec = group.get("spec") or {}
        try:
            if spec.get("priority") is not None or spec.get("priorityClassName"):
                return self._priority(spec)
            priorities = {self._priority(p.get("spec") or {}) for p in group_pods}
        except KeyError as error:
            raise ValueError(f"no PriorityClass with name {error.args[0]} was found") from None
        if len(priorities) > 1:
            raise ValueError(f"the member pods have different priorities {sorted(priorities)}; a gang is scheduled "
                             f"with one priority")
        return priorities.pop() if priorities else self._priority({})

    def sync(self) -> bool:
        """Run one scheduling pass over every pending PodGroup and ungrouped pod; True when a write failed."""
        self._failed_writes = False
        if self.priority_classes is not None:
            self._classes = {meta(c)["name"]: c for c in self.priority_classes.items()}
        nodes = self.nodes.items()
        node_labels = {meta(n)["name"]: meta(n).get("labels") or {} for n in nodes}
        pods = [p for p in self._effective_pods() if not meta(p).get("deletionTimestamp")]
        live = [p for p in pods if not is_terminal(p)]
        bound = [p for p in live if (p.get("spec") or {}).get("nodeName")]
        free = free_resources(nodes, bound)
        members: dict[tuple[str, str], list[dict]] = {}
        ungrouped: list[dict] = []
        holders: list[Holder] = []
        for pod in live:
            if ((pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
                continue
            group_name = pod_group_name(pod)
            if group_name:
                members.setdefault((meta(pod).get("namespace"), group_name), []).append(pod)
            elif not (pod.get("spec") or {}).get("nodeName"):
                ungrouped.append(pod)
            else:
                try:
                    priority = self._priority(pod.get("spec") or {})
                except KeyError:
                    continue
                holders.append(Holder(f"pod:{object_key(pod)}", priority, self._fifo_key(pod), (pod,)))

        queue = []
        for group in self.pod_groups.items():
            if meta(group).get("deletionTimestamp"):
                continue
            group_pods = members.get((meta(group).get("namespace"), meta(group)["name"]), [])
            try:
                priority, error = self._group_priority(group, group_pods), None
            except ValueError as problem:
                priority, error = 0, str(problem)
            on_nodes = tuple(p for p in group_pods if (p.get("spec") or {}).get("nodeName"))
            if on_nodes and error is None:
                holders.append(Holder(f"podgroup:{object_key(group)}", priority, self._fifo_key(group), on_nodes))
            queue.append((-priority, self._fifo_key(group), group, group_pods, error))
        for _priority, _fifo, group, group_pods, error in sorted(queue, key=lambda item: (item[0], item[1])):
            if error is not None:
                self._scheduler_error(group, group_pods, error)
                continue
            try:
                self._schedule_group(group, group_pods, nodes, node_labels, free, -_priority, holders)
            except ValueError as problem:  # malformed policy, constraints or quantities: cannot be evaluated
                self._scheduler_error(group, group_pods, str(problem))
        for pod in sorted(ungrouped, key=lambda p: (-self._safe_priority(p), self._fifo_key(p))):
            try:
                attempt = try_place([pod], nodes, [], None, free=free)
            except ValueError as problem:
                self._mark_unschedulable(pod, f"cannot evaluate the pod: {problem}", reason="SchedulerError")
                continue
            if attempt.fits:
                self._bind_all([pod], attempt, free)
            else:
                self._mark_unschedulable(pod, attempt.message)
        return self._failed_writes

    def _safe_priority(self, pod: dict) -> int:
        try:
            return self._priority(pod.get("spec") or {})
        except KeyError:
            return 0

    def _scheduler_error(self, group: dict, group_pods: list[dict], problem: str) -> None:
        message = f"cannot evaluate PodGroup {meta(group).get('namespace')}/{meta(group)['name']}: {problem}"
        self._set_condition(group, False, "SchedulerError", message)
        self.events.record(group, WARNING, "FailedScheduling", message)

    def _admitted(self, group: dict, any_bound: bool) -> bool:
        """Return True when the gang has been admitted and not since evicted whole by preemption."""
        if not condition_is_true(group, self.flavour.scheduled_condition):
            return False
        return any_bound or not condition_is_true(group, DISRUPTION_TARGET)

    def _schedule_group(self, group: dict, group_pods: list[dict], nodes: list[dict],
                        node_labels: dict[str, dict], free: dict, priority: int = 0,
                        holders: list[Holder] | None = None) -> None:
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
        admitted = self._admitted(group, bool(bound_nodes))

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
                self.events.record(group, NORMAL, "Scheduled", f"Successfully assigned {len(pending)} pods of "
                                                               f"{group_key}: {attempt.message}")
                return
            message = attempt.message
            victims = self._preemption_victims(group, pending, nodes, key, domain, free, priority, holders or [])
            # DefaultPreemption's PostFilter result follows the FitError, as kube-scheduler writes it.
            if victims:
                self._preempt(group, priority, victims)
                message += " preemption: preempting lower-priority " + ", ".join(v.key for v in victims) + "."
            else:
                message += f" preemption: {no_victims_message(len(nodes))}"
                self._unfit[group_key] = state
            self._unschedulable(group, pending, message)
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
                self._mark_unschedulable(pod, attempt.message)
        if last_failure is not None:
            placed = sum(1 for p in pending if object_key(p) in self.assumed)
            if not self._failed_writes:  # a failed bind must be retried, not remembered as "does not fit"
                self._unfit[group_key] = (self._capacity_epoch, len(group_pods), len(pending) - placed)
            if not admitted:
                self._set_condition(group, False, "Unschedulable", last_failure.message)
                self.events.record(group, WARNING, "FailedScheduling", last_failure.message)

    def _unschedulable(self, group: dict, pending: list[dict], message: str) -> None:
        """Report a gang that does not fit: the group's condition (never True -> False), Events, pod conditions."""
        self._set_condition(group, False, "Unschedulable", message)
        self.events.record(group, WARNING, "FailedScheduling", message)
        for pod in pending:
            self._mark_unschedulable(pod, message)

    # -- preemption -----------------------------------------------------------------------------------------------

    def _preemption_victims(self, group: dict, pending: list[dict], nodes: list[dict], key: str | None,
                            domain: str | None, free: dict, priority: int, holders: list[Holder]) -> list[Holder]:
        """Return the whole gangs (and lone pods) to evict so the gang fits, or [] (none, or not allowed)."""
        spec = group.get("spec") or {}
        policy = spec.get("preemptionPolicy") or (self._classes.get(spec.get("priorityClassName") or "") or {}).get(
            "preemptionPolicy")
        if policy == "Never":
            return []
        own = f"podgroup:{object_key(group)}"

        def fits(after: dict) -> bool:
            return try_place(pending, nodes, [], key, domain=domain, free=after).fits

        return choose_victims(priority, [h for h in holders if h.key != own], free, fits) or []

    def _preempt(self, preemptor: dict, priority: int, victims: list[Holder]) -> None:
        """Evict every victim whole: DisruptionTarget on its PodGroup and pods, Events, then delete its pods."""
        who = f"PodGroup {object_key(preemptor)} (priority {priority})"
        by_key = {f"podgroup:{object_key(g)}": g for g in self.pod_groups.items()}
        for victim in victims:
            message = f"Preempted by {who}: the gang needs the capacity of this lower-priority workload"
            victim_group = by_key.get(victim.key)
            if victim_group is not None:
                self._set_condition(victim_group, True, PREEMPTION_REASON, message, condition_type=DISRUPTION_TARGET)
                self.events.record(victim_group, WARNING, "Preempted", message)
            for pod in victim.pods:
                node = (pod.get("spec") or {}).get("nodeName")
                self.events.record(pod, NORMAL, "Preempted", f"Preempted by {who} on node {node}")
                conditions = with_condition(pod, DISRUPTION_TARGET, True, PREEMPTION_REASON,
                                            f"default-scheduler: preempting to accommodate a higher priority gang "
                                            f"({who})")
                path = pod_path(meta(pod)["namespace"], meta(pod)["name"])
                try:
                    if conditions is not None:
                        self.client.patch_status(path, {"status": {"conditions": conditions}})
                    self.client.delete(path)
                except (ApiError, OSError) as error:
                    self._failed_writes = True
                    log.info("evicting %s failed: %s", path, error)
        self.events.record(preemptor, NORMAL, "Preempting", f"{who} preempts " + ", ".join(v.key for v in victims))

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
            self.events.record(pod, NORMAL, "Scheduled", f"Successfully assigned {namespace}/{name} to {node_name}")
        except (ApiError, OSError) as error:
            # Deleted meanwhile (NotFound), already bound (Conflict) or a server error: forget the assumption,
            # the next pass (soon) re-evaluates from the informer's view.
            self.assumed.pop(object_key(pod), None)
            self._failed_writes = True
            log.info("bind %s/%s -> %s failed: %s", namespace, name, node_name, error)

    def _mark_unschedulable(self, pod: dict, message: str, *, reason: str = "Unschedulable") -> None:
        """Set PodScheduled=False on a pending pod and record FailedScheduling, as kube-scheduler does."""
        key = object_key(pod)
        if self._written.get(key) == (meta(pod).get("resourceVersion"), False, reason, message):
            return
        conditions = with_condition(pod, "PodScheduled", False, reason, message)
        if conditions is None:
            return
        self._written[key] = (meta(pod).get("resourceVersion"), False, reason, message)
        self.events.record(pod, WARNING, "FailedScheduling", message)
        try:
            self.client.patch_status(pod_path(meta(pod)["namespace"], meta(pod)["name"]),
                                     {"status": {"conditions": conditions}})
        except (ApiError, OSError) as error:
            self._written.pop(key, None)
            log.info("pod %s status update failed: %s", key, error)

    def _set_condition(self, group: dict, status: bool, reason: str, message: str, *,
                       condition_type: str | None = None) -> None:
        """Write one PodGroup condition (default: the scheduled condition, which never goes from True to False)."""
        condition_type = condition_type or self.flavour.scheduled_condition
        key = object_key(group)
        version = meta(group).get("resourceVersion")
        if self._written.get((key, condition_type)) == (version, status, reason, message):
            return  # already written; the informer has not caught up yet
        last = self._last_conditions.get(key)
        if last is not None and last[0] == version:  # our previous write is not in the cache yet: build on it
            group = {**group, "status": {**(group.get("status") or {}), "conditions": last[1]}}
        if not status and condition_type == self.flavour.scheduled_condition and condition_is_true(
                group, condition_type):
            return  # PodGroupInitiallyScheduled is terminal once True
        conditions = with_condition(group, condition_type, status, reason, message)
        if conditions is None:
            return  # identical condition: no write, no resourceVersion churn
        self._written[(key, condition_type)] = (version, status, reason, message)
        self._last_conditions[key] = (version, conditions)
        path = self.flavour.collection("podgroups", meta(group)["namespace"]) + "/" + meta(group)["name"]
        try:
            self.client.patch_status(path, {"status": {"conditions": conditions}})
        except (ApiError, OSError) as error:
            self._written.pop((key, condition_type), None)
            self._last_conditions.pop(key, None)
            self._failed_writes = True
            log.info("podgroup %s status update failed: %s", path, error)
