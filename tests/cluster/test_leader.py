"""Leader election over a coordination.k8s.io/v1 Lease on the sandbox: one leader among candidates, failover when
the holder stops renewing, immediate handover on a clean stop, standalone mode where Leases are forbidden."""

from __future__ import annotations

import threading

from trainer_portal import kube
from trainer_portal.cluster import informers, leader
from trainer_portal.kube import resources

from .support import Recorder, running, wait_until

LEASE = "test-cluster-watch"
DURATION = 2  # seconds: short, so failover is quick; the production default is 15


def elector(gateway, identity: str) -> leader.LeaseElector:
    return leader.LeaseElector(gateway=gateway, namespace="default", name=LEASE, identity=identity,
                               lease_duration=DURATION, renew_interval=0.3, retry_interval=0.2)


def lease(gateway) -> dict:
    return gateway.get(resources.COORDINATION_LEASE, name=LEASE, namespace="default")


def test_two_candidates_elect_exactly_one_leader_and_the_other_takes_over_when_it_dies(cluster, gateway):
    first, second = elector(gateway, "first"), elector(gateway, "second")
    stops = {"first": threading.Event(), "second": threading.Event()}
    threads = [threading.Thread(target=e.run, args=(stops[e.identity],), daemon=True) for e in (first, second)]
    for thread in threads:
        thread.start()
    try:
        holder = wait_until(lambda: lease(gateway) and lease(gateway)["spec"].get("holderIdentity"))
        current, other = (first, second) if holder == "first" else (second, first)
        wait_until(lambda: current.is_leader)
        for _ in range(20):  # over several renewals, never two leaders
            assert [first.is_leader, second.is_leader].count(True) == 1
            threading.Event().wait(0.1)
        spec = lease(gateway)["spec"]
        assert spec["leaseDurationSeconds"] == DURATION and spec["renewTime"].endswith("Z")

        stops[current.identity].set()  # the holder dies: no release, it just stops renewing
        wait_until(lambda: other.is_leader, timeout=DURATION * 3)
        assert lease(gateway)["spec"]["holderIdentity"] == other.identity
        assert lease(gateway)["spec"]["leaseTransitions"] >= 1
        assert not current.is_leader  # it cannot renew, so it knows it lost the lease after its duration
    finally:
        for stop in stops.values():
            stop.set()
        for thread in threads:
            thread.join(5)


def test_two_hubs_flush_leader_handlers_only_in_the_leader_and_hand_over_on_stop(cluster, gateway):
    tracked = {name: Recorder("tracking", (kube.POD,), needs_leader=True) for name in ("a", "b")}
    everywhere = {name: Recorder("topology-like", (kube.NODE,)) for name in ("a", "b")}
    hubs = {name: informers.InformerHub(gateway=gateway, elector=elector(gateway, name), timeout_seconds=1,
                                        factories=[lambda n=name: tracked[n], lambda n=name: everywhere[n]])
            for name in ("a", "b")}
    with running(hubs["a"]), running(hubs["b"]) as hub_b:
        holder = wait_until(lambda: [n for n, h in hubs.items() if h.leader])
        assert len(holder) == 1
        leading, waiting = holder[0], "b" if holder[0] == "a" else "a"
        wait_until(lambda: tracked[leading].flushes and everywhere[waiting].flushes)
        assert tracked[waiting].flushes == [] and set(everywhere[waiting].flushes) == {False}
        assert tracked[leading].gained == 1 and set(tracked[leading].flushes) == {True}

        hubs[leading].stop.set()  # a clean stop releases the Lease: the other one takes over at once
        wait_until(lambda: hubs[waiting].leader, timeout=DURATION * 3)
        wait_until(lambda: tracked[waiting].flushes)
        assert tracked[waiting].gained == 1
        assert hub_b.stats()["leader"] is (waiting == "b")


def test_where_leases_are_not_served_the_watcher_runs_standalone(cluster, gateway):
    unserved = kube.ResourceKind("coordination.example.com", "Lease", "leases", True, ("v1",))
    alone = leader.LeaseElector(gateway=gateway, namespace="default", name=LEASE, identity="alone",
                                lease_kind=unserved)
    assert alone.step() is True and alone.is_leader
    assert alone.status()["mode"] == "standalone" and "does not serve Lease" in alone.status()["reason"]
    alone.release()
    assert lease(gateway) is None  # nothing was written


def test_candidates_racing_for_a_released_lease_yield_one_leader_by_compare_and_set(cluster, gateway):
    previous = elector(gateway, "previous")
    assert previous.step() is True
    previous.release()
    assert lease(gateway)["spec"]["holderIdentity"] == ""
    candidates = [elector(gateway, f"c{index}") for index in range(4)]
    barrier = threading.Barrier(len(candidates))

    def race(candidate):
        barrier.wait()
        candidate.step()

    threads = [threading.Thread(target=race, args=(c,)) for c in candidates]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    leaders = [c.identity for c in candidates if c.is_leader]
    assert len(leaders) == 1 and lease(gateway)["spec"]["holderIdentity"] == leaders[0]


def test_a_holder_that_cannot_renew_stops_leading_at_its_renew_deadline_before_anyone_may_take_over(cluster, gateway):
    holder = leader.LeaseElector(gateway=gateway, namespace="default", name=f"{LEASE}-deadline", identity="holder",
                                 lease_duration=3, renew_interval=0.2, retry_interval=0.2, renew_deadline=1.5)
    assert holder.step() and holder.is_leader
    assert holder.renew_deadline == 1.5 < holder.lease_duration
    # Every renewal now fails (the API server answers 503): no cached flag keeps it leading past the deadline.
    cluster.inject_fault(method="*", path=f"/leases/{LEASE}-deadline$", action="status", status=503, count=1000)
    stop = threading.Event()
    thread = threading.Thread(target=holder.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_until(lambda: not holder.is_leader, timeout=5)
    finally:
        stop.set()
        thread.join(5)
        cluster.clear_faults()
    lease_spec = lease_named(gateway, f"{LEASE}-deadline")["spec"]
    assert lease_spec["holderIdentity"] == "holder"  # the Lease still names it: a candidate must still wait


def lease_named(gateway, name: str) -> dict:
    return gateway.get(resources.COORDINATION_LEASE, name=name, namespace="default")


def test_lease_names_carry_the_cluster():
    assert leader.lease_name_for("trainer-portal-cluster-watch", "gpu-west") == "trainer-portal-cluster-watch-gpu-west"
    assert len(leader.lease_name_for("x" * 250, "gpu-west")) <= 253
