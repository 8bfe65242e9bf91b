"""§1 server-side apply: 201 on create, fieldManager required (422), managedFields per manager, conflicts (409)
naming the other manager, force, pruning of fields only this manager owned, list semantics from the schema."""

from __future__ import annotations

import json

import pytest

from tests.sandbox.api_support import TRAINER, pod, raw, runtime

APPLY = "application/apply-patch+yaml"
PODS = "/api/v1/namespaces/default/pods"
CTR = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"


def apply(url, path, body, manager="alice", force=False, code=None):
    query = f"?fieldManager={manager}" + ("&force=true" if force else "") if manager else ""
    got, result = raw(url, "PATCH", path + query, json.dumps(body).encode(), APPLY)
    if code is not None:
        assert got == code, result
    return got, result


def managers(obj):
    return {m["manager"]: m for m in obj["metadata"]["managedFields"]}


def test_apply_creates_with_201_and_records_managed_fields(cluster):
    code, obj = apply(cluster.url, f"{PODS}/p", pod("p", {"app": "x"}))
    assert code == 201
    entry = managers(obj)["alice"]
    assert entry["operation"] == "Apply" and entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"]["f:metadata"]["f:labels"] == {"f:app": {}}
    assert 'k:{"name":"main"}' in entry["fieldsV1"]["f:spec"]["f:containers"]


def test_apply_accepts_yaml_bodies(cluster):
    body = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: y\nspec:\n  containers:\n  - name: c\n    image: i\n"
    code, obj = raw(cluster.url, "PATCH", f"{PODS}/y?fieldManager=yaml", body, APPLY)
    assert code == 201 and obj["spec"]["containers"][0]["image"] == "i"


def test_apply_without_field_manager_is_invalid(cluster):
    code, status = apply(cluster.url, f"{PODS}/p", pod("p"), manager="")
    assert code == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "metadata.managedFields.fieldManager"


def test_a_conflict_names_the_other_manager_and_force_takes_ownership(cluster):
    apply(cluster.url, f"{PODS}/c", pod("c", {"owner": "alice"}), "alice", code=201)
    code, status = apply(cluster.url, f"{PODS}/c", pod("c", {"owner": "bob"}), "bob")
    assert code == 409 and status["reason"] == "Conflict"
    assert 'conflict with "alice"' in status["message"] and ".metadata.labels.owner" in status["message"]
    assert status["details"]["causes"][0]["field"] == ".metadata.labels.owner"
    code, obj = apply(cluster.url, f"{PODS}/c", pod("c", {"owner": "bob"}), "bob", force=True)
    assert code == 200 and obj["metadata"]["labels"]["owner"] == "bob"
    owners = managers(obj)
    assert "f:owner" in owners["bob"]["fieldsV1"]["f:metadata"]["f:labels"]
    assert "f:owner" not in owners["alice"]["fieldsV1"].get("f:metadata", {}).get("f:labels", {})


def test_an_update_by_another_client_conflicts_with_a_later_apply(cluster, core):
    apply(cluster.url, f"{PODS}/u", pod("u", {"a": "1"}), "alice", code=201)
    core.patch_namespaced_pod("u", "default", {"metadata": {"labels": {"a": "2"}}}, field_manager="editor")
    code, status = apply(cluster.url, f"{PODS}/u", pod("u", {"a": "3"}), "alice")
    assert code == 409 and 'conflict with "editor"' in status["message"]


def test_same_value_from_two_managers_is_shared_not_a_conflict(cluster):
    apply(cluster.url, f"{PODS}/s", pod("s", {"a": "1"}), "alice", code=201)
    code, obj = apply(cluster.url, f"{PODS}/s", pod("s", {"a": "1"}), "bob")
    assert code == 200
    assert set(managers(obj)) == {"alice", "bob"}


