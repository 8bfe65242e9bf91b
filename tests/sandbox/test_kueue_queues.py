"""The sandbox's Kueue through the official client: ClusterQueues, LocalQueues, cohorts, priority, preemption and the
granular QuotaReserved reasons, against a demo sandbox with the controllers and Kueue on (one per module; each test
in its own namespaces and queues, as the CRDs installed by Kueue would not survive a reset)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from sandbox.testing import SandboxProcess
from tests.sandbox.controllers_support import condition, demo_runtime, is_true, simulated_cluster, trainjob

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"


@pytest.fixture(scope="module")
def kueue_sandbox() -> Iterator[SandboxProcess]:
    with simulated_cluster(SANDBOX_KUEUE="1") as process:
        yield process


class Kueue:
    """Builders and readers over the module's sandbox, names unique to one test."""

    def __init__(self, process: SandboxProcess, api: k8s.ApiClient):
        self.process = process
        self.custom = k8s.CustomObjectsApi(api)
        self.core = k8s.CoreV1Api(api)
        self.suffix = uuid.uuid4().hex[:6]

    def namespace(self, team: str) -> str:
        name = f"{team}-{self.suffix}"
        self.core.create_namespace({"metadata": {"name": name}})
        return name

    def flavor(self, name: str, node_labels: dict | None = None) -> str:
        name = f"{name}-{self.suffix}"
        self.custom.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": {"nodeLabels": node_labels or {}}})
        return name

    def cluster_queue(self, name: str, flavor: str, gpus: int, *, cohort: str | None = None, strategy: str =
                      "BestEffortFIFO", borrowing: int | None = None, lending: int | None = None,
                      preemption: dict | None = None, resources: tuple[str, ...] = ("nvidia.com/gpu", "cpu",
                                                                                     "memory")) -> str:
        name = f"{name}-{self.suffix}"
        gpu = {"name": "nvidia.com/gpu", "nominalQuota": gpus}
        if borrowing is not None:
            gpu["borrowingLimit"] = borrowing
        if lending is not None:
            gpu["lendingLimit"] = lending
        quotas = {"nvidia.com/gpu": gpu, "cpu": {"name": "cpu", "nominalQuota": 1000},
                  "memory": {"name": "memory", "nominalQuota": "100Ti"}}
        spec = {"queueingStrategy": strategy, "namespaceSelector": {},
                "resourceGroups": [{"coveredResources": list(resources),
                                    "flavors": [{"name": flavor, "resources": [quotas[r] for r in resources]}]}]}
        if cohort:
            spec["cohortName"] = f"{cohort}-{self.suffix}"
        if preemption:
            spec["preemption"] = preemption
        self.custom.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec})
        return name

    def local_queue(self, namespace: str, cluster_queue: str, name: str = "team-queue") -> str:
        self.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "localqueues", {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "LocalQueue", "metadata": {"name": name},
            "spec": {"clusterQueue": cluster_queue}})
        return name

    def priority_class(self, name: str, value: int) -> str:
        name = f"{name}-{self.suffix}"
        self.custom.create_cluster_custom_object(GROUP, VERSION, "workloadpriorityclasses", {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "WorkloadPriorityClass", "metadata": {"name": name},
            "value": value})
        return name

    def submit(self, namespace: str, name: str, nodes: int, queue: str = "team-queue", *,
               duration: float | None = None, priority: str | None = None) -> dict:
        job = trainjob(name, "torch-gang-zone", num_nodes=nodes, duration=duration, namespace=namespace)
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue,
                                     **({"kueue.x-k8s.io/priority-class": priority} if priority else {})}
        return self.custom.create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", namespace,
                                                           "trainjobs", job)

    def trainjob(self, namespace: str, name: str) -> dict:
        return self.custom.get_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", namespace, "trainjobs",
                                                        name)

    def workload(self, namespace: str, job: str) -> dict | None:
        uid = self.trainjob(namespace, job)["metadata"]["uid"]
        return next((w for w in self.custom.list_namespaced_custom_object(
            GROUP, VERSION, namespace, "workloads", label_selector=f"kueue.x-k8s.io/job-uid={uid}")["items"]), None)

    def reserved(self, namespace: str, job: str) -> dict | None:
        """Return QuotaReserved of the job's Workload once Kueue has decided (None before)."""
        return condition(self.workload(namespace, job), "QuotaReserved")

    def pods(self, namespace: str, job: str) -> list:
        return self.core.list_namespaced_pod(namespace, label_selector=f"jobset.sigs.k8s.io/jobset-name={job}").items

    def cluster_queue_status(self, name: str) -> dict:
        return self.custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", name).get("status") or {}

    def wait(self, predicate, timeout: float = 30.0):
        return self.process.wait_until(predicate, timeout=timeout, interval=0.1)


