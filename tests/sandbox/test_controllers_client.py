"""The controllers' JSON HTTP client against a running sandbox (API only): verbs, errors, watch resume and relist."""

from __future__ import annotations

import threading

import pytest

from sandbox.controllers.client import ApiError, Client, Expired
from sandbox.controllers.informer import Informer

PODS = "/api/v1/namespaces/default/pods"


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}


def test_it_creates_reads_updates_and_deletes(cluster):
    client = Client(cluster.url)
    created = client.create(PODS, _pod("a"))
    assert client.get(f"{PODS}/a")["metadata"]["uid"] == created["metadata"]["uid"]
    assert [p["metadata"]["name"] for p in client.list(PODS, labelSelector="app=x")["items"]] == ["a"]
    patched = client.merge_patch(f"{PODS}/a", {"metadata": {"labels": {"team": "t"}}})
    assert patched["metadata"]["labels"] == {"app": "x", "team": "t"}
    status = client.patch_status(f"{PODS}/a", {"status": {"phase": "Running"}})
    assert status["status"]["phase"] == "Running"
    replaced = client.update_status(f"{PODS}/a", {**status, "status": {**status["status"], "phase": "Succeeded"}})
    assert replaced["status"]["phase"] == "Succeeded"
    client.delete(f"{PODS}/a")
    with pytest.raises(ApiError) as missing:
        client.get(f"{PODS}/a")
    assert (missing.value.status, missing.value.reason) == (404, "NotFound")


def test_it_raises_conflicts_with_the_status_reason(cluster):
    client = Client(cluster.url)
    first = client.create(PODS, _pod("b"))
    with pytest.raises(ApiError) as exists:
        client.create(PODS, _pod("b"))
    assert exists.value.reason == "AlreadyExists"
    client.merge_patch(f"{PODS}/b", {"metadata": {"labels": {"v": "2"}}})
    with pytest.raises(ApiError) as stale:
        client.replace(f"{PODS}/b", first)
    assert (stale.value.status, stale.value.reason) == (409, "Conflict")


def test_it_retries_once_over_a_dropped_keep_alive_connection(cluster):
    client = Client(cluster.url)
    client.list(PODS)
    cluster.inject_fault(method="GET", path=f"^{PODS}$", action="drop", count=1)
    assert client.list(PODS)["items"] == []


def test_it_rejects_a_non_http_url():
    with pytest.raises(ValueError, match="http://HOST:PORT"):
        Client("https://example.com")


def _collect(client: Client, rv: str | None, stop: threading.Event, sink: list, until) -> None:
    for event in client.watch(PODS, rv, timeout_seconds=5, stop=stop):
        sink.append(event)
        if until(sink):
            stop.set()


def test_it_watches_across_cut_streams_without_gaps_or_duplicates(cluster):
    client = Client(cluster.url)
    rv = client.list(PODS)["metadata"]["resourceVersion"]
    cluster.inject_fault(method="GET", path=f"^{PODS}$", action="cut-watch", after_events=1, count=2)
    stop, events = threading.Event(), []
    thread = threading.Thread(target=_collect, args=(Client(cluster.url), rv, stop, events,
                                                     lambda e: len(e) >= 4), daemon=True)
    thread.start()
    for name in ("w1", "w2", "w3", "w4"):
        client.create(PODS, _pod(name))
    thread.join(20)
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", f"w{i}") for i in range(1, 5)]
    assert cluster._call("GET", "/sandbox/faults")["faults"] == []


def test_it_relists_when_its_resource_version_has_expired(cluster):
    client = Client(cluster.url)
    rv = client.list(PODS)["metadata"]["resourceVersion"]
    client.create(PODS, _pod("old"))
    cluster.compact()
    with pytest.raises(Expired):
        list(client._stream(PODS, rv, 5))
    stop, events = threading.Event(), []
    _collect(client, rv, stop, events, lambda e: True)
    kind, listed = events[0]
    assert kind == "RELISTED" and [p["metadata"]["name"] for p in listed["items"]] == ["old"]


def test_an_informer_turns_a_relist_into_added_and_deleted_events(cluster):
    client = Client(cluster.url)
    client.create(PODS, _pod("stays"))
    client.create(PODS, _pod("goes"))
    stop = threading.Event()
    informer = Informer(cluster.url, PODS, stop, watch_timeout=5)
    seen: list[tuple[str, str]] = []
    informer.add_handler(lambda kind, old, new: seen.append((kind, (new or old)["metadata"]["name"])))
    informer.start()
    try:
        assert informer.synced.wait(10)
        assert sorted(seen) == [("ADDED", "goes"), ("ADDED", "stays")]
        seen.clear()
        cluster.reset()  # ends the watch and compacts: the informer must relist and notice both deletions
        cluster.wait_until(lambda: informer.items() == [], timeout=10)
        assert sorted(seen) == [("DELETED", "goes"), ("DELETED", "stays")]
    finally:
        stop.set()
