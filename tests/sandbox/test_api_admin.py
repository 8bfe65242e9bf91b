"""§1 admin endpoints: reset, compact, fault injection (status, hang, drop, cut-watch), dump; CLI behaviour."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import pytest
import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from sandbox.testing import SandboxError, SandboxProcess
from tests.sandbox.api_support import pod, raw


def test_reset_restores_the_start_up_state_and_keeps_resource_versions_increasing(cluster, core):
    core.create_namespace({"metadata": {"name": "extra"}})
    core.create_namespaced_pod("default", pod("p"))
    before = int(cluster.dump()["resourceVersion"])
    after = int(cluster.reset())
    assert after >= before
    objects = cluster.dump()["objects"]
    assert "pods" not in objects
    assert [n["metadata"]["name"] for n in objects["namespaces"]] == ["default", "kube-node-lease", "kube-public",
                                                                      "kube-system", "kubeflow-system"]
    assert len(objects["customresourcedefinitions.apiextensions.k8s.io"]) == 3
    created = core.create_namespaced_pod("default", pod("p"))
    assert int(created.metadata.resource_version) > after


def test_reset_removes_crds_created_at_run_time(cluster, api_client):
    ext = k8s.ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition({
        "metadata": {"name": "things.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster", "names": {"plural": "things", "kind": "Thing"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    assert raw(cluster.url, "GET", "/apis/example.com/v1/things")[0] == 200
    cluster.reset()
    assert raw(cluster.url, "GET", "/apis/example.com/v1/things")[0] == 404


@pytest.mark.parametrize("status", [500, 503, 429, 409])
def test_status_faults_answer_the_next_matching_requests(cluster, core, status):
    cluster.inject_fault(method="GET", path=r"^/api/v1/namespaces/default/pods$", count=2, action="status",
                         status=status)
    for _ in range(2):
        with pytest.raises(k8s.ApiException) as err:
            core.list_namespaced_pod("default")
        assert err.value.status == status
    assert core.list_namespaced_pod("default").items == []


def test_a_retry_after_fault_is_retried_by_the_client(cluster, core):
    cluster.inject_fault(method="GET", path="/pods", action="status", status=503, retry_after=0)
    assert core.list_namespaced_pod("default").items == []
    assert cluster._call("GET", "/sandbox/faults")["faults"] == []


def test_faults_match_method_and_path(cluster, core):
    cluster.inject_fault(method="POST", path="/pods", action="status", status=503)
    core.list_namespaced_pod("default")
    with pytest.raises(k8s.ApiException):
        core.create_namespaced_pod("default", pod("x"))
    core.create_namespaced_pod("default", pod("x"))


def test_clear_faults_removes_pending_rules(cluster, core):
    cluster.inject_fault(method="*", path=".*", count=5, action="status", status=500)
    cluster.clear_faults()
    core.list_namespaced_pod("default")


def test_a_hang_fault_outlasts_a_client_timeout(cluster, core):
    # urllib3 retries a read timeout three times, so every attempt must hang.
    cluster.inject_fault(method="GET", path="/pods", action="hang", seconds=1, count=4)
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_namespaced_pod("default", _request_timeout=0.5)


def test_a_drop_fault_closes_the_connection_without_a_response(cluster):
    cluster.inject_fault(method="GET", path="/pods", action="drop")
    with pytest.raises((ConnectionError, urllib3.exceptions.HTTPError, OSError)):
        urllib.request.urlopen(cluster.url + "/api/v1/pods", timeout=5).read()
    assert raw(cluster.url, "GET", "/api/v1/pods")[0] == 200


def test_a_cut_watch_fault_ends_the_stream_after_n_events(cluster, core):
    for i in range(4):
        core.create_namespaced_pod("default", pod(f"p{i}"))
    cluster.inject_fault(method="GET", path="/pods", action="cut-watch", after_events=2)
    # timeoutSeconds=60 is far above the socket timeout: only the cut ends the stream without an exception.
    with urllib.request.urlopen(cluster.url + "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=60",
                                timeout=10) as response:
        events = [json.loads(line) for line in response if line.strip()]
    assert [e["object"]["metadata"]["name"] for e in events] == ["p0", "p1"]


def test_bad_fault_specs_are_rejected_with_the_field_named(cluster):
    with pytest.raises(SandboxError) as err:
        cluster.inject_fault(action="explode")
    assert "action" in str(err.value)
    with pytest.raises(SandboxError):
        cluster.inject_fault(action="status", status=418)


def test_dump_returns_every_object_by_resource(cluster, core):
    core.create_namespaced_pod("default", pod("d"))
    dump = cluster.dump()
    assert [p["metadata"]["name"] for p in dump["objects"]["pods"]] == ["d"]
    assert int(dump["resourceVersion"]) > 0


def test_the_cli_writes_a_kubeconfig_with_a_sandbox_context(cluster):
    _contexts, active = k8s_config.list_kube_config_contexts(config_file=cluster.kubeconfig)
    assert active["name"] == "sandbox"
    api = k8s_config.new_client_from_config(config_file=cluster.kubeconfig)
    assert api.configuration.host == cluster.url
    assert api.configuration.api_key == {"BearerToken": "Bearer sandbox-token"}


def test_sigterm_stops_the_process_cleanly():
    proc = SandboxProcess().start()
    assert proc.stop() == 0


def test_missing_controllers_or_topology_fail_with_a_clear_message(tmp_path):
    # --topology large needs sandbox.topology; with it present the server starts, so only check the argument error.
    result = subprocess.run([sys.executable, "-m", "sandbox", "--kubeconfig", str(tmp_path / "k"),
                             "--topology", "bogus"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "--topology" in result.stderr


def test_an_injected_410_on_a_watch_request_reaches_the_client_as_expired(cluster, core):
    from kubernetes import watch

    rv = core.list_namespaced_pod("default").metadata.resource_version
    cluster.inject_fault(method="GET", path="/pods", action="status", status=410)
    with pytest.raises(k8s.ApiException) as err:
        for _ in watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=2):
            pass
    assert err.value.status == 410