@pytest.fixture
def kueue(kueue_sandbox: SandboxProcess) -> Iterator[Kueue]:
    api = k8s_config.new_client_from_config(config_file=kueue_sandbox.kubeconfig)
    helper = Kueue(kueue_sandbox, api)
    try:
        helper.custom.create_cluster_custom_object("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes",
                                                   demo_runtime("torch_gang_zone.yaml"))  # 8 GPUs per node
    except k8s.ApiException as error:
        assert error.status == 409
    yield helper
    api.close()


def _gpu_usage(status: dict, flavor: str) -> tuple[str, str]:
    entry = next(f for f in status["flavorsUsage"] if f["name"] == flavor)
    gpu = next(r for r in entry["resources"] if r["name"] == "nvidia.com/gpu")
    return gpu["total"], gpu["borrowed"]


def test_priority_then_fifo_order_and_quota_release(kueue: Kueue):
    namespace = kueue.namespace("team-a")
    flavor = kueue.flavor("zone-a", {"topology.kubernetes.io/zone": "zone-a"})
    cq = kueue.cluster_queue("cq-research", flavor, 16)
    kueue.local_queue(namespace, cq)
    urgent = kueue.priority_class("urgent", 1000)

    kueue.submit(namespace, "runner", 2, duration=3)  # 16 GPUs: the whole queue
    kueue.wait(lambda: is_true(kueue.workload(namespace, "runner"), "Admitted"))
    kueue.submit(namespace, "first", 1)
    kueue.submit(namespace, "second", 1)
    kueue.submit(namespace, "vip", 1, priority=urgent)
    for job in ("first", "second", "vip"):
        waiting = kueue.wait(lambda job=job: kueue.reserved(namespace, job))
        assert (waiting["status"], waiting["reason"]) == ("False", "WaitingForQuota")
        assert waiting["message"] == (f"couldn't assign flavors to pod set node: insufficient unused quota for "
                                      f"nvidia.com/gpu in flavor {flavor}, 8 more needed")
        assert kueue.trainjob(namespace, job)["spec"]["suspend"] is True
        assert kueue.pods(namespace, job) == []
    status = kueue.wait(lambda: (s := kueue.cluster_queue_status(cq)).get("pendingWorkloads") == 3 and s)
    assert status["admittedWorkloads"] == 1 and status["reservingWorkloads"] == 1
    assert _gpu_usage(status, flavor) == ("16", "0")
    assert kueue.workload(namespace, "vip")["spec"]["priority"] == 1000
    assert kueue.workload(namespace, "vip")["spec"]["priorityClassRef"]["kind"] == "WorkloadPriorityClass"

    # The runner finishes: its quota frees; the higher priority goes first, then the earlier of equal priority.
    kueue.wait(lambda: is_true(kueue.workload(namespace, "vip"), "Admitted"), timeout=30)
    kueue.wait(lambda: is_true(kueue.workload(namespace, "first"), "Admitted"))
    assert is_true(kueue.workload(namespace, "runner"), "Finished")
    assert kueue.reserved(namespace, "second")["reason"] == "WaitingForQuota"
    # Admission patches the flavor's node labels into the TrainJob, and the pods land in that zone.
    patch = kueue.trainjob(namespace, "vip")["spec"]["runtimePatches"][-1]
    assert patch["manager"] == "kueue.x-k8s.io/manager"
    pod_spec = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod_spec["spec"]["nodeSelector"] == {"topology.kubernetes.io/zone": "zone-a"}
    pods = kueue.wait(lambda: (p := kueue.pods(namespace, "vip")) and all(x.spec.node_name for x in p) and p)
    assert pods[0].spec.node_selector == {"topology.kubernetes.io/zone": "zone-a"}
    assert pods[0].spec.node_name.startswith("gpu-a")
    admission = kueue.workload(namespace, "vip")["status"]["admission"]
    assert admission["clusterQueue"] == cq
    assert admission["podSetAssignments"][0]["flavors"]["nvidia.com/gpu"] == flavor
    assert admission["podSetAssignments"][0]["resourceUsage"]["nvidia.com/gpu"] == "8"
    local = kueue.wait(lambda: (lq := kueue.custom.get_namespaced_custom_object(
        GROUP, VERSION, namespace, "localqueues", "team-queue")["status"]).get("admittedWorkloads") == 2 and lq)
    assert local["pendingWorkloads"] == 1


