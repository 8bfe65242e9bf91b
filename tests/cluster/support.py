"""Helpers for cluster watcher tests: a recording handler, a running hub, objects, polling."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from contextlib import contextmanager

from trainer_portal import kube
from trainer_portal.cluster import informers


class Recorder:
    """A handler that records every call, for asserting what the hub delivered."""

    def __init__(self, name: str, kinds: tuple, *, needs_leader: bool = False) -> None:
        self.name = name
        self.kinds = kinds
        self.needs_leader = needs_leader
        self.calls: list[tuple] = []
        self.flushes: list[bool] = []
        self.gained = 0
        self.lock = threading.Lock()

    def relisted(self, kind, items, resource_version):
        with self.lock:
            self.calls.append(("relisted", kind.plural, sorted(i["metadata"]["name"] for i in items)))

    def changed(self, kind, event_type, obj):
        with self.lock:
            self.calls.append((event_type, kind.plural, obj["metadata"]["name"]))

    def flush(self, *, leader):
        with self.lock:
            self.flushes.append(leader)

    def leadership_gained(self):
        with self.lock:
            self.gained += 1

    def status(self):
        with self.lock:
            return {"calls": len(self.calls)}

    def events(self) -> list[tuple]:
        with self.lock:
            return list(self.calls)


@contextmanager
def running(hub: informers.InformerHub):
    """Run ``hub`` in a thread; stop it and check it ended on the way out."""
    thread = threading.Thread(target=hub.run, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        hub.stop.set()
        thread.join(10)
        assert not thread.is_alive(), "the hub did not stop"


def wait_until(predicate, timeout: float = 15.0):
    """Poll ``predicate`` until truthy and return its value; raise AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def create_pod(gateway, name: str) -> None:
    gateway.create(kube.CORE_POD, body=pod(name))


def sandbox_faults(cluster) -> list[dict]:
    """Return the sandbox's fault rules as stored now (their remaining counts)."""
    with urllib.request.urlopen(cluster.url + "/sandbox/faults", timeout=10) as response:
        return json.loads(response.read())["faults"]
