"""§1 discovery: /version, /api, /apis, /apis/{g}/{v} with scope, kind, verbs and subresources; DynamicClient."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from tests.sandbox.api_support import raw


def test_it_reports_the_kubernetes_version(api_client):
    info = k8s.VersionApi(api_client).get_code()
    assert (info.major, info.minor) == ("1", "37")


def test_it_lists_core_and_named_groups(api_client):
    assert k8s.CoreApi(api_client).get_api_versions().versions == ["v1"]
    groups = {g.name: g for g in k8s.ApisApi(api_client).get_api_versions().groups}
    # As on a real 1.37 cluster: PriorityClass is GA at v1 (preferred), Workload/PodGroup are served at v1beta1.
    assert groups["scheduling.k8s.io"].preferred_version.version == "v1"
    assert {v.version for v in groups["scheduling.k8s.io"].versions} == {"v1", "v1beta1"}
    assert groups["trainer.kubeflow.org"].preferred_version.version == "v1alpha1"
    assert "apiextensions.k8s.io" in groups


@pytest.mark.parametrize(
    ("api_version", "kind", "namespaced", "status"),
    [
        ("v1", "Namespace", False, True),
        ("v1", "Node", False, True),
        ("v1", "Pod", True, True),
        ("v1", "Event", True, False),
        ("scheduling.k8s.io/v1beta1", "Workload", True, False),
        ("scheduling.k8s.io/v1beta1", "PodGroup", True, True),
        ("trainer.kubeflow.org/v1alpha1", "TrainJob", True, True),
        ("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime", False, False),
        ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", True, False),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition", False, True),
    ],
)
def test_it_serves_each_kind_with_scope_verbs_and_subresources(dynamic, api_version, kind, namespaced, status):
    resource = dynamic.resources.get(api_version=api_version, kind=kind)
    assert resource.namespaced is namespaced
    assert {"create", "get", "list", "watch", "patch", "update", "delete"} <= set(resource.verbs)
    assert ("status" in resource.subresources) is status


def test_it_serves_v1alpha2_scheduling_as_a_136_cluster(sandbox_136, tmp_path):
    api = k8s_config.new_client_from_config(config_file=sandbox_136.kubeconfig)
    dynamic = DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))
    podgroups = dynamic.resources.get(api_version="scheduling.k8s.io/v1alpha2", kind="PodGroup")
    assert "status" in podgroups.subresources
    with pytest.raises(ResourceNotFoundError):
        dynamic.resources.get(api_version="scheduling.k8s.io/v1beta1", kind="PodGroup")
    assert k8s.VersionApi(api).get_code().minor == "36"


def test_it_discovers_a_crd_created_at_run_time(api_client, dynamic, tmp_path):
    crds = dynamic.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    crds.create(body={
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": {"size": {"type": "integer",
                                                                                       "maximum": 10}}}}}}}]},
    })
    fresh = DynamicClient(api_client, cache_file=str(tmp_path / "d.json"))
    widgets = fresh.resources.get(api_version="example.com/v1", kind="Widget")
    created = widgets.create(body={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                                   "spec": {"size": 3}}, namespace="default")
    assert created.spec.size == 3
    crds.delete(name="widgets.example.com")
    gone = DynamicClient(api_client, cache_file=str(tmp_path / "d2.json"))
    with pytest.raises(ResourceNotFoundError):
        gone.resources.get(api_version="example.com/v1", kind="Widget")


@pytest.mark.parametrize("path", ["/apis/nope.example.com/v1", "/api/v1/widgets", "/apis/scheduling.k8s.io/v9"])
def test_unknown_paths_answer_a_not_found_status(cluster, path):
    code, body = raw(cluster.url, "GET", path)
    assert code == 404
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "NotFound", 404)
