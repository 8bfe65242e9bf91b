"""List-then-watch against the sandbox: resume after a cut stream, relist after 410, bounded backoff."""

from __future__ import annotations

import threading
import time

import pytest

from trainer_portal import kube


def node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"rack": "r1"}}}


class Collector:
    """Runs a Watcher in a thread and records what it yields."""

    def __init__(self, watcher: kube.Watcher) -> None:
        self.watcher = watcher
        self.updates: list = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for update in self.watcher:
            self.updates.append(update)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.watcher.stop.set()
        self.thread.join(10)

    def names(self) -> list[tuple[str, str]]:
        out = []
        for update in self.updates:
            if isinstance(update, kube.Relist):
                out.append(("RELIST", ",".join(sorted(obj["metadata"]["name"] for obj in update.items))))
            else:
                out.append((update.type, update.object["metadata"]["name"]))
        return out

    def wait_for(self, predicate, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self.names()):
            if time.monotonic() > deadline:
                raise AssertionError(f"not reached; got {self.names()} stats={self.watcher.stats}")
            time.sleep(0.02)


def _watcher(gateway, **kwargs) -> kube.Watcher:
    return kube.Watcher(gateway, kube.CORE_NODE, timeout_seconds=kwargs.pop("timeout_seconds", 30),
                        backoff_initial=0.05, backoff_max=0.2, **kwargs)


def test_it_lists_then_streams_events(gateway):
    gateway.create(kube.CORE_NODE, body=node("n0"))
    with Collector(_watcher(gateway)) as collector:
        collector.wait_for(lambda names: names[:1] == [("RELIST", "n0")])
        gateway.create(kube.CORE_NODE, body=node("n1"))
        gateway.delete(kube.CORE_NODE, name="n0")
        collector.wait_for(lambda names: len(names) >= 3)
    assert collector.names() == [("RELIST", "n0"), ("ADDED", "n1"), ("DELETED", "n0")]


def test_it_resumes_after_a_cut_stream_without_losing_or_repeating_events(gateway, cluster):
    cluster.inject_fault(method="GET", path="/api/v1/nodes", action="cut-watch", after_events=1, count=3)
    with Collector(_watcher(gateway)) as collector:
        collector.wait_for(lambda names: names[:1] == [("RELIST", "")])
        for index in range(6):
            gateway.create(kube.CORE_NODE, body=node(f"n{index}"))
        collector.wait_for(lambda names: len(names) >= 7)
        time.sleep(0.2)
    assert collector.names() == [("RELIST", ""), *[("ADDED", f"n{i}") for i in range(6)]]
    assert collector.watcher.stats.relists == 1
    assert collector.watcher.stats.reconnects >= 1


def test_it_relists_when_the_resource_version_expired(gateway, cluster):
    with Collector(_watcher(gateway, timeout_seconds=1)) as collector:
        collector.wait_for(lambda names: len(names) >= 1)
        # The next watch request (the stream ends every second) answers 410: the watcher must list again.
        cluster.inject_fault(method="GET", path="/api/v1/nodes", action="status", status=410, count=1)
        collector.wait_for(lambda names: len(names) >= 2)
        gateway.create(kube.CORE_NODE, body=node("late"))
        collector.wait_for(lambda names: ("ADDED", "late") in names)
    assert collector.names()[:2] == [("RELIST", ""), ("RELIST", "")]
    assert collector.watcher.stats.expired == 1


def test_a_compacted_resource_version_is_reported_as_expired(gateway, cluster):
    start = gateway.list(kube.CORE_NODE).resource_version
    for index in range(3):
        gateway.create(kube.CORE_NODE, body=node(f"c{index}"))
    cluster.compact()
    with pytest.raises(kube.KubeExpired):
        list(gateway.watch(kube.CORE_NODE, resource_version=start, timeout_seconds=2))


def test_it_backs_off_and_recovers_from_unavailable_watches(gateway, cluster):
    cluster.inject_fault(method="GET", path="/api/v1/nodes", action="status", status=503, count=3)
    with Collector(_watcher(gateway)) as collector:
        collector.wait_for(lambda names: names[:1] == [("RELIST", "")])
        gateway.create(kube.CORE_NODE, body=node("after"))
        collector.wait_for(lambda names: ("ADDED", "after") in names)
    assert collector.watcher.stats.errors >= 1
    assert "injected" in collector.watcher.stats.last_error


def test_it_counts_bookmarks_and_keeps_their_resource_version(gateway):
    with Collector(_watcher(gateway)) as collector:
        collector.wait_for(lambda names: len(names) >= 1)
        deadline = time.monotonic() + 5
        while collector.watcher.stats.bookmarks == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert collector.watcher.stats.bookmarks >= 1
    assert collector.watcher.stats.resource_version


@pytest.mark.parametrize("failures", [1, 2, 5, 10, 50])
def test_backoff_is_bounded_and_jittered(failures):
    low = kube.backoff_delay(failures, initial=0.5, maximum=30, rng=lambda: 0.0)
    high = kube.backoff_delay(failures, initial=0.5, maximum=30, rng=lambda: 1.0)
    ceiling = min(30, 0.5 * 2 ** (failures - 1))
    assert (low, high) == (ceiling / 2, ceiling)


def test_a_resource_version_that_goes_backwards_or_changes_form_means_a_new_store():
    from trainer_portal.kube.watch import went_backwards

    assert went_backwards("12", "5000")
    assert not went_backwards("5001", "5000") and not went_backwards("5000", "5000")
    assert went_backwards("abc", "5000") and went_backwards("12", "opaque")
    assert not went_backwards("", "5000") and not went_backwards("12", "")
