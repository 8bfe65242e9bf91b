"""§1 resources and CRUD semantics: status codes, metav1.Status bodies, scope, namespaces, optimistic concurrency,
no-op writes, generation, status subresource split, finalizers, garbage collection, dryRun."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from tests.sandbox.api_support import TRAINER, pod, raw, runtime, status_of, trainjob


def test_it_creates_with_201_and_fills_server_metadata(cluster):
    code, body = raw(cluster.url, "POST", "/api/v1/namespaces/default/pods", pod("p"))
    assert code == 201
    meta = body["metadata"]
    assert meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0
    assert body["status"]["phase"] == "Pending"


def test_it_gets_lists_replaces_and_deletes(core):
    core.create_namespaced_pod("default", pod("a"))
    got = core.read_namespaced_pod("a", "default")
    got.metadata.labels = {"tier": "web"}
    replaced = core.replace_namespaced_pod("a", "default", got)
    assert replaced.metadata.labels == {"tier": "web"}
    assert int(replaced.metadata.resource_version) > int(got.metadata.resource_version)
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["a"]
    core.delete_namespaced_pod("a", "default")
    with pytest.raises(k8s.ApiException) as err:
        core.read_namespaced_pod("a", "default")
    assert err.value.status == 404


@pytest.mark.parametrize(
    ("method", "path", "body", "code", "reason"),
    [
        ("GET", "/api/v1/namespaces/default/pods/missing", None, 404, "NotFound"),
        ("GET", "/api/v1/namespaces/default/nodes", None, 404, "NotFound"),
        ("GET", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/clustertrainingruntimes", None, 404,
         "NotFound"),
        ("POST", "/api/v1/namespaces/nowhere/pods", pod("x"), 404, "NotFound"),
        ("POST", "/api/v1/namespaces/default/pods", {"kind": "Pod", "metadata": {"name": "x"}, "spec": {}}, 422,
         "Invalid"),
        ("POST", "/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x"}},
         400, "BadRequest"),
        ("POST", "/api/v1/namespaces/default/pods?dryRun=Some", pod("x"), 400, "BadRequest"),
    ],
)
def test_errors_come_as_status_bodies_with_standard_reasons(cluster, method, path, body, code, reason):
    got_code, status = raw(cluster.url, method, path, body)
    assert got_code == code
    assert status["kind"] == "Status" and status["status"] == "Failure"
    assert (status["reason"], status["code"]) == (reason, code)


def test_missing_namespace_names_the_namespace(core):
    with pytest.raises(k8s.ApiException) as err:
        core.create_namespaced_pod("ghost", pod("x"))
    assert status_of(err.value)["message"] == 'namespaces "ghost" not found'


def test_duplicate_create_is_already_exists(core):
    core.create_namespaced_pod("default", pod("dup"))
    with pytest.raises(k8s.ApiException) as err:
        core.create_namespaced_pod("default", pod("dup"))
    status = status_of(err.value)
    assert (err.value.status, status["reason"], status["details"]["name"]) == (409, "AlreadyExists", "dup")


def test_stale_resource_version_is_a_conflict(core):
    created = core.create_namespaced_pod("default", pod("occ"))
    fresh = core.patch_namespaced_pod("occ", "default", {"metadata": {"labels": {"v": "2"}}})
    created.metadata.labels = {"v": "stale"}
    with pytest.raises(k8s.ApiException) as err:
        core.replace_namespaced_pod("occ", "default", created)
    assert err.value.status == 409 and status_of(err.value)["reason"] == "Conflict"
    assert core.read_namespaced_pod("occ", "default").metadata.resource_version == fresh.metadata.resource_version


def test_resource_versions_are_global_and_monotonic(core, custom):
    a = core.create_namespace({"metadata": {"name": "team-a"}}).metadata.resource_version
    b = core.create_namespaced_pod("team-a", pod("p")).metadata.resource_version
    c = custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "team-a", "trainjobs", trainjob("j"))
    assert int(a) < int(b) < int(c["metadata"]["resourceVersion"])


def test_a_no_op_write_does_not_bump_the_resource_version(core):
    created = core.create_namespaced_pod("default", pod("same", {"a": "1"}))
    again = core.patch_namespaced_pod("same", "default", {"metadata": {"labels": {"a": "1"}}})
    assert again.metadata.resource_version == created.metadata.resource_version
    replaced = core.replace_namespaced_pod("same", "default", again)
    assert replaced.metadata.resource_version == created.metadata.resource_version


def test_generation_moves_only_on_spec_changes(custom):
    job = custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", trainjob("g"))
    assert job["metadata"]["generation"] == 1
    labelled = custom.patch_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", "g",
                                                     {"metadata": {"labels": {"x": "y"}}})
    assert labelled["metadata"]["generation"] == 1
    running = {"name": "node", "active": 1, "ready": 0, "succeeded": 0, "failed": 0, "suspended": 0}
    status = custom.patch_namespaced_custom_object_status(TRAINER, "v1alpha1", "default", "trainjobs", "g",
                                                          {"status": {"jobsStatus": [running]}})
    assert status["metadata"]["generation"] == 1
    suspended = custom.patch_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", "g",
                                                      {"spec": {"suspend": True}})
    assert suspended["metadata"]["generation"] == 2


def test_status_subresource_is_split_both_ways(custom):
    custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", trainjob("s"))
    main = custom.patch_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", "s", {
        "spec": {"suspend": True},
        "status": {"conditions": [{"type": "Complete", "status": "True", "reason": "X", "message": "",
                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    assert main["spec"]["suspend"] is True and "status" not in main
    status = custom.patch_namespaced_custom_object_status(TRAINER, "v1alpha1", "default", "trainjobs", "s", {
        "spec": {"suspend": False},
        "status": {"conditions": [{"type": "Suspended", "status": "True", "reason": "Suspended", "message": "",
                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    assert status["spec"]["suspend"] is True
    assert status["status"]["conditions"][0]["type"] == "Suspended"


def test_status_given_on_create_is_dropped_for_kinds_with_a_status_subresource(custom):
    body = trainjob("c")
    body["status"] = {"jobsStatus": [{"name": "node", "active": 3}]}
    created = custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", body)
    assert "status" not in created


def test_finalizers_hold_deletion_until_removed(core):
    core.create_namespaced_pod("default", {**pod("fin"), "metadata": {"name": "fin", "finalizers": ["x/y"]}})
    core.delete_namespaced_pod("fin", "default")
    marked = core.read_namespaced_pod("fin", "default")
    assert marked.metadata.deletion_timestamp is not None
    core.patch_namespaced_pod("fin", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(k8s.ApiException) as err:
        core.read_namespaced_pod("fin", "default")
    assert err.value.status == 404


def test_delete_preconditions_are_checked(core):
    core.create_namespaced_pod("default", pod("pre"))
    with pytest.raises(k8s.ApiException) as err:
        core.delete_namespaced_pod("pre", "default", body=k8s.V1DeleteOptions(
            preconditions=k8s.V1Preconditions(uid="not-the-uid")))
    assert err.value.status == 409


def _owner_ref(obj: dict, controller: bool = True) -> dict:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": controller}


def test_deleting_a_trainjob_collects_its_workload_podgroups_and_pods(cluster, custom, core):
    job = custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", trainjob("gc"))
    workload = custom.create_namespaced_custom_object("scheduling.k8s.io", "v1beta1", "default", "workloads", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
        "metadata": {"name": "gc-abc", "ownerReferences": [_owner_ref(job)]},
        "spec": {"controllerRef": {"apiGroup": TRAINER, "kind": "TrainJob", "name": "gc"},
                 "podGroupTemplates": [{"name": "gc", "schedulingPolicy": {"gang": {"minCount": 1}}}]}})
    group = custom.create_namespaced_custom_object("scheduling.k8s.io", "v1beta1", "default", "podgroups", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "gc-abc-x", "ownerReferences": [_owner_ref(job), _owner_ref(workload, False)]},
        "spec": {"workloadRef": {"workloadName": "gc-abc", "templateName": "gc"},
                 "schedulingPolicy": {"gang": {"minCount": 1}}}})
    member = pod("gc-node-0", schedulingGroup={"podGroupName": "gc-abc-x"})
    member["metadata"]["ownerReferences"] = [_owner_ref(job)]  # pods belong to the (Job of the) TrainJob
    core.create_namespaced_pod("default", member)
    unrelated = core.create_namespaced_pod("default", pod("keep"))
    assert group["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]
    custom.delete_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", "gc")

    def collected():
        objects = cluster.dump()["objects"]
        return not objects.get("workloads.scheduling.k8s.io") \
            and [p["metadata"]["name"] for p in objects.get("pods", [])] == ["keep"]

    cluster.wait_until(collected)
    assert core.read_namespaced_pod("keep", "default").metadata.uid == unrelated.metadata.uid
    # The PodGroup waits for kube-controller-manager's protection controller to drop its finalizer.
    held = custom.get_namespaced_custom_object("scheduling.k8s.io", "v1beta1", "default", "podgroups", "gc-abc-x")
    assert held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]
    custom.patch_namespaced_custom_object("scheduling.k8s.io", "v1beta1", "default", "podgroups", "gc-abc-x",
                                          {"metadata": {"finalizers": None}})
    cluster.wait_until(lambda: not cluster.dump()["objects"].get("podgroups.scheduling.k8s.io"))


def test_orphan_propagation_keeps_dependents_without_the_owner_reference(cluster, core, custom):
    job = custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", trainjob("orph"))
    member = pod("orph-0")
    member["metadata"]["ownerReferences"] = [_owner_ref(job)]
    core.create_namespaced_pod("default", member)
    custom.delete_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", "orph",
                                           propagation_policy="Orphan")
    cluster.wait_until(lambda: not cluster.dump()["objects"].get("trainjobs.trainer.kubeflow.org"))
    assert core.read_namespaced_pod("orph-0", "default").metadata.owner_references is None


def test_deleting_a_namespace_removes_its_contents(cluster, core):
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_pod("doomed", pod("p"))
    core.delete_namespace("doomed")
    cluster.wait_until(lambda: "doomed" not in [n.metadata.name for n in core.list_namespace().items])
    assert core.list_namespaced_pod("doomed").items == []


@pytest.mark.parametrize("verb", ["create", "replace", "patch", "apply", "delete"])
def test_dry_run_all_changes_nothing(cluster, core, verb):
    created = core.create_namespaced_pod("default", pod("dry", {"v": "1"}))
    rv = cluster.dump()["resourceVersion"]
    base = "/api/v1/namespaces/default/pods"
    if verb == "create":
        code, body = raw(cluster.url, "POST", f"{base}?dryRun=All", pod("dry2"))
        assert code == 201 and body["metadata"]["name"] == "dry2"
    elif verb == "replace":
        changed = k8s.ApiClient().sanitize_for_serialization(created)
        changed["metadata"]["labels"] = {"v": "2"}
        code, body = raw(cluster.url, "PUT", f"{base}/dry?dryRun=All", changed)
        assert code == 200 and body["metadata"]["labels"] == {"v": "2"}
    elif verb == "patch":
        code, body = raw(cluster.url, "PATCH", f"{base}/dry?dryRun=All", {"metadata": {"labels": {"v": "2"}}},
                         "application/merge-patch+json")
        assert code == 200 and body["metadata"]["labels"] == {"v": "2"}
    elif verb == "apply":
        code, body = raw(cluster.url, "PATCH", f"{base}/dry3?dryRun=All&fieldManager=t", pod("dry3"),
                         "application/apply-patch+yaml")
        assert code == 201
    else:
        code, _ = raw(cluster.url, "DELETE", f"{base}/dry?dryRun=All")
        assert code == 200
    assert cluster.dump()["resourceVersion"] == rv
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["dry"]
    assert core.read_namespaced_pod("dry", "default").metadata.labels == {"v": "1"}


def test_pod_binding_sets_the_node_and_pod_scheduled(core):
    core.create_namespaced_pod("default", pod("bind"))
    core.create_namespaced_pod_binding("bind", "default", k8s.V1Binding(
        metadata=k8s.V1ObjectMeta(name="bind"), target=k8s.V1ObjectReference(kind="Node", name="node-1")),
        _preload_content=False)
    bound = core.read_namespaced_pod("bind", "default")
    assert bound.spec.node_name == "node-1"
    assert [(c.type, c.status) for c in bound.status.conditions] == [("PodScheduled", "True")]


def test_pod_spec_is_immutable_except_the_documented_fields(core):
    core.create_namespaced_pod("default", pod("imm"))
    with pytest.raises(k8s.ApiException) as err:
        core.patch_namespaced_pod("imm", "default", {"spec": {"restartPolicy": "Never"}})
    assert err.value.status == 422
    core.patch_namespaced_pod("imm", "default", {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}})


def test_cluster_scoped_nodes_keep_their_status_on_create(core):
    node = core.create_node({"metadata": {"name": "n1", "labels": {"zone": "a"}},
                             "status": {"allocatable": {"nvidia.com/gpu": "8"},
                                        "conditions": [{"type": "Ready", "status": "True"}]}})
    assert node.status.allocatable == {"nvidia.com/gpu": "8"}
    updated = core.patch_node_status("n1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert [(c.type, c.status) for c in updated.status.conditions] == [("Ready", "False")]


def test_events_can_be_created_and_listed(core):
    core.create_namespaced_event("default", {
        "metadata": {"name": "ev1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Scheduled", "message": "ok", "type": "Normal"})
    listed = core.list_namespaced_event("default", field_selector="involvedObject.name=p")
    assert [e.reason for e in listed.items] == ["Scheduled"]


@pytest.mark.parametrize("name", ["default", "kube-system"])
def test_system_namespaces_may_not_be_deleted(core, name):
    with pytest.raises(k8s.ApiException) as err:
        core.delete_namespace(name)
    assert err.value.status == 403


def test_foreground_deletion_removes_dependents_before_the_owner(cluster, core, custom):
    job = custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", trainjob("fg"))
    for i in range(3):
        member = pod(f"fg-{i}")
        member["metadata"]["ownerReferences"] = [_owner_ref(job)]
        member["metadata"]["finalizers"] = ["test/hold"]
        core.create_namespaced_pod("default", member)
    custom.delete_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", "fg",
                                           propagation_policy="Foreground")
    cluster.wait_until(lambda: all(p.metadata.deletion_timestamp for p in core.list_namespaced_pod("default").items))
    held = custom.get_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs", "fg")
    assert held["metadata"]["finalizers"] == ["foregroundDeletion"] and held["metadata"]["deletionTimestamp"]
    for i in range(3):
        core.patch_namespaced_pod(f"fg-{i}", "default", {"metadata": {"finalizers": None}})
    cluster.wait_until(lambda: not cluster.dump()["objects"].get("trainjobs.trainer.kubeflow.org"))


@pytest.mark.parametrize(
    ("labels", "field"),
    [({"bad key!": "x"}, "metadata.labels"), ({"ok": "x" * 64}, "metadata.labels.ok"),
     ({"ok": "-starts-with-dash"}, "metadata.labels.ok"), ({"UPPER.example.com/x": "y"}, "metadata.labels")],
)
def test_invalid_labels_are_rejected(core, labels, field):
    with pytest.raises(k8s.ApiException) as err:
        core.create_namespaced_pod("default", pod("l", labels))
    assert field in [c["field"] for c in status_of(err.value)["details"]["causes"]]


def test_valid_qualified_labels_are_accepted(core):
    labels = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer", "a_b.c-d": "", "x": "A-1_b.2"}
    assert core.create_namespaced_pod("default", pod("ok", labels)).metadata.labels == labels


def test_only_one_owner_reference_may_be_the_controller(core):
    owner = core.create_namespaced_pod("default", pod("owner"))
    body = pod("two")
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner.metadata.uid, "controller": True}
    body["metadata"]["ownerReferences"] = [ref, {**ref, "uid": "other", "name": "o2"}]
    with pytest.raises(k8s.ApiException) as err:
        core.create_namespaced_pod("default", body)
    assert err.value.status == 422


def test_generate_name_creates_a_unique_name(core):
    body = pod("")
    body["metadata"] = {"generateName": "worker-"}
    first = core.create_namespaced_pod("default", body)
    second = core.create_namespaced_pod("default", body)
    assert first.metadata.name.startswith("worker-") and first.metadata.name != second.metadata.name


def test_delete_collection_honours_the_label_selector(core):
    for name, team in (("a", "x"), ("b", "x"), ("c", "y")):
        core.create_namespaced_pod("default", pod(name, {"team": team}))
    core.delete_collection_namespaced_pod("default", label_selector="team=x")
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["c"]


def test_an_exact_list_at_a_compacted_resource_version_is_expired(cluster, core):
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod("later"))
    cluster.compact()
    with pytest.raises(k8s.ApiException) as err:
        core.list_namespaced_pod("default", resource_version=rv, resource_version_match="Exact")
    assert err.value.status == 410 and status_of(err.value)["reason"] == "Expired"


def test_a_custom_resource_put_needs_a_resource_version_a_pod_put_does_not(cluster, core, custom):
    path = f"/apis/{TRAINER}/v1alpha1/clustertrainingruntimes"
    assert raw(cluster.url, "POST", path, runtime("rv"))[0] == 201
    code, answer = raw(cluster.url, "PUT", f"{path}/rv", runtime("rv"))
    assert code == 422
    assert answer["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
                                            "message": "Invalid value: 0x0: must be specified for an update"}]
    current = custom.get_cluster_custom_object(TRAINER, "v1alpha1", "clustertrainingruntimes", "rv")
    assert raw(cluster.url, "PUT", f"{path}/rv", current)[0] == 200
    core.create_namespaced_pod("default", pod("free"))
    assert raw(cluster.url, "PUT", "/api/v1/namespaces/default/pods/free", pod("free"))[0] == 200
