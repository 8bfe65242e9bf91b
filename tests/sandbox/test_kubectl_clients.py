"""Real clients against the API-only sandbox: kubectl explain (OpenAPI v3), typed generators (protobuf bodies),
cluster-info, auth can-i/whoami, events --for and the events table; the raw OpenAPI and protobuf contracts."""

from __future__ import annotations

import base64

import pytest
from kubernetes import client as k8s

from tests.sandbox.api_support import Run, kubectl_for, raw


@pytest.fixture
def kubectl(cluster, tmp_path) -> Run:
    return kubectl_for(cluster.kubeconfig, str(tmp_path))


# -- kubectl explain: /openapi/v3 -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("target", "expected"), [
    ("pods", ["KIND:       Pod", "spec\t<PodSpec>", "status\t<PodStatus>"]),
    ("pods.spec.containers.resources", ["FIELD: resources <ResourceRequirements>", "limits\t<map[string]Quantity>"]),
    ("trainjob.spec", ["KIND:       TrainJob", "GROUP:      trainer.kubeflow.org", "runtimeRef\t<Object> -required-",
                       "trainer\t<Object>"]),
    ("clustertrainingruntime.spec.scheduling", ["KIND:       ClusterTrainingRuntime", "replicatedJobs\t<[]Object>",
                                                "schedulingPolicy\t<Object>", "disruptionMode\t<Object>"]),
    ("podgroup.spec", ["KIND:       PodGroup", "VERSION:    v1beta1", "schedulingPolicy\t<PodGroupSchedulingPolicy>"]),
    ("workload.spec.podGroupTemplates", ["KIND:       Workload", "schedulingPolicy\t<PodGroupSchedulingPolicy>"]),
    ("nodes.status.addresses", ["KIND:       Node", "address\t<string> -required-"]),
    ("leases.spec", ["GROUP:      coordination.k8s.io", "renewTime\t<string>"]),
    ("configmaps", ["KIND:       ConfigMap", "data\t<map[string]string>"]),
])
def test_kubectl_explain_documents_every_kind(kubectl, target, expected):
    result = kubectl("explain", target)
    assert result.returncode == 0, result.stderr
    for text in expected:
        assert text in result.stdout, (text, result.stdout[:2000])


def test_kubectl_explain_recursive_reaches_nested_fields(kubectl):
    result = kubectl("explain", "clustertrainingruntime.spec", "--recursive")
    assert result.returncode == 0, result.stderr
    lines = [line.strip() for line in result.stdout.splitlines()]
    # spec.scheduling.replicatedJobs[].job.resourceClaims[] (level 3) and the pod template's containers
    for field in ("scheduling\t<Object>", "replicatedJobs\t<[]Object>", "targetReplicatedJobs\t<[]string> -required-",
                  "resourceClaims\t<[]Object>", "numNodes\t<integer>"):
        assert field in lines, (field, result.stdout[:3000])


def test_kubectl_explain_follows_crds_created_at_run_time(kubectl, api_client):
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": {"type": "object", "description": "The widget.",
                                                               "properties": {"size": {
                                                                   "type": "integer",
                                                                   "description": "How big."}}}}}}}]}})
    result = kubectl("explain", "widget.spec.size")
    assert result.returncode == 0, result.stderr
    assert "How big." in result.stdout and "KIND:       Widget" in result.stdout


