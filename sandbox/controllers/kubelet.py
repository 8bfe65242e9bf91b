"""The simulated kubelet: runs bound pods through Pending -> Running -> Succeeded/Failed.

- A pod bound to a node (spec.nodeName) becomes Running (Ready, startTime, containerStatuses) after `start_delay`.
- It Succeeds `duration-seconds` after it started, Fails `fail-after-seconds` after it started (failure wins when
  it is the earlier one). Both come from the pod's annotations `sandbox.trainer-portal.io/duration-seconds` /
  `…/fail-after-seconds`, falling back to the owning TrainJob's; without either a pod runs until deleted. Setting
  the annotation on the TrainJob later re-plans its pods (a running job can be told to finish).
- A pod with deletionTimestamp set is removed for good (grace period 0), as a kubelet confirms termination.
- What a container prints (`kubectl logs`) follows from the container states written here: the API server derives
  it with `sandbox.container_logs` (training steps with a decreasing loss and the pod's rank; `Completed` last).
- Node heartbeats (`NodeLeases`): each node's kubelet holds the Lease `kube-node-lease/<node>` (holder = node name,
  40 s duration, owner = the Node) and renews it every 10 s, spreading the writes so that a large cluster costs at
  most ~50 writes/s (its leases are then renewed less often). A node whose Ready condition is not True keeps a
  Lease that is never renewed, as a dead kubelet's.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import heapq
import logging
import threading
import time

from sandbox.controllers.client import ApiError, Client
from sandbox.controllers.common import (
    DURATION_ANNOTATION,
    FAIL_AFTER_ANNOTATION,
    is_terminal,
    meta,
    now,
    owner_uid,
    parse_time,
    pod_path,
)
from sandbox.controllers.informer import Informer, object_key

log = logging.getLogger("sandbox.controllers.kubelet")
NODE_LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
LEASE_RENEW_SECONDS = 10.0
MAX_LEASE_WRITES_PER_SECOND = 50.0


def _seconds(value: object) -> float | None:
    """Return a non-negative number of seconds from an annotation value, or None when missing/invalid."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


def pod_ip(pod: dict) -> str:
    """Return a stable pod IP in 10.64.0.0/10 derived from the pod's UID (what the CNI plugin would assign)."""
    number = int(_digest(meta(pod).get("uid") or meta(pod).get("name"))[:8], 16) % (1 << 22)
    return f"10.{64 + (number >> 16)}.{(number >> 8) & 255}.{max(number & 255, 1)}"


def image_id(image: str) -> str:
    """Return the imageID a container runtime reports: the repository pinned to a (simulated) digest."""
    repository = image.split("@", 1)[0]
    if ":" in repository.rsplit("/", 1)[-1]:
        repository = repository.rsplit(":", 1)[0]
    if "/" not in repository:
        repository = f"docker.io/library/{repository}"
    return f"{repository}@sha256:{_digest('image', image)}"


def _container_status(pod: dict, container: dict, state: dict, *, ready: bool, started: bool) -> dict:
    image = container.get("image") or "busybox"
    return {"name": container.get("name", "main"), "image": image, "imageID": image_id(image),
            "containerID": f"containerd://{_digest(meta(pod).get('uid'), container.get('name'))}",
            "ready": ready, "restartCount": 0, "started": started, "state": state, "lastState": {}}


def running_status(pod: dict, started: str, host_ip: str = "10.0.0.1") -> dict:
    """Return the status of a Running, Ready pod that started at `started` on a node of address `host_ip`.

    Every field a real kubelet always sets is set (containerID, imageID, IPs, ...), so typed clients can read it.
    """
    spec = pod.get("spec") or {}
    conditions = [
        {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": started}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    running = {"running": {"startedAt": started}}
    containers = [_container_status(pod, c, running, ready=True, started=True) for c in spec.get("containers") or []]
    status = {"phase": "Running", "conditions": conditions, "startTime": started, "hostIP": host_ip,
              "hostIPs": [{"ip": host_ip}], "podIP": pod_ip(pod), "podIPs": [{"ip": pod_ip(pod)}],
              "containerStatuses": containers,
              "qosClass": (pod.get("status") or {}).get("qosClass") or "BestEffort"}
    init = spec.get("initContainers") or []
    if init:
        done = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": started,
                               "containerID": ""}}
        status["initContainerStatuses"] = []
        for container in init:
            entry = _container_status(pod, container, done, ready=True, started=False)
            entry["state"]["terminated"]["containerID"] = entry["containerID"]
            status["initContainerStatuses"].append(entry)
    return status


