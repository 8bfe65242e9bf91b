"""Structural-schema leniency that real clients rely on, as kube-apiserver implements it.

- `x-kubernetes-int-or-string` fields (resource quantities) accept integers, strings and whole-number JSON floats
  (`8.0`); `type: integer` accepts `8.0` but not `8.5`. Whole floats are stored as integers (`8.0` reads back `8`).
- Unknown fields are pruned: with a `Warning: 299 - "unknown field \\"spec.foo\\""` header under the default
  field validation (Warn), a 400 under `fieldValidation=Strict`, silently under `Ignore`.

Each rule is checked on several fields, through create, replace, merge patch and server-side apply, with the
official client (CustomObjectsApi) and with raw JSON bytes.
"""

from __future__ import annotations

import copy
import json

import pytest
from kubernetes import client as k8s

from tests.sandbox.api_support import TRAINER, raw, runtime, status_of, trainjob

JOBS = f"/apis/{TRAINER}/v1alpha1/namespaces/default/trainjobs"
RUNTIMES = f"/apis/{TRAINER}/v1alpha1/clustertrainingruntimes"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


def _job_with(name: str, requests: dict, limits: dict | None = None, **trainer) -> dict:
    resources = {"requests": requests, **({"limits": limits} if limits is not None else {})}
    return trainjob(name, trainer={"numNodes": 1, "resourcesPerNode": resources, **trainer})


def _runtime_with(name: str, requests: dict) -> dict:
    body = runtime(name)
    container = body["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"][0]
    container["resources"] = {"requests": requests, "limits": copy.deepcopy(requests)}
    return body