def test_strict_fifo_head_blocks_smaller_workloads(kueue: Kueue):
    namespace = kueue.namespace("team-s")
    flavor = kueue.flavor("default")
    cq = kueue.cluster_queue("cq-strict", flavor, 16, strategy="StrictFIFO")
    kueue.local_queue(namespace, cq)
    kueue.submit(namespace, "holder", 1)  # 8 of 16
    kueue.wait(lambda: is_true(kueue.workload(namespace, "holder"), "Admitted"))
    kueue.submit(namespace, "big", 2)  # 16: waits for the holder
    kueue.wait(lambda: kueue.reserved(namespace, "big"))
    kueue.submit(namespace, "small", 1)  # 8 would fit, but StrictFIFO keeps it behind the head
    small = kueue.wait(lambda: kueue.reserved(namespace, "small"))
    assert small["reason"] == "WaitingForQuota"
    assert not is_true(kueue.workload(namespace, "small"), "Admitted")


def test_inadmissible_reasons(kueue: Kueue):
    namespace = kueue.namespace("team-x")
    flavor = kueue.flavor("only", {"topology.kubernetes.io/zone": "zone-a"})
    cq = kueue.cluster_queue("cq-small", flavor, 16)
    gpu_only = kueue.cluster_queue("cq-gpu-only", flavor, 64, resources=("nvidia.com/gpu",))
    kueue.local_queue(namespace, cq)
    kueue.local_queue(namespace, gpu_only, "gpu-only")
    kueue.submit(namespace, "huge", 3)  # 24 GPUs of a 16-GPU queue
    huge = kueue.wait(lambda: kueue.reserved(namespace, "huge"))
    assert huge["reason"] == "ExceedsMaxQuota"
    assert huge["message"] == (f"couldn't assign flavors to pod set node: insufficient quota for nvidia.com/gpu in "
                               f"flavor {flavor}, request > maximum capacity (24 > 16)")
    kueue.submit(namespace, "cpu-too", 1, "gpu-only")  # asks for cpu, which the ClusterQueue does not cover
    cpu = kueue.wait(lambda: kueue.reserved(namespace, "cpu-too"))
    assert cpu["reason"] == "NoMatchingFlavor"
    assert cpu["message"] == "couldn't assign flavors to pod set node: resource cpu unavailable in ClusterQueue"
    kueue.submit(namespace, "lost", 1, "no-such-queue")
    lost = kueue.wait(lambda: kueue.reserved(namespace, "lost"))
    assert (lost["reason"], lost["message"]) == ("Misconfigured", "LocalQueue no-such-queue doesn't exist")
    events = kueue.core.list_namespaced_event(namespace).items
    assert any(e.reason == "Pending" and "request > maximum capacity" in e.message for e in events)
    assert all(kueue.trainjob(namespace, j)["spec"]["suspend"] for j in ("huge", "cpu-too", "lost"))


