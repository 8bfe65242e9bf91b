"""§1 patches: JSON merge, JSON patch, strategic merge for built-in kinds (conditions by type, containers by
name) and 415 UnsupportedMediaType for strategic merge on custom resources."""

from __future__ import annotations

import pytest

from tests.sandbox.api_support import TRAINER, pod, raw, trainjob

BASE = "/api/v1/namespaces/default/pods"


@pytest.fixture
def two_containers(core):
    body = pod("sm")
    body["spec"]["containers"] = [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]
    core.create_namespaced_pod("default", body)
    core.patch_namespaced_pod_status("sm", "default", {"status": {"conditions": [
        {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]}})
    return core


def test_merge_patch_replaces_lists_and_deletes_with_null(cluster, two_containers):
    code, body = raw(cluster.url, "PATCH", f"{BASE}/sm", {"metadata": {"labels": {"x": "1"}}},
                     "application/merge-patch+json")
    assert code == 200 and body["metadata"]["labels"] == {"x": "1"}
    code, body = raw(cluster.url, "PATCH", f"{BASE}/sm", {"metadata": {"labels": {"x": None}}},
                     "application/merge-patch+json")
    assert body["metadata"].get("labels", {}) == {}


def test_json_patch_operations_and_failed_test(cluster, two_containers):
    ops = [{"op": "add", "path": "/metadata/labels", "value": {"k": "v"}},
           {"op": "replace", "path": "/spec/containers/1/image", "value": "b:2"},
           {"op": "test", "path": "/spec/containers/0/name", "value": "a"}]
    code, body = raw(cluster.url, "PATCH", f"{BASE}/sm", ops, "application/json-patch+json")
    assert code == 200
    assert body["metadata"]["labels"] == {"k": "v"} and body["spec"]["containers"][1]["image"] == "b:2"
    code, status = raw(cluster.url, "PATCH", f"{BASE}/sm", [{"op": "test", "path": "/spec/nodeName", "value": "x"}],
                       "application/json-patch+json")
    assert code == 422 and status["reason"] == "Invalid"


def test_strategic_merge_merges_containers_by_name(cluster, two_containers):
    code, body = raw(cluster.url, "PATCH", f"{BASE}/sm", {"spec": {"containers": [{"name": "b", "image": "b:3"}]}},
                     "application/strategic-merge-patch+json")
    assert code == 200
    assert [(c["name"], c["image"]) for c in body["spec"]["containers"]] == [("a", "a:1"), ("b", "b:3")]


def test_strategic_merge_merges_conditions_by_type(cluster, two_containers):
    code, body = raw(cluster.url, "PATCH", f"{BASE}/sm/status",
                     {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                     "application/strategic-merge-patch+json")
    assert code == 200
    assert [(c["type"], c["status"]) for c in body["status"]["conditions"]] == [("PodScheduled", "True"),
                                                                                ("Ready", "True")]


def test_strategic_merge_delete_directive(cluster, two_containers):
    _code, body = raw(cluster.url, "PATCH", f"{BASE}/sm/status",
                     {"status": {"conditions": [{"type": "Ready", "$patch": "delete"}]}},
                     "application/strategic-merge-patch+json")
    assert [c["type"] for c in body["status"]["conditions"]] == ["PodScheduled"]


def test_strategic_merge_on_a_custom_resource_is_unsupported_media_type(cluster, custom):
    custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", trainjob("smp"))
    code, status = raw(cluster.url, "PATCH", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/smp",
                       {"spec": {"suspend": True}}, "application/strategic-merge-patch+json")
    assert code == 415 and status["reason"] == "UnsupportedMediaType"


def test_a_patch_carrying_a_stale_resource_version_conflicts(cluster, core):
    created = core.create_namespaced_pod("default", pod("rv"))
    core.patch_namespaced_pod("rv", "default", {"metadata": {"labels": {"a": "1"}}})
    code, status = raw(cluster.url, "PATCH", f"{BASE}/rv",
                       {"metadata": {"resourceVersion": created.metadata.resource_version, "labels": {"a": "2"}}},
                       "application/merge-patch+json")
    assert code == 409 and status["reason"] == "Conflict"


def test_unknown_patch_type_is_unsupported_media_type(cluster, core):
    core.create_namespaced_pod("default", pod("u"))
    code, _status = raw(cluster.url, "PATCH", f"{BASE}/u", {"metadata": {}}, "text/plain")
    assert code == 415


def test_json_patch_move_copy_and_the_errors_kube_apiserver_gives(cluster, two_containers):
    ops = [{"op": "add", "path": "/metadata/labels", "value": {"a": "1"}},
           {"op": "copy", "from": "/metadata/labels/a", "path": "/metadata/labels/b"},
           {"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/c"},
           {"op": "add", "path": "/spec/tolerations", "value": []},
           {"op": "add", "path": "/spec/tolerations/-", "value": {"key": "k", "operator": "Exists"}},
           {"op": "add", "path": "/metadata/annotations", "value": {"a~b/c": "escaped"}},
           {"op": "remove", "path": "/metadata/annotations/a~0b~1c"}]
    code, body = raw(cluster.url, "PATCH", f"{BASE}/sm", ops, "application/json-patch+json")
    assert code == 200, body
    assert body["metadata"]["labels"] == {"b": "1", "c": "1"}
    assert body["spec"]["tolerations"] == [{"key": "k", "operator": "Exists"}]
    assert body["metadata"].get("annotations", {}) == {}
    code, status = raw(cluster.url, "PATCH", f"{BASE}/sm", [{"op": "remove", "path": "/metadata/nothing"}],
                       "application/json-patch+json")
    assert code == 422 and "doc is missing path: '/metadata/nothing'" in status["message"]
    code, status = raw(cluster.url, "PATCH", f"{BASE}/sm", [{"op": "frobnicate", "path": "/x"}],
                       "application/json-patch+json")
    assert code == 400 and "Unexpected kind: frobnicate" in status["message"]