def _container_resources(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"][0]["resources"]


def _raw_json(url: str, method: str, path: str, text: str, content_type: str = "application/json",
              params: str = "") -> tuple[int, dict, list[str]]:
    """Sends JSON text as is (so `8.0` stays `8.0` on the wire); returns (code, body, Warning headers)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url + path + params, data=text.encode(), method=method,
                                     headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read()), response.headers.get_all("Warning") or []
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), exc.headers.get_all("Warning") or []


# -- int-or-string and integer accept whole floats --------------------------------------------------------------
@pytest.mark.parametrize("value", [8, "8", 8.0, "500m", "16Gi"], ids=["int", "string", "whole-float", "milli", "Gi"])
def test_trainjob_resources_per_node_accept_every_quantity_form(custom, value):
    created = custom.create_namespaced_custom_object(
        TRAINER, "v1alpha1", "default", "trainjobs", _job_with("q", {"nvidia.com/gpu": value, "cpu": value},
                                                               limits={"nvidia.com/gpu": value}))
    stored = created["spec"]["trainer"]["resourcesPerNode"]
    expected = 8 if value == 8.0 and not isinstance(value, str) else value
    assert stored["requests"] == {"nvidia.com/gpu": expected, "cpu": expected}
    assert stored["limits"] == {"nvidia.com/gpu": expected}
    assert type(stored["requests"]["cpu"]) is type(expected)


def test_whole_floats_on_the_wire_are_stored_as_integers(cluster):
    text = ('{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "wire"}, '
            '"spec": {"runtimeRef": {"name": "torch-distributed"}, "activeDeadlineSeconds": 600.0, '
            '"trainer": {"numNodes": 2.0, "numProcPerNode": 1e0, '
            '"resourcesPerNode": {"requests": {"nvidia.com/gpu": 8.0, "memory": 1e3}}}}}')
    code, body, _ = _raw_json(cluster.url, "POST", JOBS, text)
    assert code == 201, body
    trainer = body["spec"]["trainer"]
    assert (trainer["numNodes"], trainer["numProcPerNode"], body["spec"]["activeDeadlineSeconds"]) == (2, 1, 600)
    assert trainer["resourcesPerNode"]["requests"] == {"nvidia.com/gpu": 8, "memory": 1000}
    code, again = raw(cluster.url, "GET", f"{JOBS}/wire")
    assert again["spec"]["trainer"]["resourcesPerNode"]["requests"]["nvidia.com/gpu"] == 8


def test_runtime_container_resources_accept_whole_floats(custom):
    created = custom.create_cluster_custom_object(TRAINER, "v1alpha1", "clustertrainingruntimes",
                                                  _runtime_with("rq", {"cpu": 4.0, "memory": "8Gi", "gpu": 1}))
    assert _container_resources(created)["requests"] == {"cpu": 4, "memory": "8Gi", "gpu": 1}


@pytest.mark.parametrize(
    ("trainer", "field", "message"),
    [
        ({"resourcesPerNode": {"requests": {"nvidia.com/gpu": 8.5}}},
         "spec.trainer.resourcesPerNode.requests.nvidia.com/gpu",
         'Invalid value: "number": spec.trainer.resourcesPerNode.requests.nvidia.com/gpu in body must be of type '
         'integer,string: "number"'),
        ({"resourcesPerNode": {"limits": {"cpu": True}}}, "spec.trainer.resourcesPerNode.limits.cpu",
         'Invalid value: "boolean": spec.trainer.resourcesPerNode.limits.cpu in body must be of type '
         'integer,string: "boolean"'),
        ({"numNodes": 2.5}, "spec.trainer.numNodes",
         'Invalid value: "number": spec.trainer.numNodes in body must be of type integer: "number"'),
        ({"numNodes": "2"}, "spec.trainer.numNodes",
         'Invalid value: "string": spec.trainer.numNodes in body must be of type integer: "string"'),
        ({"resourcesPerNode": {"requests": {"cpu": "eight"}}}, "spec.trainer.resourcesPerNode.requests.cpu",
         "spec.trainer.resourcesPerNode.requests.cpu in body should match"),
    ],
    ids=["fraction-in-int-or-string", "bool-in-int-or-string", "fraction-in-integer", "string-in-integer",
         "not-a-quantity"],
)
def test_values_a_real_cluster_rejects_are_invalid(custom, trainer, field, message):
    with pytest.raises(k8s.ApiException) as err:
        custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs",
                                               trainjob("bad", trainer=trainer))
    status = status_of(err.value)
    assert (err.value.status, status["reason"]) == (422, "Invalid")
    causes = {c["field"]: c for c in status["details"]["causes"]}
    assert message in causes[field]["message"]
    assert "None" not in status["message"]


def _runtime_text(cpu: str, num_nodes: str = "1") -> str:
    body = _runtime_with("w", {"cpu": "__CPU__"})
    body["spec"]["mlPolicy"]["numNodes"] = "__NODES__"
    return json.dumps(body).replace('"__CPU__"', cpu).replace('"__NODES__"', num_nodes)


@pytest.mark.parametrize("write", ["replace", "merge-patch", "apply", "json-patch"])
def test_whole_floats_are_accepted_on_every_write(cluster, write):
    assert _raw_json(cluster.url, "POST", RUNTIMES, _runtime_text("1"))[0] == 201
    if write == "replace":
        current = raw(cluster.url, "GET", f"{RUNTIMES}/w")[1]
        rv = current["metadata"]["resourceVersion"]
        text = _runtime_text("8.0", "2.0").replace('"name": "w"}', '"name": "w", "resourceVersion": "' + rv + '"}')
        code, body, _ = _raw_json(cluster.url, "PUT", f"{RUNTIMES}/w", text)
    elif write == "merge-patch":
        code, body, _ = _raw_json(cluster.url, "PATCH", f"{RUNTIMES}/w", _runtime_text("8.0", "2.0"), MERGE)
    elif write == "json-patch":
        code, body, _ = _raw_json(cluster.url, "PATCH", f"{RUNTIMES}/w",
                                  '[{"op": "replace", "path": "/spec/mlPolicy/numNodes", "value": 2.0}, '
                                  '{"op": "replace", "path": "/spec/template/spec/replicatedJobs/0/template/spec/'
                                  'template/spec/containers/0/resources/requests/cpu", "value": 8.0}]',
                                  "application/json-patch+json")
    else:
        code, body, _ = _raw_json(cluster.url, "PATCH", f"{RUNTIMES}/w", _runtime_text("8.0", "2.0"), APPLY,
                                  params="?fieldManager=notebook&force=true")
    assert code == 200, body
    assert _container_resources(body)["requests"]["cpu"] == 8
    assert body["spec"]["mlPolicy"]["numNodes"] == 2


def test_an_immutable_field_resent_with_whole_floats_is_unchanged(cluster):
    """`spec.trainer` is immutable (`self == oldSelf`): `8.0` against a stored `8` is the same value."""
    text = _job_text("imm", extra_trainer=', "resourcesPerNode": {"requests": {"cpu": 8}}')
    assert _raw_json(cluster.url, "POST", JOBS, text)[0] == 201
    same = '{"spec": {"trainer": {"numNodes": 1.0, "resourcesPerNode": {"requests": {"cpu": 8.0}}}}}'
    code, body, _ = _raw_json(cluster.url, "PATCH", f"{JOBS}/imm", same, MERGE)
    assert code == 200, body
    code, body, _ = _raw_json(cluster.url, "PATCH", f"{JOBS}/imm",
                              '{"spec": {"trainer": {"resourcesPerNode": {"requests": {"cpu": 9.0}}}}}', MERGE)
    assert (code, body["details"]["causes"][0]["field"]) == (422, "spec.trainer")


def test_typed_client_patch_and_dry_run_with_float_quantities(custom):
    custom.create_cluster_custom_object(TRAINER, "v1alpha1", "clustertrainingruntimes", _runtime_with("t", {"cpu": 1}))
    patched = custom.patch_cluster_custom_object(TRAINER, "v1alpha1", "clustertrainingruntimes", "t",
                                                 {"spec": {"mlPolicy": {"numNodes": 4.0}}})
    assert patched["spec"]["mlPolicy"]["numNodes"] == 4
    dry = custom.create_namespaced_custom_object(TRAINER, "v1alpha1", "default", "trainjobs",
                                                 _job_with("t2", {"cpu": 2.0}), dry_run="All")
    assert dry["spec"]["trainer"]["resourcesPerNode"]["requests"] == {"cpu": 2}


# -- unknown fields ---------------------------------------------------------------------------------------------
def _job_text(name: str, extra_spec: str = "", extra_trainer: str = "") -> str:
    return ('{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "' + name
            + '"}, "spec": {"runtimeRef": {"name": "torch-distributed"}' + extra_spec
            + ', "trainer": {"numNodes": 1' + extra_trainer + "}}}")


@pytest.mark.parametrize("dry_run", [False, True], ids=["stored", "dry-run"])
def test_unknown_fields_are_pruned_with_a_warning_by_default(cluster, dry_run):
    params = "?dryRun=All" if dry_run else ""
    code, body, warnings = _raw_json(cluster.url, "POST", JOBS,
                                     _job_text("u", ', "foo": 1', ', "bogus": {"a": 1}'), params=params)
    assert code == 201, body
    assert "foo" not in body["spec"] and "bogus" not in body["spec"]["trainer"]
    assert sorted(warnings) == ['299 - "unknown field \\"spec.foo\\""',
                                '299 - "unknown field \\"spec.trainer.bogus\\""']


def test_unknown_fields_under_strict_are_rejected_naming_every_field(cluster):
    code, body, _ = _raw_json(cluster.url, "POST", JOBS, _job_text("s", ', "foo": 1', ', "bogus": 2'),
                              params="?fieldValidation=Strict")
    assert (code, body["reason"]) == (400, "BadRequest")
    assert 'strict decoding error: unknown field "spec.foo", unknown field "spec.trainer.bogus"' in body["message"]
    assert raw(cluster.url, "GET", f"{JOBS}/s")[0] == 404


def test_unknown_fields_under_ignore_are_pruned_silently(cluster):
    code, body, warnings = _raw_json(cluster.url, "POST", JOBS, _job_text("i", ', "foo": 1'),
                                     params="?fieldValidation=Ignore")
    assert code == 201 and "foo" not in body["spec"] and warnings == []


@pytest.mark.parametrize("write", ["replace", "merge-patch", "apply"])
def test_unknown_fields_warn_on_every_write(cluster, write):
    assert _raw_json(cluster.url, "POST", JOBS, _job_text("e"))[0] == 201
    if write == "replace":
        current = raw(cluster.url, "GET", f"{JOBS}/e")[1]
        current["spec"]["foo"] = 1
        code, body, warnings = _raw_json(cluster.url, "PUT", f"{JOBS}/e", json.dumps(current))
    elif write == "merge-patch":
        code, body, warnings = _raw_json(cluster.url, "PATCH", f"{JOBS}/e", '{"spec": {"foo": 1}}', MERGE)
    else:
        code, body, warnings = _raw_json(cluster.url, "PATCH", f"{JOBS}/e", _job_text("e", ', "foo": 1'), APPLY,
                                         params="?fieldManager=notebook&force=true")
    assert code == 200, body
    assert "foo" not in body["spec"]
    assert warnings == ['299 - "unknown field \\"spec.foo\\""']
    strict = _raw_json(cluster.url, "PATCH", f"{JOBS}/e", '{"spec": {"foo": 1}}', MERGE,
                       params="?fieldValidation=Strict")
    assert strict[0] == 400


def test_typed_client_sees_the_pruning_warning(custom):
    created, code, headers = custom.create_cluster_custom_object_with_http_info(
        TRAINER, "v1alpha1", "clustertrainingruntimes", runtime("warn", extraField=True))
    assert code == 201 and "extraField" not in created["spec"]
    assert headers.get("Warning") == '299 - "unknown field \\"spec.extraField\\""'
    with pytest.raises(k8s.ApiException) as err:
        custom.create_cluster_custom_object(TRAINER, "v1alpha1", "clustertrainingruntimes",
                                            runtime("strict", extraField=True), field_validation="Strict")
    assert err.value.status == 400 and 'unknown field "spec.extraField"' in status_of(err.value)["message"]


# -- built-in Pods: numeric quantities become quantity strings ---------------------------------------------------
def test_pod_numeric_quantities_are_stored_as_quantity_strings(cluster, core):
    text = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                       "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {
                           "requests": {"cpu": 0.5, "memory": "1Gi", "nvidia.com/gpu": 8.0},
                           "limits": {"cpu": 2, "nvidia.com/gpu": 8}}}]}})
    code, body, _ = _raw_json(cluster.url, "POST", "/api/v1/namespaces/default/pods", text)
    assert code == 201, body
    resources = body["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "8"},
                         "limits": {"cpu": "2", "nvidia.com/gpu": "8"}}
    typed = core.read_namespaced_pod("p", "default")
    assert typed.spec.containers[0].resources.requests == {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "8"}