def test_cohort_borrowing_lending_limit_and_reclaim(kueue: Kueue):
    team_a, team_b = kueue.namespace("team-a"), kueue.namespace("team-b")
    flavor = kueue.flavor("shared")
    cq_a = kueue.cluster_queue("cq-a", flavor, 16, cohort="research", lending=8,
                               preemption={"reclaimWithinCohort": "Any"})
    cq_b = kueue.cluster_queue("cq-b", flavor, 16, cohort="research")
    kueue.local_queue(team_a, cq_a)
    kueue.local_queue(team_b, cq_b)

    # cq-a lends only 8 of its 16 GPUs: cq-b can never hold more than 24.
    kueue.submit(team_b, "too-big", 4)
    refused = kueue.wait(lambda: kueue.reserved(team_b, "too-big"))
    assert refused["reason"] == "ExceedsMaxQuota"
    assert "request > maximum capacity (32 > 24)" in refused["message"]

    kueue.submit(team_b, "borrower", 3)  # 24 GPUs: 16 own + 8 borrowed
    kueue.wait(lambda: is_true(kueue.workload(team_b, "borrower"), "Admitted"))
    status = kueue.wait(lambda: (s := kueue.cluster_queue_status(cq_b)).get("admittedWorkloads") == 1 and s)
    assert _gpu_usage(status, flavor) == ("24", "8")
    assert status["fairSharing"]["weightedShare"] == 8 * 1000 // 24  # 8 borrowed of the 24 the cohort lends
    kueue.wait(lambda: len(kueue.pods(team_b, "borrower")) == 3)

    # team-a wants its lent quota back: the borrower is evicted and suspended, team-a's job admitted.
    kueue.submit(team_a, "owner", 2)  # 16 GPUs, its nominal quota
    kueue.wait(lambda: is_true(kueue.workload(team_a, "owner"), "Admitted"))
    evicted = kueue.workload(team_b, "borrower")
    preempted = condition(evicted, "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InCohortReclamation")
    assert preempted["message"].startswith("Preempted to accommodate a workload (UID: ")
    assert preempted["message"].endswith("due to reclamation within the cohort")
    assert is_true(evicted, "Evicted") and not is_true(evicted, "Admitted")
    assert kueue.trainjob(team_b, "borrower")["spec"]["suspend"] is True
    kueue.wait(lambda: kueue.pods(team_b, "borrower") == [])
    assert kueue.wait(lambda: kueue.reserved(team_b, "borrower")["reason"] == "WaitingForQuota")


def _pod_groups(kueue: Kueue, namespace: str) -> list[dict]:
    return kueue.custom.list_namespaced_custom_object("scheduling.k8s.io", "v1beta1", namespace, "podgroups")["items"]


def test_borrowing_limit_caps_what_a_queue_takes_from_its_cohort(kueue: Kueue):
    team = kueue.namespace("team-c")
    flavor = kueue.flavor("shared")
    cq = kueue.cluster_queue("cq-c", flavor, 8, cohort="labs", borrowing=8)
    kueue.cluster_queue("cq-idle", flavor, 32, cohort="labs")
    kueue.local_queue(team, cq)
    kueue.submit(team, "wide", 3)  # 24 GPUs: 8 own + at most 8 borrowed
    refused = kueue.wait(lambda: kueue.reserved(team, "wide"))
    assert (refused["reason"], refused["message"]) == (
        "ExceedsMaxQuota", f"couldn't assign flavors to pod set node: insufficient quota for nvidia.com/gpu in flavor "
                           f"{flavor}, request > maximum capacity (24 > 16)")
    kueue.submit(team, "fits", 2)  # 16 GPUs: 8 borrowed from the idle queue
    kueue.wait(lambda: is_true(kueue.workload(team, "fits"), "Admitted"))
    status = kueue.wait(lambda: (s := kueue.cluster_queue_status(cq)).get("admittedWorkloads") == 1 and s)
    assert _gpu_usage(status, flavor) == ("16", "8")


