"""Typed decoding of request bodies: a value of the wrong JSON type is a 400 BadRequest naming the Go struct field,
never a server error; unknown ObjectMeta fields are pruned with a warning, like every other unknown field."""

from __future__ import annotations

import pytest

from tests.sandbox.api_support import pod, raw, trainjob

ODD_VALUES = ["x", 5, 8.5, True, [], {}, ["x"], [5], {"a": 1}, {"a": 5}]
META_FIELDS = ["name", "labels", "annotations", "finalizers", "ownerReferences", "generateName", "uid"]
COLLECTIONS = {
    "pods": ("/api/v1/namespaces/default/pods", lambda: pod("p")),
    "trainjobs": ("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs", lambda: trainjob("t")),
    "namespaces": ("/api/v1/namespaces", lambda: {"metadata": {"name": "n"}}),
    "events": ("/api/v1/namespaces/default/events", lambda: {"metadata": {"name": "e"}}),
}


@pytest.mark.parametrize("kind", sorted(COLLECTIONS))
@pytest.mark.parametrize("field", META_FIELDS)
def test_odd_metadata_types_are_bad_requests(cluster, kind, field):
    path, make = COLLECTIONS[kind]
    for value in ODD_VALUES:
        body = make()
        body["metadata"][field] = value
        code, answer = raw(cluster.url, "POST", path + "?dryRun=All", body)
        assert code < 500, (value, answer)
        if code == 400:
            assert "cannot be handled as a" in answer["message"] and "Go struct field ObjectMeta.metadata." in \
                answer["message"]


def test_a_label_that_is_a_number_names_the_field(cluster):
    body = pod("p", labels={"app": 5})
    code, answer = raw(cluster.url, "POST", "/api/v1/namespaces/default/pods", body)
    assert (code, answer["message"]) == (400, 'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal '
                                              "number into Go struct field ObjectMeta.metadata.labels of type string")


@pytest.mark.parametrize("containers", [[5], ["x"], {"a": 1}, [[]], [{"name": 5, "image": "i"}]],
                         ids=["number-item", "string-item", "object", "list-item", "number-name"])
def test_malformed_pod_containers_are_bad_requests_on_create_and_apply(cluster, containers):
    target = "/api/v1/namespaces/default/pods/p"
    body = pod("p")
    body["spec"]["containers"] = containers
    assert raw(cluster.url, "POST", "/api/v1/namespaces/default/pods", body)[0] == 400
    assert raw(cluster.url, "PATCH", target + "?fieldManager=a", pod("p"), "application/apply-patch+yaml")[0] == 201
    code, answer = raw(cluster.url, "PATCH", target + "?fieldManager=b&force=true", body,
                       "application/apply-patch+yaml")
    assert code == 400, answer


def test_null_list_items_decode_to_empty_objects(cluster):
    body = pod("p")
    body["spec"]["containers"] = [None]
    code, answer = raw(cluster.url, "POST", "/api/v1/namespaces/default/pods", body)
    assert code == 422 and {c["field"] for c in answer["details"]["causes"]} >= {"spec.containers[0].name"}


def test_unknown_metadata_fields_are_pruned_with_a_warning(cluster):
    import json
    import urllib.request

    body = pod("p")
    body["metadata"]["labelz"] = {"a": "b"}
    request = urllib.request.Request(cluster.url + "/api/v1/namespaces/default/pods", data=json.dumps(body).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        created, warnings = json.loads(response.read()), response.headers.get_all("Warning")
    assert "labelz" not in created["metadata"]
    assert warnings == ['299 - "unknown field \\"metadata.labelz\\""']
