"""The informer hub against the sandbox: one watch per kind whatever the number of handlers, relists on 410 reach
every handler, kinds the cluster does not serve are skipped, reported and picked up once served."""

from __future__ import annotations

from trainer_portal import kube
from trainer_portal.cluster import informers
from trainer_portal.kube import resources

from .support import Recorder, create_pod, running, sandbox_faults, wait_until

WATCH_COUNTER = 1000  # a cut-watch rule that never cuts (after a million events) counts the pod watch requests


def test_two_handlers_on_pods_share_one_watch_and_see_the_same_events_in_order(cluster, gateway):
    cluster.inject_fault(method="GET", path="^/api/v1/pods$", action="cut-watch", after_events=10**6,
                         count=WATCH_COUNTER)
    first, second = Recorder("first", (kube.POD,)), Recorder("second", (kube.POD,))
    create_pod(gateway, "before")
    hub = informers.InformerHub(gateway=gateway, factories=[lambda: first, lambda: second], timeout_seconds=300)
    with running(hub):
        wait_until(lambda: first.events() and first.events()[0][0] == "relisted")
        for name in ("a", "b", "c"):
            create_pod(gateway, name)
        gateway.delete(kube.CORE_POD, name="a", namespace="default")
        wait_until(lambda: ("DELETED", "pods", "a") in second.events() and ("DELETED", "pods", "a") in first.events())
        stats = hub.stats()

    assert first.events() == second.events()
    assert first.events()[0] == ("relisted", "pods", ["before"])
    assert [e for e in first.events() if e[0] == "ADDED"] == [("ADDED", "pods", n) for n in ("a", "b", "c")]
    assert stats["watches"] == 1 and list(stats["kinds"]) == ["pods"]
    (rule,) = [f for f in sandbox_faults(cluster) if f["action"] == "cut-watch"]
    assert WATCH_COUNTER - rule["count"] == 1  # the sandbox saw exactly one pod watch request


def test_a_410_reaches_every_handler_as_a_fresh_relist(cluster, gateway):
    first, second = Recorder("first", (kube.POD,)), Recorder("second", (kube.POD, kube.NODE))
    hub = informers.InformerHub(gateway=gateway, factories=[lambda: first, lambda: second], timeout_seconds=1,
                                backoff_max=0.2)
    with running(hub):
        wait_until(lambda: ("relisted", "pods", []) in first.events())
        cluster.compact()
        cluster.inject_fault(method="GET", path="^/api/v1/pods$", action="status", status=410, count=1)
        create_pod(gateway, "after-expiry")
        wait_until(lambda: hub.watchers[kube.POD].stats.expired >= 1
                   and ("relisted", "pods", ["after-expiry"]) in first.events())
        wait_until(lambda: ("relisted", "pods", ["after-expiry"]) in second.events())

    relists = [e for e in first.events() if e[0] == "relisted"]
    assert relists[0] == ("relisted", "pods", []) and relists[-1] == ("relisted", "pods", ["after-expiry"])
    assert ("relisted", "nodes", []) in second.events() and not any(e[1] == "nodes" for e in first.events())


def test_kinds_the_cluster_does_not_serve_are_skipped_reported_and_picked_up_once_served(cluster, gateway):
    tracker = Recorder("admission", (resources.JOBSET, resources.KUEUE_WORKLOAD, kube.POD))
    hub = informers.InformerHub(gateway=gateway, factories=[lambda: tracker], timeout_seconds=1, recheck_seconds=0.2)
    with running(hub):
        wait_until(lambda: ("relisted", "pods", []) in tracker.events())
        unserved = hub.stats()["unserved"]
        assert set(unserved) == {"jobsets.jobset.x-k8s.io", "workloads.kueue.x-k8s.io"}
        assert "does not serve JobSet" in unserved["jobsets.jobset.x-k8s.io"]

        gateway.create(gateway.resolve(kube.CRD), body=jobset_crd())
        wait_until(lambda: ("relisted", "jobsets", []) in tracker.events())
        stats = hub.stats()

    assert list(stats["unserved"]) == ["workloads.kueue.x-k8s.io"]
    assert stats["watches"] == 2 and stats["kinds"]["jobsets.jobset.x-k8s.io"]["resource"].startswith(
        "jobset.x-k8s.io/v1alpha2")


def test_a_failing_handler_is_counted_and_does_not_starve_the_others(cluster, gateway):
    class Broken(Recorder):
        def changed(self, kind, event_type, obj):
            raise ValueError("boom")

    broken, healthy = Broken("broken", (kube.POD,)), Recorder("healthy", (kube.POD,))
    hub = informers.InformerHub(gateway=gateway, factories=[lambda: broken, lambda: healthy], timeout_seconds=1)
    with running(hub):
        wait_until(lambda: healthy.events())
        create_pod(gateway, "x")
        wait_until(lambda: ("ADDED", "pods", "x") in healthy.events())
        stats = hub.stats()
    assert stats["handlers"]["broken"]["errors"] >= 1 and stats["handlers"]["healthy"]["errors"] == 0


def test_register_is_idempotent_per_handler_name():
    class Probe:
        name = "probe-handler"
        kinds = (kube.POD,)
        needs_leader = False

    before = len(informers.registered())
    informers.register(Probe)
    informers.register(Probe)
    try:
        assert len(informers.registered()) == before + 1
        assert "topology" in {getattr(f, "name", "") for f in informers.registered()}  # the cluster app's own
    finally:
        informers.unregister("probe-handler")


def jobset_crd() -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "jobsets.jobset.x-k8s.io"},
        "spec": {
            "group": "jobset.x-k8s.io",
            "scope": "Namespaced",
            "names": {"plural": "jobsets", "singular": "jobset", "kind": "JobSet", "listKind": "JobSetList"},
            "versions": [{"name": "v1alpha2", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object",
                                                         "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    }


class ClusterRecorder(Recorder):
    """A handler that takes the hub's cluster, as per-cluster handlers do."""

    def __init__(self, name: str, kinds: tuple, *, cluster=None) -> None:
        super().__init__(name, kinds)
        self.cluster = cluster


def test_a_hub_gives_its_cluster_to_per_cluster_handlers_and_runs_single_cluster_ones_only_for_the_default(gateway):
    from trainer_portal.cluster.models import Cluster

    west = Cluster(name="gpu-west", is_default=False)
    east = Cluster(name="gpu-east", is_default=True)

    def per_cluster(*, cluster):
        return ClusterRecorder("per-cluster", (kube.POD,), cluster=cluster)

    def single():
        return Recorder("single", (kube.POD,))

    on_west = informers.InformerHub(gateway=gateway, factories=[per_cluster, single], cluster=west)
    on_east = informers.InformerHub(gateway=gateway, factories=[per_cluster, single], cluster=east)
    assert [h.name for h in on_west.handlers] == ["per-cluster"] and on_west.handlers[0].cluster is west
    assert [h.name for h in on_east.handlers] == ["per-cluster", "single"] and on_east.handlers[0].cluster is east
    assert on_west.stats()["cluster"] == "gpu-west"


def test_a_cluster_without_a_connection_is_refused_with_the_fix():
    from trainer_portal.cluster.models import Cluster
    from trainer_portal.kube.errors import KubeNotConfigured

    try:
        informers.gateway_factory(Cluster(name="gpu-west", is_default=False))
    except KubeNotConfigured as exc:
        assert "--kubeconfig gpu-west=PATH" in exc.message
    else:
        raise AssertionError("a non-default cluster without a connection got a gateway")