def test_preemption_within_the_cluster_queue(kueue: Kueue):
    namespace = kueue.namespace("team-p")
    flavor = kueue.flavor("default")
    cq = kueue.cluster_queue("cq-p", flavor, 16, preemption={"withinClusterQueue": "LowerPriority"})
    kueue.local_queue(namespace, cq)
    high = kueue.priority_class("high", 100)
    kueue.submit(namespace, "low", 2)
    kueue.wait(lambda: len(kueue.pods(namespace, "low")) == 2)
    low_uid = kueue.trainjob(namespace, "low")["metadata"]["uid"]
    assert any(o["uid"] == low_uid for g in _pod_groups(kueue, namespace) for o in g["metadata"]["ownerReferences"])
    kueue.submit(namespace, "high", 2, priority=high)
    kueue.wait(lambda: is_true(kueue.workload(namespace, "high"), "Admitted"))
    low = kueue.workload(namespace, "low")
    assert condition(low, "Preempted")["reason"] == "InClusterQueue"
    assert condition(low, "Preempted")["message"].endswith("due to prioritization in the ClusterQueue")
    assert kueue.trainjob(namespace, "low")["spec"]["suspend"] is True
    kueue.wait(lambda: len(kueue.pods(namespace, "high")) == 2 and kueue.pods(namespace, "low") == [])
    # Suspended again, the evicted job loses its scheduling objects (v2.4 lifecycle) and waits in the queue.
    kueue.wait(lambda: not any(o["uid"] == low_uid for g in _pod_groups(kueue, namespace)
                               for o in g["metadata"]["ownerReferences"]))
    assert kueue.wait(lambda: kueue.reserved(namespace, "low")["reason"] == "WaitingForQuota")
    events = kueue.core.list_namespaced_event(namespace).items
    assert any(e.reason == "Preempted" and e.involved_object.kind == "Workload" for e in events)
    assert any(e.reason == "EvictedDueToPreempted" for e in events)


def _visibility(kueue: Kueue, path: str, **query) -> dict:
    """GET a visibility-API path through the client; raises k8s.ApiException with the status on an error."""
    api = kueue.custom.api_client
    serialized = api.param_serialize("GET", f"/apis/visibility.kueue.x-k8s.io/v1beta2/{path}",
                                     query_params=list(query.items()), header_params={"Accept": "application/json"},
                                     auth_settings=["BearerToken"])
    response = api.call_api(*serialized)
    response.read()
    if response.status != 200:
        raise k8s.ApiException(status=response.status, reason=response.reason)
    return json.loads(response.data)


def test_visibility_api_orders_pending_workloads_with_positions_and_pages(kueue: Kueue):
    team_a, team_b = kueue.namespace("team-a"), kueue.namespace("team-b")
    flavor = kueue.flavor("default")
    cq = kueue.cluster_queue("cq-shared", flavor, 8)
    kueue.local_queue(team_a, cq)
    kueue.local_queue(team_b, cq)
    urgent = kueue.priority_class("urgent", 500)
    kueue.submit(team_a, "holder", 1, duration=6)
    kueue.wait(lambda: is_true(kueue.workload(team_a, "holder"), "Admitted"))
    for namespace, job in ((team_a, "a1"), (team_b, "b1"), (team_a, "a2")):
        time.sleep(1.0 - time.time() % 1.0)  # creationTimestamp has whole seconds: equal times order by name
        kueue.submit(namespace, job, 1)
        kueue.wait(lambda namespace=namespace, job=job: kueue.workload(namespace, job))
    kueue.submit(team_b, "b-urgent", 1, priority=urgent)
    kueue.wait(lambda: kueue.workload(team_b, "b-urgent"))

    summary = _visibility(kueue, f"clusterqueues/{cq}/pendingworkloads")
    assert summary["kind"] == "PendingWorkloadsSummary"
    rows = [(i["metadata"]["namespace"], i["metadata"]["ownerReferences"][0]["name"], i["priority"],
             i["positionInClusterQueue"], i["positionInLocalQueue"], i["localQueueName"]) for i in summary["items"]]
    assert rows == [(team_b, "b-urgent", 500, 0, 0, "team-queue"), (team_a, "a1", 0, 1, 0, "team-queue"),
                    (team_b, "b1", 0, 2, 1, "team-queue"), (team_a, "a2", 0, 3, 1, "team-queue")]
    page = _visibility(kueue, f"clusterqueues/{cq}/pendingworkloads", offset=1, limit=2)
    assert [i["positionInClusterQueue"] for i in page["items"]] == [1, 2]
    assert _visibility(kueue, f"clusterqueues/{cq}/pendingworkloads", offset=9)["items"] == []
    local = _visibility(kueue, f"namespaces/{team_a}/localqueues/team-queue/pendingworkloads")
    assert [(i["positionInLocalQueue"], i["positionInClusterQueue"]) for i in local["items"]] == [(0, 1), (1, 3)]
    assert {i["metadata"]["namespace"] for i in local["items"]} == {team_a}

    # The holder finishes: the urgent job is admitted and everyone moves up one place.
    kueue.wait(lambda: is_true(kueue.workload(team_b, "b-urgent"), "Admitted"), timeout=30)
    local = _visibility(kueue, f"namespaces/{team_a}/localqueues/team-queue/pendingworkloads")
    assert [(i["positionInLocalQueue"], i["positionInClusterQueue"]) for i in local["items"]] == [(0, 0), (1, 2)]

    groups = {g.name: g for g in k8s.ApisApi(kueue.custom.api_client).get_api_versions().groups}
    assert groups["visibility.kueue.x-k8s.io"].preferred_version.version == "v1beta2"
    resources = _visibility(kueue, "")["resources"]
    assert {"clusterqueues/pendingworkloads", "localqueues/pendingworkloads"} <= {r["name"] for r in resources}

    for path, query, status in ((f"clusterqueues/{cq}/pendingworkloads", {"limit": "-1"}, 400),
                                ("clusterqueues/no-such-cq/pendingworkloads", {}, 404),
                                (f"namespaces/{team_a}/localqueues/nope/pendingworkloads", {}, 404)):
        with pytest.raises(k8s.ApiException) as refused:
            _visibility(kueue, path, **query)
        assert refused.value.status == status


