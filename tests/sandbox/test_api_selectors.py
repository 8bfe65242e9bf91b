"""§1 label selectors (=, !=, in, notin, exists, !exists) and field selectors; list pagination."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from tests.sandbox.api_support import pod, raw

PODS = {
    "a": {"app": "web", "tier": "front"},
    "b": {"app": "web", "tier": "back"},
    "c": {"app": "db"},
    "d": {},
}


@pytest.fixture
def labelled(core):
    for name, labels in PODS.items():
        core.create_namespaced_pod("default", pod(name, labels))
    return core


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("app in (web, db)", ["a", "b", "c"]),
        ("app notin (web)", ["c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("app=web,tier=back", ["b"]),
        ("app in (web),!tier", []),
    ],
)
def test_label_selectors(labelled, selector, expected):
    items = labelled.list_namespaced_pod("default", label_selector=selector).items
    assert [p.metadata.name for p in items] == expected


def test_field_selectors_on_node_name_phase_name_and_namespace(labelled):
    labelled.patch_namespaced_pod("a", "default", {"spec": {"nodeName": "node-1"}})
    labelled.patch_namespaced_pod_status("b", "default", {"status": {"phase": "Running"}})
    by_node = labelled.list_pod_for_all_namespaces(field_selector="spec.nodeName=node-1").items
    assert [p.metadata.name for p in by_node] == ["a"]
    unbound = labelled.list_namespaced_pod("default", field_selector="spec.nodeName=").items
    assert [p.metadata.name for p in unbound] == ["b", "c", "d"]
    running = labelled.list_namespaced_pod("default", field_selector="status.phase!=Pending").items
    assert [p.metadata.name for p in running] == ["b"]
    named = labelled.list_pod_for_all_namespaces(field_selector="metadata.name=c,metadata.namespace=default").items
    assert [p.metadata.name for p in named] == ["c"]


@pytest.mark.parametrize(
    ("param", "value"),
    [("fieldSelector", "spec.bogus=1"), ("labelSelector", "a in b"), ("labelSelector", "!!x")],
)
def test_bad_selectors_are_bad_requests(cluster, param, value):
    code, status = raw(cluster.url, "GET", f"/api/v1/pods?{param}={value.replace(' ', '%20')}")
    assert code == 400 and status["reason"] == "BadRequest"


def test_list_pagination_with_limit_and_continue(labelled):
    first = labelled.list_namespaced_pod("default", limit=3)
    assert [p.metadata.name for p in first.items] == ["a", "b", "c"]
    assert first.metadata.remaining_item_count == 1
    rest = labelled.list_namespaced_pod("default", limit=3, _continue=first.metadata._continue)
    assert [p.metadata.name for p in rest.items] == ["d"]
    assert rest.metadata._continue is None


def test_a_continue_token_older_than_compaction_is_expired(cluster, labelled):
    first = labelled.list_namespaced_pod("default", limit=1)
    labelled.create_namespaced_pod("default", pod("e"))
    cluster.compact()
    with pytest.raises(k8s.ApiException) as err:
        labelled.list_namespaced_pod("default", limit=1, _continue=first.metadata._continue)
    assert err.value.status == 410
