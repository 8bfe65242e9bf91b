"""The gateway against a real sandbox API server over HTTP.

We test these aspects: discovery decides versions; CRUD and server-side apply (dry run, conflicts naming the
other manager, 422 causes by field); every failure arrives as a KubeError with the right permanence (injected
503/429/500/504/410, hangs past the timeout, dropped connections); the client's exceptions never leak.
"""

from __future__ import annotations

import copy

import pytest

from trainer_portal import kube
from trainer_portal.kube.client import build_gateway, get_gateway
from trainer_portal.kube.config import KubeSettings

from .conftest import runtime


def test_it_reads_the_server_version(gateway):
    assert gateway.server_version()["gitVersion"].startswith("v1.37")


def test_it_decides_versions_by_discovery(gateway):
    assert gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME) == kube.Resource(
        "trainer.kubeflow.org", "v1alpha1", "ClusterTrainingRuntime", "clustertrainingruntimes", False
    )
    workload = gateway.resolve(kube.WORKLOAD)
    assert (workload.version, workload.namespaced) == ("v1beta1", True)
    assert gateway.served_versions("scheduling.k8s.io") == ["v1", "v1beta1"]  # preferred first, as on 1.37
    assert gateway.served_versions("no.such.group") == []


def test_it_names_the_served_versions_when_ours_are_missing(gateway):
    legacy = kube.ResourceKind("scheduling.k8s.io", "Workload", "workloads", True, ("v1alpha1",))
    with pytest.raises(kube.KubeNotFound) as caught:
        gateway.resolve(legacy)
    assert "scheduling.k8s.io/v1beta1" in caught.value.message