def test_a_deactivated_workload_gives_its_quota_back(kueue: Kueue):
    namespace = kueue.namespace("team-d")
    flavor = kueue.flavor("default")
    cq = kueue.cluster_queue("cq-d", flavor, 8)
    kueue.local_queue(namespace, cq)
    kueue.submit(namespace, "paused", 1)
    kueue.wait(lambda: len(kueue.pods(namespace, "paused")) == 1)
    kueue.submit(namespace, "next", 1)
    kueue.wait(lambda: kueue.reserved(namespace, "next"))
    name = kueue.workload(namespace, "paused")["metadata"]["name"]
    kueue.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", name,
                                                {"spec": {"active": False}})
    kueue.wait(lambda: is_true(kueue.workload(namespace, "next"), "Admitted"))
    paused = kueue.workload(namespace, "paused")
    assert condition(paused, "Evicted")["reason"] == "InactiveWorkload"
    assert not is_true(paused, "QuotaReserved") and "admission" not in paused["status"]
    assert kueue.trainjob(namespace, "paused")["spec"]["suspend"] is True
    kueue.wait(lambda: kueue.pods(namespace, "paused") == [])


def test_priority_comes_from_the_pods_priority_class_without_a_workload_priority_class(kueue: Kueue):
    namespace = kueue.namespace("team-pc")
    flavor = kueue.flavor("default")
    cq = kueue.cluster_queue("cq-pc", flavor, 8)
    kueue.local_queue(namespace, cq)
    priority_class = f"important-{kueue.suffix}"
    k8s.SchedulingV1Api(kueue.custom.api_client).create_priority_class(
        {"metadata": {"name": priority_class}, "value": 7000})
    runtime = demo_runtime("torch_gang_zone.yaml")
    runtime["metadata"]["name"] = f"torch-important-{kueue.suffix}"
    pod_spec = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod_spec["priorityClassName"] = priority_class
    kueue.custom.create_cluster_custom_object("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", runtime)
    job = trainjob("important", runtime["metadata"]["name"], num_nodes=1, namespace=namespace)
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-queue"}
    kueue.custom.create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", namespace, "trainjobs", job)
    workload = kueue.wait(lambda: kueue.workload(namespace, "important"))
    assert workload["spec"]["priority"] == 7000
    assert workload["spec"]["priorityClassRef"] == {"group": "scheduling.k8s.io", "kind": "PriorityClass",
                                                    "name": priority_class}