def test_pruning_removes_only_fields_no_other_manager_owns(cluster):
    apply(cluster.url, f"{PODS}/pr", pod("pr", {"a": "1", "b": "1", "shared": "1"}), "alice", code=201)
    apply(cluster.url, f"{PODS}/pr", pod("pr", {"shared": "1"}), "bob", code=200)
    code, obj = apply(cluster.url, f"{PODS}/pr", pod("pr", {"a": "1"}), "alice")
    assert code == 200
    assert obj["metadata"]["labels"] == {"a": "1", "shared": "1"}


def test_a_reapply_without_changes_does_not_bump_the_resource_version(cluster):
    _, first = apply(cluster.url, f"{PODS}/same", pod("same"), "alice", code=201)
    _, second = apply(cluster.url, f"{PODS}/same", pod("same"), "alice", code=200)
    assert first["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]


def test_list_map_keys_from_the_schema_merge_items_of_two_managers(cluster):
    base = runtime("rt")
    base["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 1
    apply(cluster.url, f"{CTR}/rt", base, "alice", code=201)
    launcher = {"apiVersion": f"{TRAINER}/v1alpha1", "kind": "ClusterTrainingRuntime", "metadata": {"name": "rt"},
                "spec": {"template": {"spec": {"replicatedJobs": [{
                    "name": "launcher",
                    "template": {"spec": {"template": {"spec": {"containers": [{"name": "l", "image": "x"}]}}}}}]}}}}
    code, obj = apply(cluster.url, f"{CTR}/rt", launcher, "bob")
    assert code == 200, obj
    assert [j["name"] for j in obj["spec"]["template"]["spec"]["replicatedJobs"]] == ["node", "launcher"]
    fields = managers(obj)["bob"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:replicatedJobs"]
    assert list(fields) == ['k:{"name":"launcher"}']


def test_an_atomic_list_is_replaced_whole_and_owned_as_one_field(cluster):
    body = pod("at", tolerations=[{"key": "a", "operator": "Exists"}])
    apply(cluster.url, f"{PODS}/at", body, "alice", code=201)
    code, obj = apply(cluster.url, f"{PODS}/at", pod("at", tolerations=[{"key": "b", "operator": "Exists"}]), "bob")
    assert code == 409
    assert ".spec.tolerations" in obj["message"]


def test_apply_to_the_status_subresource_manages_status_only(cluster, core):
    core.create_namespaced_pod("default", pod("st"))
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "st"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    code, obj = apply(cluster.url, f"{PODS}/st/status", body, "kubelet")
    assert code == 200
    assert obj["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    entry = managers(obj)["kubelet"]
    assert entry["subresource"] == "status" and list(entry["fieldsV1"]) == ["f:status"]


@pytest.mark.parametrize("dry", [True, False])
def test_apply_of_a_custom_resource_is_validated(cluster, dry):
    bad = runtime("bad", scheduling={"schedulingPolicy": {"gang": {"minCount": 3}}})
    path = f"{CTR}/bad" + ("?dryRun=All&fieldManager=a" if dry else "?fieldManager=a")
    code, status = raw(cluster.url, "PATCH", path, json.dumps(bad).encode(), APPLY)
    assert code == 422 and status["details"]["causes"][0]["field"] == "spec.scheduling.schedulingPolicy"


def test_pruning_keeps_an_item_another_manager_shares_but_drops_this_managers_fields(cluster, core):
    owner = core.create_namespaced_pod("default", pod("owner"))
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner.metadata.uid}

    def with_ref(**extra):
        body = pod("item")
        body["metadata"]["ownerReferences"] = [{**ref, **extra}]
        return body

    apply(cluster.url, f"{PODS}/item", with_ref(controller=True), "alice", code=201)
    apply(cluster.url, f"{PODS}/item", with_ref(), "bob", code=200)
    _, obj = apply(cluster.url, f"{PODS}/item", pod("item"), "alice", code=200)
    assert obj["metadata"]["ownerReferences"] == [ref]