def test_openapi_v3_index_hash_changes_with_the_schemas(cluster, api_client):
    _, before = raw(cluster.url, "GET", "/openapi/v3")
    k8s.ApiextensionsV1Api(api_client).create_custom_resource_definition({
        "metadata": {"name": "things.trainer.kubeflow.org"},
        "spec": {"group": "trainer.kubeflow.org", "scope": "Cluster", "names": {"plural": "things", "kind": "Thing"},
                 "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    _, after = raw(cluster.url, "GET", "/openapi/v3")
    group = "apis/trainer.kubeflow.org/v1alpha1"
    assert before["paths"][group] != after["paths"][group]
    assert before["paths"]["api/v1"] == after["paths"]["api/v1"]
    code, doc = raw(cluster.url, "GET", "/openapi/v3/" + group)
    assert code == 200
    schema = doc["components"]["schemas"]["org.kubeflow.trainer.v1alpha1.Thing"]
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "trainer.kubeflow.org", "kind": "Thing", "version": "v1alpha1"}]
    assert schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in doc["components"]["schemas"]


def test_openapi_v2_serves_json_definitions_and_refuses_protobuf_only(cluster):
    code, doc = raw(cluster.url, "GET", "/openapi/v2", headers={"Accept": "application/json"})
    assert code == 200 and doc["swagger"] == "2.0"
    definitions = doc["definitions"]
    pod = definitions["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert pod["properties"]["spec"]["$ref"] == "#/definitions/io.k8s.api.core.v1.PodSpec"
    trainjob = definitions["org.kubeflow.trainer.v1alpha1.TrainJob"]
    assert "runtimeRef" in trainjob["properties"]["spec"]["properties"]
    # Swagger 2.0 cannot say oneOf/anyOf: they are dropped, as kube-apiserver publishes CRDs in v2.
    assert "oneOf" not in str(trainjob) and "anyOf" not in str(trainjob)
    code, _ = raw(cluster.url, "GET", "/openapi/v2",
                  headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    assert code == 406


# -- typed generators: protobuf bodies -----------------------------------------------------------------------------

def test_kubectl_create_namespace_configmap_and_secret(kubectl, core):
    for args in (("create", "namespace", "team-x"),
                 ("create", "configmap", "settings", "-n", "team-x", "--from-literal=mode=fast",
                  "--from-literal=level=3"),
                 ("create", "secret", "generic", "creds", "-n", "team-x", "--from-literal=token=s3cr3t"),
                 ("create", "secret", "docker-registry", "pull", "-n", "team-x", "--docker-server=r.example",
                  "--docker-username=u", "--docker-password=p")):
        result = kubectl(*args)
        assert result.returncode == 0, (args, result.stderr)
    namespace = core.read_namespace("team-x")
    assert namespace.metadata.labels["kubernetes.io/metadata.name"] == "team-x"
    assert namespace.metadata.generate_name is None  # empty protobuf strings are absent, as in JSON
    assert core.read_namespaced_config_map("settings", "team-x").data == {"mode": "fast", "level": "3"}
    secret = core.read_namespaced_secret("creds", "team-x")
    assert secret.type == "Opaque" and base64.b64decode(secret.data["token"]) == b"s3cr3t"
    pull = core.read_namespaced_secret("pull", "team-x")
    assert pull.type == "kubernetes.io/dockerconfigjson" and b"r.example" in base64.b64decode(
        pull.data[".dockerconfigjson"])
    again = kubectl("create", "namespace", "team-x")
    assert again.returncode != 0 and "AlreadyExists" in again.stderr
    listed = kubectl("get", "configmaps,secrets", "-n", "team-x")
    assert listed.returncode == 0, listed.stderr
    assert "settings" in listed.stdout and "Opaque" in listed.stdout


def test_protobuf_body_of_an_unsupported_kind_or_garbage_is_415(cluster):
    code, body = raw(cluster.url, "POST", "/api/v1/namespaces", b"not protobuf",
                     content_type="application/vnd.kubernetes.protobuf")
    assert code == 415 and "k8s\\x00" in body["message"]
    # runtime.Unknown{typeMeta{apiVersion "v1", kind "Pod"}}: a kind without a decoder names the ones it has
    type_meta = b"\n\x02v1\x12\x03Pod"
    envelope = b"k8s\x00" + b"\n" + bytes([len(type_meta)]) + type_meta
    code, body = raw(cluster.url, "POST", "/api/v1/namespaces/default/pods", envelope,
                     content_type="application/vnd.kubernetes.protobuf")
    assert code == 415 and "Namespace, ConfigMap, Secret" in body["message"], body


# -- cluster-info, auth -------------------------------------------------------------------------------------------

def test_kubectl_cluster_info_finds_the_control_plane(kubectl, cluster, core):
    result = kubectl("cluster-info")
    assert result.returncode == 0, result.stderr
    assert f"Kubernetes control plane is running at {cluster.url}" in result.stdout
    service = core.read_namespaced_service("kubernetes", "default")
    assert service.spec.cluster_ip == "10.96.0.1" and service.spec.ports[0].port == 443


def test_kubectl_auth_can_i_follows_the_authorizer_and_denials(kubectl, cluster):
    allowed = kubectl("auth", "can-i", "create", "trainjobs.trainer.kubeflow.org")
    assert allowed.returncode == 0 and allowed.stdout.strip() == "yes", allowed.stderr
    cluster.deny_access({"verb": "delete", "group": "", "resource": "pods"})
    denied = kubectl("auth", "can-i", "delete", "pods")
    assert denied.returncode == 1, (denied.stdout, denied.stderr)
    assert denied.stdout.strip() == "no - sandbox: delete on pods denied by /sandbox/rbac"
    still = kubectl("auth", "can-i", "get", "pods")
    assert still.stdout.strip() == "yes"


def test_kubectl_auth_whoami_names_the_sandbox_admin(kubectl):
    result = kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("sandbox ") and "system:masters" in result.stdout


# -- events ---------------------------------------------------------------------------------------------------------

def _event(name: str, kind: str, obj: str, reason: str, *, api_version: str = "trainer.kubeflow.org/v1alpha1",
           event_type: str = "Normal", component: str = "trainjob-controller", count: int = 1) -> dict:
    return {"metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": kind, "name": obj, "namespace": "default", "apiVersion": api_version},
            "reason": reason, "message": f"{reason} happened to {obj}", "type": event_type,
            "source": {"component": component}, "count": count,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"}


def test_kubectl_events_for_a_trainjob_and_the_events_table(kubectl, core):
    core.create_namespaced_event("default", _event("e1", "TrainJob", "x", "TrainingRuntimeNotFound",
                                                   event_type="Warning", count=3))
    core.create_namespaced_event("default", _event("e2", "TrainJob", "other", "Created"))
    core.create_namespaced_event("default", _event("e3", "Pod", "x", "Scheduled", api_version="v1",
                                                   component="default-scheduler"))
    result = kubectl("events", "--for", "trainjob/x")
    assert result.returncode == 0, result.stderr
    assert "TrainingRuntimeNotFound" in result.stdout
    assert "Created" not in result.stdout and "Scheduled" not in result.stdout
    table = kubectl("get", "events")
    assert table.returncode == 0, table.stderr
    header = table.stdout.splitlines()[0].split()
    assert header == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], table.stdout
    row = next(line for line in table.stdout.splitlines() if "TrainingRuntimeNotFound" in line)
    assert "(x3 over" in row and "Warning" in row and "trainjob/x" in row and "happened to x" in row
    wide = kubectl("get", "events", "-o", "wide")
    assert "SOURCE" in wide.stdout and "default-scheduler" in wide.stdout


@pytest.mark.parametrize(("selector", "names"), [
    ("involvedObject.apiVersion=v1", ["e3"]),
    ("involvedObject.kind=TrainJob,involvedObject.name=x", ["e1"]),
    ("source=default-scheduler", ["e3"]),
    ("reportingComponent=", ["e1", "e2", "e3"]),
    ("type=Warning", ["e1"]),
    ("reason!=Created,metadata.namespace=default", ["e1", "e3"]),
])
def test_event_field_selectors_as_kube_apiserver_supports_them(core, selector, names):
    core.create_namespaced_event("default", _event("e1", "TrainJob", "x", "Failed", event_type="Warning"))
    core.create_namespaced_event("default", _event("e2", "TrainJob", "other", "Created"))
    core.create_namespaced_event("default", _event("e3", "Pod", "x", "Scheduled", api_version="v1",
                                                   component="default-scheduler"))
    listed = core.list_namespaced_event("default", field_selector=selector)
    assert sorted(e.metadata.name for e in listed.items) == names


def test_event_field_selector_on_an_unknown_field_is_400(core):
    with pytest.raises(k8s.ApiException) as failed:
        core.list_namespaced_event("default", field_selector="message=x")
    assert failed.value.status == 400 and "field label not supported: message" in failed.value.body


@pytest.mark.parametrize("body", [{"spec": "x"}, {"spec": {}}, [1]])
def test_malformed_access_reviews_are_client_errors(cluster, body):
    code, answer = raw(cluster.url, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body)
    assert code in (400, 422), answer


def test_published_openapi_documents_are_valid(cluster):
    from openapi_spec_validator import validate

    _, index = raw(cluster.url, "GET", "/openapi/v3")
    assert {"api/v1", "apis/trainer.kubeflow.org/v1alpha1", "apis/scheduling.k8s.io/v1beta1"} <= set(index["paths"])
    for entry in index["paths"].values():
        code, doc = raw(cluster.url, "GET", entry["serverRelativeURL"])
        assert code == 200
        validate(doc)  # OpenAPI 3.0
    _, v2 = raw(cluster.url, "GET", "/openapi/v2")
    validate(v2)  # Swagger 2.0
