"""§1 watch: resume without gap or duplicate, event types, selector entry/exit, 410 Expired, timeoutSeconds,
bookmarks, sendInitialEvents with the initial-events-end bookmark."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest
from kubernetes import client as k8s
from kubernetes import watch

from tests.sandbox.api_support import TRAINER, pod, trainjob


def _stream(url: str, path: str, max_events: int, timeout: float = 10.0) -> list[dict]:
    """Returns up to max_events decoded watch events read from a raw HTTP stream."""
    events = []
    with urllib.request.urlopen(url + path, timeout=timeout) as response:
        for line in response:
            if line.strip():
                events.append(json.loads(line))
            if len(events) >= max_events:
                break
    return events


def _collect(core, rv, count, **kwargs):
    out = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5, **kwargs):
        out.append((event["type"], event["object"].metadata.name))
        if len(out) >= count:
            w.stop()
    return out


def test_a_watch_from_a_list_resource_version_has_no_gap_or_duplicate(core):
    core.create_namespaced_pod("default", pod("before"))
    listed = core.list_namespaced_pod("default")
    result: list = []
    worker = threading.Thread(target=lambda: result.extend(_collect(core, listed.metadata.resource_version, 3)))
    worker.start()
    time.sleep(0.3)
    core.create_namespaced_pod("default", pod("after"))
    core.patch_namespaced_pod("before", "default", {"metadata": {"labels": {"x": "1"}}})
    core.delete_namespaced_pod("after", "default")
    worker.join(10)
    assert result == [("ADDED", "after"), ("MODIFIED", "before"), ("DELETED", "after")]


def test_a_watch_resumes_from_an_older_resource_version(core):
    start = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod("one"))
    core.create_namespaced_pod("default", pod("two"))
    assert _collect(core, start, 2) == [("ADDED", "one"), ("ADDED", "two")]


def test_a_watch_without_resource_version_starts_with_the_current_state(core):
    core.create_namespaced_pod("default", pod("existing"))
    assert _collect(core, None, 1) == [("ADDED", "existing")]


def test_objects_entering_and_leaving_a_selector_are_added_and_deleted(core):
    core.create_namespaced_pod("default", pod("mover", {"team": "a"}))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    result: list = []
    worker = threading.Thread(target=lambda: result.extend(_collect(core, rv, 3, label_selector="team=b")))
    worker.start()
    time.sleep(0.3)
    core.patch_namespaced_pod("mover", "default", {"metadata": {"labels": {"team": "b"}}})
    core.patch_namespaced_pod("mover", "default", {"metadata": {"labels": {"extra": "1"}}})
    core.patch_namespaced_pod("mover", "default", {"metadata": {"labels": {"team": "a"}}})
    worker.join(10)
    assert result == [("ADDED", "mover"), ("MODIFIED", "mover"), ("DELETED", "mover")]


def test_a_compacted_resource_version_gets_an_expired_error_event(cluster, core):
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod("x"))
    cluster.compact()
    events = _stream(cluster.url, f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}", 1)
    assert events[0]["type"] == "ERROR"
    assert (events[0]["object"]["code"], events[0]["object"]["reason"]) == (410, "Expired")
    with pytest.raises(k8s.ApiException) as err:
        _collect(core, rv, 1)
    assert err.value.status == 410


def test_server_side_timeout_ends_the_stream(cluster):
    # The client socket timeout (10 s) is far above timeoutSeconds: only a server-side end returns normally.
    events = _stream(cluster.url, "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1", 100, timeout=10)
    assert events == []


def test_bookmarks_carry_the_current_resource_version(cluster, core):
    core.create_namespaced_pod("default", pod("b"))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    events = _stream(cluster.url, f"/api/v1/namespaces/default/pods?watch=1&allowWatchBookmarks=true"
                                  f"&resourceVersion={rv}&timeoutSeconds=3", 1)
    assert events[0]["type"] == "BOOKMARK"
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) >= int(rv)


def test_send_initial_events_ends_with_the_annotated_bookmark(cluster, custom):
    custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", trainjob("j1"))
    custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", trainjob("j2"))
    events = _stream(cluster.url, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs?watch=1"
                                  "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                                  "&allowWatchBookmarks=true&timeoutSeconds=3", 3)
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in events[:2]] == [("ADDED", "j1"),
                                                                                      ("ADDED", "j2")]
    assert events[2]["type"] == "BOOKMARK"
    assert events[2]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_send_initial_events_requires_not_older_than(cluster):
    from tests.sandbox.api_support import raw

    code, status = raw(cluster.url, "GET", "/api/v1/pods?watch=1&sendInitialEvents=true")
    assert code == 422 and status["reason"] == "Invalid"


def test_ten_concurrent_watchers_each_see_every_event(core):
    rv = core.list_namespaced_pod("default").metadata.resource_version
    results: list[list] = [[] for _ in range(10)]
    workers = [threading.Thread(target=lambda r=r: r.extend(_collect(core, rv, 5))) for r in results]
    for w in workers:
        w.start()
    time.sleep(0.5)
    for i in range(5):
        core.create_namespaced_pod("default", pod(f"p{i}"))
    for w in workers:
        w.join(10)
    assert all(r == [("ADDED", f"p{i}") for i in range(5)] for r in results)


def test_a_watch_whose_client_disconnects_is_released(cluster):
    import http.client
    from urllib.parse import urlsplit

    def threads() -> int:
        with open(f"/proc/{cluster.pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("Threads:"))

    parts = urlsplit(cluster.url)
    conns = []
    for _ in range(3):
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
        conn.request("GET", "/api/v1/namespaces/default/pods?watch=1&resourceVersion=1")
        conn.getresponse()
        conns.append(conn)
    opened = threads()
    for conn in conns:
        conn.close()
    assert cluster.wait_until(lambda: threads() <= opened - 3, timeout=10)


def test_concurrent_writers_produce_a_gapless_ordered_stream(cluster, core):
    """Replaying the watch stream on top of the list must give exactly the final list."""
    for i in range(4):
        core.create_namespaced_pod("default", pod(f"c{i}"))
    listed = core.list_namespaced_pod("default")
    state = {p.metadata.name: p.metadata.resource_version for p in listed.items}
    stop_at = {}

    def writer(i: int) -> None:
        for n in range(25):
            core.patch_namespaced_pod(f"c{i}", "default", {"metadata": {"labels": {"n": str(n)}}})
        core.create_namespaced_pod("default", pod(f"new{i}"))
        core.delete_namespaced_pod(f"c{i}", "default")

    writers = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    final = core.list_namespaced_pod("default")
    stop_at["rv"] = int(final.metadata.resource_version)
    seen_rvs = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, "default", resource_version=listed.metadata.resource_version,
                          timeout_seconds=5):
        obj = event["object"]
        rv = int(obj.metadata.resource_version)
        seen_rvs.append(rv)
        if event["type"] == "DELETED":
            state.pop(obj.metadata.name, None)
        else:
            state[obj.metadata.name] = obj.metadata.resource_version
        if rv >= stop_at["rv"]:
            w.stop()
    assert seen_rvs == sorted(set(seen_rvs))
    assert len(seen_rvs) == 4 * 27
    assert state == {p.metadata.name: p.metadata.resource_version for p in final.items}