def finished_status(pod: dict, succeeded: bool) -> dict:
    """Return the status of a pod whose containers exited 0 (Succeeded) or 1 (Failed)."""
    status = dict(pod.get("status") or {})
    finished = now()
    started = status.get("startTime") or finished
    reason = "Completed" if succeeded else "Error"
    status["phase"] = "Succeeded" if succeeded else "Failed"
    status["conditions"] = [
        {**c, "status": "False", "lastTransitionTime": finished, "reason": "PodCompleted"}
        if c.get("type") in ("Ready", "ContainersReady", "PodReadyToStartContainers") else c
        for c in status.get("conditions") or []
    ]
    status["containerStatuses"] = [
        {**c, "ready": False, "started": False, "state": {"terminated": {
            "exitCode": 0 if succeeded else 1, "reason": reason, "startedAt": started, "finishedAt": finished,
            "containerID": c.get("containerID", "")}}}
        for c in status.get("containerStatuses") or []
    ]
    if not succeeded:
        status["message"] = "sandbox failure injection (sandbox.trainer-portal.io/fail-after-seconds)"
    return status


def _micro_now() -> str:
    """Return the current time as metav1.MicroTime (RFC 3339 with microseconds)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _node_ready(node: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


class NodeLeases:
    """The kubelets' heartbeats: one Lease per node in kube-node-lease, renewed while the node is Ready."""

    def __init__(self, api_url: str, stop: threading.Event, nodes: Informer):
        self.client = Client(api_url, user_agent="sandbox-kubelet")
        self.stop = stop
        self.nodes = nodes
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the renewal thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="controller-node-leases", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self.nodes.synced.wait(0.5):
            if self.stop.is_set():
                return
        while not self.stop.is_set():
            nodes = sorted(self.nodes.items(), key=lambda n: meta(n).get("name", ""))
            period = max(LEASE_RENEW_SECONDS, len(nodes) / MAX_LEASE_WRITES_PER_SECOND)
            pause = period / max(len(nodes), 1)
            started = time.monotonic()
            for node in nodes:
                if self.stop.is_set():
                    return
                try:
                    self.heartbeat(node)
                except (ApiError, OSError) as error:
                    log.info("node lease of %s not renewed: %s", meta(node).get("name"), error)
                self.stop.wait(pause)
            self.stop.wait(max(0.0, period - (time.monotonic() - started)))

    def heartbeat(self, node: dict) -> None:
        """Create the node's Lease if missing; renew it when the node is Ready."""
        name = meta(node).get("name")
        path = f"/apis/coordination.k8s.io/v1/namespaces/{NODE_LEASE_NAMESPACE}/leases/{name}"
        ready = _node_ready(node)
        try:
            if ready:
                self.client.merge_patch(path, {"spec": {"renewTime": _micro_now()}})
            else:
                self.client.get(path)
            return
        except ApiError as error:
            if error.status != 404:
                raise
        heartbeat = next((c.get("lastHeartbeatTime") for c in (node.get("status") or {}).get("conditions") or []
                          if c.get("type") == "Ready"), None)
        stale = (heartbeat or "2026-01-01T00:00:00Z").replace("Z", ".000000Z")
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": name, "namespace": NODE_LEASE_NAMESPACE,
                              "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                                   "uid": meta(node).get("uid")}]},
                 "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                          "renewTime": _micro_now() if ready else stale}}
        try:
            self.client.create(path.rsplit("/", 1)[0], lease)
        except ApiError as error:
            if error.status != 409:
                raise