def test_it_applies_creates_and_reads_back(gateway):
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    assert gateway.get(ctr, name="alpha") is None
    created = gateway.apply(ctr, body=runtime("alpha"))
    assert created["metadata"]["generation"] == 1
    assert [m["manager"] for m in created["metadata"]["managedFields"]] == ["trainer-portal"]
    live = gateway.get(ctr, name="alpha")
    assert live["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert [obj["metadata"]["name"] for obj in gateway.list(ctr).items] == ["alpha"]


def test_it_does_not_persist_a_dry_run(gateway):
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    answer = gateway.apply(ctr, body=runtime("dry"), dry_run=True)
    assert answer["metadata"]["name"] == "dry"
    assert gateway.get(ctr, name="dry") is None


def test_it_reapplies_unchanged_content_without_a_new_resource_version(gateway):
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    first = gateway.apply(ctr, body=runtime("same"))
    second = gateway.apply(ctr, body=runtime("same"))
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_it_names_the_other_manager_on_an_apply_conflict(gateway, cluster):
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    gateway.apply(ctr, body=runtime("shared", num_nodes=2))
    other = build_gateway(KubeSettings(config_path=cluster.kubeconfig, field_manager="kubectl-edit"))
    with pytest.raises(kube.KubeConflict) as caught:
        other.apply(ctr, body=runtime("shared", num_nodes=5))
    error = caught.value
    assert error.permanent is True
    assert error.managers == ("trainer-portal",)
    assert any(cause.field == ".spec.mlPolicy.numNodes" for cause in error.causes)
    taken = other.apply(ctr, body=runtime("shared", num_nodes=5), force=True)
    assert taken["spec"]["mlPolicy"]["numNodes"] == 5


def test_it_refuses_a_stale_resource_version(gateway):
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    first = gateway.apply(ctr, body=runtime("stale", num_nodes=1))
    gateway.apply(ctr, body=runtime("stale", num_nodes=2))
    body = runtime("stale", num_nodes=3)
    body["metadata"]["resourceVersion"] = first["metadata"]["resourceVersion"]
    with pytest.raises(kube.KubeConflict) as caught:
        gateway.apply(ctr, body=body)
    assert caught.value.permanent is False  # optimistic concurrency: read again and retry
    assert caught.value.managers == ()


def test_it_reports_validation_errors_field_by_field(gateway):
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    body = runtime("bad")
    body["spec"]["mlPolicy"]["numNodes"] = "many"
    with pytest.raises(kube.KubeInvalid) as caught:
        gateway.apply(ctr, body=body, dry_run=True)
    error = caught.value
    assert error.status == 422 and error.permanent is True
    assert [field["path"] for field in error.field_errors] == ["spec.mlPolicy.numNodes"]


def test_it_deletes_and_returns_none_when_already_gone(gateway):
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    gateway.apply(ctr, body=runtime("gone"))
    assert gateway.delete(ctr, name="gone") is not None
    assert gateway.delete(ctr, name="gone") is None


def test_it_follows_continue_tokens(gateway):
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    for index in range(7):
        gateway.apply(ctr, body=runtime(f"page-{index}"))
    listed = gateway.list(ctr, page_size=3)
    assert sorted(obj["metadata"]["name"] for obj in listed.items) == [f"page-{i}" for i in range(7)]
    assert listed.resource_version


def test_it_asks_the_cluster_whether_an_action_is_allowed(gateway):
    review = gateway.access_review(verb="list", kind=kube.NODE)
    assert review.allowed is True
    assert not review.error


def test_it_reports_a_denied_action_with_the_servers_reason(gateway, cluster):
    cluster.deny_access({"verb": "patch", "group": "trainer.kubeflow.org", "resource": "clustertrainingruntimes"})
    denied = gateway.access_review(verb="patch", kind=kube.CLUSTER_TRAINING_RUNTIME)
    allowed = gateway.access_review(verb="get", kind=kube.CLUSTER_TRAINING_RUNTIME)
    assert (denied.allowed, allowed.allowed) == (False, True)
    assert "denied" in denied.reason


def test_it_reports_a_failed_access_review_without_raising(gateway, cluster):
    cluster.inject_fault(method="POST", path="selfsubjectaccessreviews", action="status", status=500, count=1)
    review = gateway.access_review(verb="list", kind=kube.NODE)
    assert review.allowed is False
    assert review.error


@pytest.mark.parametrize(
    ("status", "cls"),
    [(503, kube.KubeUnavailable), (429, kube.KubeUnavailable), (500, kube.KubeUnavailable),
     (504, kube.KubeUnavailable), (410, kube.KubeExpired), (409, kube.KubeConflict)],
)
def test_it_translates_injected_statuses(gateway, cluster, status, cls):
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    extra = {"retry_after": 1} if status in (429, 503) else {}
    cluster.inject_fault(method="PATCH", path="clustertrainingruntimes", action="status", status=status, count=1,
                         **extra)
    with pytest.raises(kube.KubeError) as caught:
        gateway.apply(ctr, body=runtime("faulty"))
    assert type(caught.value) is cls
    assert caught.value.permanent is False
    assert caught.value.status == status
    # With Retry-After the client must still not retry on its own (the fault would be used up silently).
    if status in (429, 503):
        assert caught.value.retry_after == 1
    # The fault was used up: the same call succeeds now.
    assert gateway.apply(ctr, body=runtime("faulty"))["metadata"]["name"] == "faulty"


def test_it_times_out_a_hanging_server(cluster, settings):
    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 0.5
    gateway = get_gateway()
    cluster.inject_fault(method="GET", path="^/version$", action="hang", seconds=3, count=1)
    with pytest.raises(kube.KubeUnavailable) as caught:
        gateway.server_version()
    assert "timed out" in caught.value.message
    assert caught.value.permanent is False


def test_it_reports_a_dropped_connection_as_transient(gateway, cluster):
    cluster.inject_fault(method="GET", path="^/version$", action="drop", count=1)
    with pytest.raises(kube.KubeUnavailable):
        gateway.server_version()
    assert gateway.server_version()["major"] == "1"


def test_no_client_exception_leaks_from_any_failure(gateway, cluster):
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    calls = [
        lambda: gateway.get(ctr, name="x"),
        lambda: gateway.list(ctr),
        lambda: gateway.apply(ctr, body=runtime("x")),
        lambda: gateway.delete(ctr, name="x"),
        lambda: gateway.server_version(),
        lambda: list(gateway.watch(ctr, resource_version="1", timeout_seconds=1)),
    ]
    for action, extra in (("status", {"status": 500}), ("drop", {}), ("status", {"status": 410})):
        for call in calls:
            cluster.clear_faults()
            cluster.inject_fault(method="*", path="^/(api|apis|version)", action=action, count=1, **extra)
            try:
                call()
            except kube.KubeError:
                pass
            except Exception as exc:  # pragma: no cover - this is the failure we look for
                pytest.fail(f"{type(exc).__module__}.{type(exc).__name__} leaked from the gateway: {exc}")


def test_it_caches_the_gateway_until_settings_change(cluster, settings):
    first = get_gateway()
    assert get_gateway() is first
    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 7.0
    second = get_gateway()
    assert second is not first
    assert second.settings.timeout == 7.0


def test_it_applies_a_copy_never_changing_the_callers_body(gateway):
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    body = runtime("untouched")
    before = copy.deepcopy(body)
    gateway.apply(ctr, body=body)
    assert body == before
