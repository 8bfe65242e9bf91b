"""The simulated cluster's controllers, talking to the sandbox API server over HTTP with list+watch.

`start_controllers(api_url, kube_version=..., stop=...)` starts, as daemon threads: shared informers (nodes, pods,
PodGroups, TrainJobs, ClusterTrainingRuntimes, TrainingRuntimes, PriorityClasses), the Trainer TrainJob
controller, the gang scheduler, the PodGroup protection controller, the kubelet simulation and, when enabled, a
simulated Kueue and the demo workload generator. It returns at once; everything stops when `stop` is set. A
controller error is logged and retried with backoff, never raised to the caller.

Modules: `client` (JSON HTTP + watch), `informer` (caches + loops), `fit` (pure placement core, `try_place`),
`scheduler`, `trainer` (+ `expansion`, `podspec`), `protection`, `kubelet`, `kueue` (+ `kueue_quota`), `generator`,
`common`, `resources`.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field

log = logging.getLogger("sandbox.controllers")

__all__ = ["Controllers", "start_controllers"]


@dataclass
class Controllers:
    """Handles on the running controllers (tests use them to wait for informer sync)."""

    informers: dict = field(default_factory=dict)
    scheduler: object | None = None
    trainer: object | None = None
    kubelet: object | None = None
    node_leases: object | None = None
    protection: object | None = None
    kueue: object | None = None
    generator: object | None = None

    def wait_synced(self, timeout: float = 10.0) -> bool:
        """Return True once every informer has listed its collection (False on timeout)."""
        return all(informer.synced.wait(timeout) for informer in self.informers.values())


def _enabled(flag: bool | None, variable: str) -> bool:
    if flag is not None:
        return flag
    return os.environ.get(variable, "").strip().lower() in ("1", "true", "yes", "on")


def start_controllers(api_url: str, *, kube_version: str = "1.37", stop: threading.Event,
                      generator: bool | None = None, pod_start_delay: float | None = None,
                      kueue: bool | None = None) -> Controllers:
    """Start every simulated controller against the API server at `api_url` and return at once.

    `kube_version`: "1.36" uses scheduling.k8s.io/v1alpha2 and `PodGroupScheduled`; anything else v1beta1 and
    `PodGroupInitiallyScheduled`. `generator`: run the demo workload generator (default: env SANDBOX_GENERATOR=1).
    `pod_start_delay`: seconds from binding to Running (default 0.5, env SANDBOX_POD_START_DELAY).
    `kueue`: run the simulated Kueue (default: env SANDBOX_KUEUE=1; quick-start queues per namespace from
    SANDBOX_KUEUE_GPU_QUOTA, e.g. "team-a=64,team-b=32", in cohort SANDBOX_KUEUE_COHORT when set).
    Returns the `Controllers` handles. Raises ValueError when `api_url` is not an http:// URL.
    """
    from sandbox.controllers.client import Client
    from sandbox.controllers.common import TRAINER_GROUP_VERSION, flavour_for
    from sandbox.controllers.generator import Generator
    from sandbox.controllers.informer import Informer
    from sandbox.controllers.kubelet import Kubelet, NodeLeases
    from sandbox.controllers.kueue import Kueue, parse_quotas
    from sandbox.controllers.protection import PodGroupProtection
    from sandbox.controllers.scheduler import GangScheduler
    from sandbox.controllers.trainer import TrainerController

    Client(api_url)  # validates the URL early
    kueue_on = _enabled(kueue, "SANDBOX_KUEUE")
    flavour = flavour_for(kube_version)
    if pod_start_delay is None:
        pod_start_delay = float(os.environ.get("SANDBOX_POD_START_DELAY") or 0.5)
    trainer_base = f"/apis/{TRAINER_GROUP_VERSION}"
    informers = {
        "nodes": Informer(api_url, "/api/v1/nodes", stop),
        "pods": Informer(api_url, "/api/v1/pods", stop),
        "podgroups": Informer(api_url, flavour.collection("podgroups"), stop),
        "trainjobs": Informer(api_url, f"{trainer_base}/trainjobs", stop),
        "clustertrainingruntimes": Informer(api_url, f"{trainer_base}/clustertrainingruntimes", stop),
        "trainingruntimes": Informer(api_url, f"{trainer_base}/trainingruntimes", stop),
        "priorityclasses": Informer(api_url, "/apis/scheduling.k8s.io/v1/priorityclasses", stop),
    }
    handles = Controllers(informers=informers)
    handles.scheduler = GangScheduler(api_url, flavour, stop, nodes=informers["nodes"], pods=informers["pods"],
                                      pod_groups=informers["podgroups"], priority_classes=informers["priorityclasses"])
    handles.trainer = TrainerController(api_url, flavour, stop, trainjobs=informers["trainjobs"],
                                        cluster_runtimes=informers["clustertrainingruntimes"],
                                        runtimes=informers["trainingruntimes"], pods=informers["pods"],
                                        kueue=kueue_on)
    handles.protection = PodGroupProtection(api_url, flavour, stop, pods=informers["pods"],
                                            pod_groups=informers["podgroups"])
    handles.kubelet = Kubelet(api_url, stop, pods=informers["pods"], trainjobs=informers["trainjobs"],
                              start_delay=pod_start_delay, nodes=informers["nodes"])
    handles.node_leases = NodeLeases(api_url, stop, informers["nodes"])
    if kueue_on:
        quotas, default_quota = parse_quotas(os.environ.get("SANDBOX_KUEUE_GPU_QUOTA", ""))
        handles.kueue = Kueue(api_url, stop, trainjobs=informers["trainjobs"],
                              cluster_runtimes=informers["clustertrainingruntimes"],
                              runtimes=informers["trainingruntimes"], quotas=quotas, default_quota=default_quota,
                              cohort=os.environ.get("SANDBOX_KUEUE_COHORT", "").strip())
    if _enabled(generator, "SANDBOX_GENERATOR"):
        handles.generator = Generator(api_url, stop, trainjobs=informers["trainjobs"],
                                      cluster_runtimes=informers["clustertrainingruntimes"], nodes=informers["nodes"])
    # Handlers are registered above, before any informer thread delivers its first list.
    for informer in informers.values():
        informer.start()
    for controller in (handles.scheduler, handles.trainer, handles.protection, handles.kubelet, handles.node_leases,
                       handles.kueue, handles.generator):
        if controller is not None:
            controller.start()
    log.info("sandbox controllers started against %s (Kubernetes %s, generator %s)", api_url, kube_version,
             "on" if handles.generator else "off")
    return handles