class Kubelet:
    """One simulated kubelet for every node: a timer heap fed by pod events."""

    def __init__(self, api_url: str, stop: threading.Event, *, pods: Informer, trainjobs: Informer | None,
                 start_delay: float = 0.5, nodes: Informer | None = None):
        self.client = Client(api_url, user_agent="sandbox-kubelet")
        self.stop = stop
        self.pods = pods
        self.trainjobs = trainjobs
        self.nodes = nodes
        self.start_delay = start_delay
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._timers: list[tuple[float, str, str]] = []  # (due, pod key, action)
        self._planned: dict[str, tuple[str, float]] = {}  # pod key -> (action, due)
        self._thread: threading.Thread | None = None
        pods.add_handler(self._on_pod)
        if trainjobs is not None:
            trainjobs.add_handler(self._on_trainjob)

    def start(self) -> None:
        """Start the timer thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="controller-kubelet", daemon=True)
            self._thread.start()

    # -- planning -------------------------------------------------------------------------------------------------

    def _annotation(self, pod: dict, name: str) -> float | None:
        value = _seconds((meta(pod).get("annotations") or {}).get(name))
        if value is not None or self.trainjobs is None:
            return value
        uid = owner_uid(pod, "TrainJob")
        if uid is None:
            return None
        for job in self.trainjobs.items():
            if meta(job).get("uid") == uid:
                return _seconds((meta(job).get("annotations") or {}).get(name))
        return None

    def _plan(self, pod: dict) -> tuple[str, float] | None:
        """Return the next (action, due time) for `pod`, or None when nothing is due."""
        if meta(pod).get("deletionTimestamp"):
            return "finalize", time.time()
        if is_terminal(pod) or not (pod.get("spec") or {}).get("nodeName"):
            return None
        status = pod.get("status") or {}
        if status.get("phase") != "Running":
            return "start", time.time() + self.start_delay
        started = parse_time(status.get("startTime")) or time.time()
        duration = self._annotation(pod, DURATION_ANNOTATION)
        fail_after = self._annotation(pod, FAIL_AFTER_ANNOTATION)
        if fail_after is not None and (duration is None or fail_after < duration):
            return "fail", started + fail_after
        if duration is not None:
            return "succeed", started + duration
        return None

    def _on_pod(self, _event: str, _old: dict | None, new: dict | None) -> None:
        if new is None:
            return
        plan = self._plan(new)
        if plan is None:
            return
        key = object_key(new)
        with self._lock:
            if self._planned.get(key) == plan:
                return
            self._planned[key] = plan
            heapq.heappush(self._timers, (plan[1], key, plan[0]))
        self._wake.set()

    def _on_trainjob(self, _event: str, old: dict | None, new: dict | None) -> None:
        """Re-plan the TrainJob's pods when its run-time annotations change (e.g. set after the pods started)."""
        if new is None:
            return
        keys = (DURATION_ANNOTATION, FAIL_AFTER_ANNOTATION)
        before = {k: (meta(old or {}).get("annotations") or {}).get(k) for k in keys}
        after = {k: (meta(new).get("annotations") or {}).get(k) for k in keys}
        if before == after and old is not None:
            return
        uid = meta(new).get("uid")
        for pod in self.pods.items():
            if owner_uid(pod, "TrainJob") == uid:
                self._on_pod("MODIFIED", None, pod)

    # -- acting ---------------------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self.pods.synced.wait(0.5):
            if self.stop.is_set():
                return
        for pod in self.pods.items():  # pods bound before we started
            self._on_pod("ADDED", None, pod)
        while not self.stop.is_set():
            with self._lock:
                due = self._timers[0][0] if self._timers else None
            timeout = 1.0 if due is None else max(0.0, min(1.0, due - time.time()))
            if timeout > 0:
                self._wake.wait(timeout)
                self._wake.clear()
            self._fire_due()

    def _fire_due(self) -> None:
        while True:
            with self._lock:
                if not self._timers or self._timers[0][0] > time.time():
                    return
                _due, key, action = heapq.heappop(self._timers)
                if self._planned.get(key, (None,))[0] != action:
                    continue  # superseded by a newer plan
                self._planned.pop(key, None)
            pod = self.pods.get(key)
            if pod is None:
                continue
            current = self._plan(pod)
            if current is None or current[0] != action:
                continue
            try:
                self._act(pod, action)
            except (ApiError, OSError) as error:
                if isinstance(error, ApiError) and error.status == 404:
                    continue  # the pod is gone: nothing left to do
                log.info("kubelet %s %s failed: %s (retrying)", action, key, error)
                self._retry(key, action)
            except Exception:
                log.exception("kubelet %s %s crashed (retrying)", action, key)
                self._retry(key, action)

    def _host_ip(self, node_name: str | None) -> str:
        """Return the node's InternalIP (falling back to a stable address derived from its name)."""
        node = self.nodes.get(node_name or "") if self.nodes is not None else None
        for address in ((node or {}).get("status") or {}).get("addresses") or []:
            if address.get("type") == "InternalIP":
                return address["address"]
        number = int(_digest("node", node_name)[:6], 16)
        return f"10.0.{(number >> 8) & 255}.{max(number & 255, 1)}"

    def _retry(self, key: str, action: str, delay: float = 0.5) -> None:
        """Plan `action` again shortly: a stale cache (Conflict) or a server error is usually gone by then."""
        with self._lock:
            if key in self._planned:
                return  # a newer event already planned something
            due = time.time() + delay
            self._planned[key] = (action, due)
            heapq.heappush(self._timers, (due, key, action))

    def _act(self, pod: dict, action: str) -> None:
        path = pod_path(meta(pod)["namespace"], meta(pod)["name"])
        if action == "finalize":
            try:
                self.client.request("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1",
                                                     "gracePeriodSeconds": 0})
            except ApiError as error:
                if error.status != 404:
                    raise
            return
        if action == "start":
            status = running_status(pod, now(), self._host_ip((pod.get("spec") or {}).get("nodeName")))
        else:
            status = finished_status(pod, succeeded=action == "succeed")
        self.client.update_status(path, {**pod, "status": status})
