"""Policies on two clusters at once: two real sandboxes, each reached through its own gateway.

The default cluster is the session sandbox (`cluster` fixture, reached through the portal's settings); ``gpu-west``
is a second sandbox started for this module, registered as a `Cluster` row that carries its kubeconfig text.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from runtimes.choices import ClusterState, SyncState
from runtimes.models import PolicySync, RuntimePolicy
from runtimes.services import sync
from runtimes.services.clusters import default_cluster
from tests.sync.conftest import runtime_manifest
from trainer_portal import kube
from trainer_portal.cluster.connections import encrypt_kubeconfig
from trainer_portal.cluster.models import Cluster
from trainer_portal.kube.client import build_gateway
from trainer_portal.kube.config import KubeSettings

WEST = "gpu-west"


@pytest.fixture(scope="module")
def west_sandbox():
    """A second sandbox API server (another cluster), started once for this module."""
    from sandbox.testing import SandboxProcess

    with SandboxProcess(topology="none", controllers=False) as process:
        yield process


@pytest.fixture
def west(west_sandbox, cluster, db):
    """The second sandbox, reset, registered as cluster ``gpu-west`` (its kubeconfig stored on the row)."""
    west_sandbox.clear_faults()
    west_sandbox.reset()
    default_cluster()  # a flushed database gets its default cluster back before the second one is added
    Cluster.objects.create(
        name=WEST, display_name="GPU West", connection="kubeconfig",
        kubeconfig_encrypted=encrypt_kubeconfig(Path(west_sandbox.kubeconfig).read_text()),
    )
    yield west_sandbox
    west_sandbox.clear_faults()


@pytest.fixture
def west_gateway(west):
    """A gateway to the second sandbox built independently of the portal's cluster rows (the test's own view)."""
    return build_gateway(KubeSettings(config_path=west.kubeconfig))


@pytest.fixture
def as_alice(alice):
    client = APIClient()
    client.force_authenticate(alice)
    return client


def _rows(policy) -> dict[str, PolicySync]:
    return {row.cluster.name: row for row in PolicySync.objects.filter(policy=policy).select_related("cluster")}


def _sync_everywhere(as_alice, name: str, callbacks_fixture, body: dict | None = None):
    with callbacks_fixture(execute=True):
        response = as_alice.post(f"/api/v1/runtimes/{name}/sync/", body or {}, format="json")
    return response


def test_a_policy_syncs_to_both_clusters(west, gateway, west_gateway, ctr, make_policy, as_alice, client, alice,
                                         eager_celery, django_capture_on_commit_callbacks):
    make_policy("both")
    response = _sync_everywhere(as_alice, "both", django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.content
    assert response.json()["clusters"] == sorted([default_cluster().name, WEST])

    east_live = gateway.get(ctr, name="both")
    west_live = west_gateway.get(west_gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME), name="both")
    assert east_live is not None and west_live is not None
    rows = _rows(RuntimePolicy.objects.get(name="both"))
    assert {name: (row.sync_state, row.applied_revision) for name, row in rows.items()} == {
        default_cluster().name: (SyncState.SYNCED, 1), WEST: (SyncState.SYNCED, 1)
    }
    # Each row keeps its own cluster's resourceVersion.
    assert rows[WEST].applied_resource_version == west_live["metadata"]["resourceVersion"]
    assert rows[default_cluster().name].applied_resource_version == east_live["metadata"]["resourceVersion"]

    body = as_alice.get("/api/v1/runtimes/both/").json()
    assert body["sync"]["state"] == "synced" and body["sync"]["status"] == "synced"
    assert body["sync"]["clusters"] == "synced on 2 of 2 clusters"
    assert [(c["cluster"], c["syncState"], c["appliedRevision"], c["drift"]) for c in body["clusters"]] == [
        (default_cluster().name, "synced", 1, False), (WEST, "synced", 1, False)
    ]
    client.force_login(alice)
    assert "synced on 2 of 2 clusters" in client.get("/runtimes/").content.decode()


def test_a_drift_on_one_cluster_shows_on_that_cluster_only(
    west, gateway, west_gateway, ctr, make_policy, as_alice, client, alice, eager_celery,
    django_capture_on_commit_callbacks,
):
    make_policy("drifty")
    assert _sync_everywhere(as_alice, "drifty", django_capture_on_commit_callbacks).status_code == 202
    # Someone edits the runtime on gpu-west through that cluster's own API.
    west_ctr = west_gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    west_gateway.merge_patch(west_ctr, name="drifty", patch={"spec": {"mlPolicy": {"numNodes": 7}}})

    response = as_alice.post("/api/v1/runtimes/drifty/drift/check/", {}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["drifted"] is True
    assert {c["cluster"]: c["drifted"] for c in body["clusters"]} == {default_cluster().name: False, WEST: True}
    assert "numNodes" in body["diff"]

    policy = RuntimePolicy.objects.get(name="drifty")
    rows = _rows(policy)
    assert (rows[WEST].sync_state, rows[WEST].cluster_state) == (SyncState.DRIFTED, ClusterState.DRIFTED)
    assert (rows[default_cluster().name].sync_state, rows[default_cluster().name].cluster_state) == (
        SyncState.SYNCED, ClusterState.MATCHES
    )
    assert policy.clusters_summary == f"synced on 1 of 2 clusters; drifted on {WEST}"
    detail = as_alice.get("/api/v1/runtimes/drifty/").json()
    assert {c["cluster"]: (c["drift"], c["clusterState"]) for c in detail["clusters"]} == {
        default_cluster().name: (False, "matches"), WEST: (True, "drifted")
    }
    assert detail["cluster"]["status"] == "drifted" and detail["sync"]["state"] == "drifted"
    client.force_login(alice)
    page = client.get("/runtimes/drifty/").content.decode()
    assert f'data-cluster="{WEST}"' in page and "Drifted" in page
    assert f"drifted on {WEST}" in client.get("/runtimes/?sync=drifted").content.decode()
    drift_page = client.get("/cluster/runtimes/drifty/drift/").content.decode()
    assert f"data-drift-cluster>{WEST}<" in drift_page

    # Re-applying on gpu-west only brings it back; the default cluster is not touched.
    east_rv = gateway.get(ctr, name="drifty")["metadata"]["resourceVersion"]
    with django_capture_on_commit_callbacks(execute=True):
        response = as_alice.post("/api/v1/runtimes/drifty/drift/resolve/",
                                 {"action": "reapply", "clusters": [WEST]}, format="json")
    assert response.status_code == 202, response.content
    assert west_gateway.get(west_ctr, name="drifty")["spec"]["mlPolicy"]["numNodes"] == 2
    assert gateway.get(ctr, name="drifty")["metadata"]["resourceVersion"] == east_rv
    assert RuntimePolicy.objects.get(name="drifty").clusters_summary == "synced on 2 of 2 clusters"


def test_the_watcher_drift_handler_checks_the_cluster_it_watches(west, west_gateway, make_policy, eager_celery):
    from runtimes.handlers import RuntimeDriftHandler

    policy = make_policy("watched-west")
    revision = sync.policy_sync_request(policy=policy)
    for cluster in Cluster.objects.all():
        sync.policy_sync(policy_id=policy.pk, revision=revision, cluster_id=cluster.pk)
    west_ctr = west_gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    west_gateway.delete(west_ctr, name="watched-west")

    handler = RuntimeDriftHandler(cluster=WEST)
    handler.relisted(kube.CLUSTER_TRAINING_RUNTIME, [], "1")
    handler.flush(leader=True)
    rows = _rows(policy)
    assert rows[WEST].cluster_state == ClusterState.MISSING
    assert rows[default_cluster().name].cluster_state == ClusterState.MATCHES

    # A handler without a cluster is the default cluster's: it sees the runtime there and changes nothing.
    default_handler = RuntimeDriftHandler()
    default_handler.relisted(kube.CLUSTER_TRAINING_RUNTIME, [], "1")
    default_handler.flush(leader=True)
    # Told that the default cluster holds nothing, it reads the object there itself and finds it unchanged.
    assert default_handler.checks == 1
    assert (_rows(policy)[default_cluster().name].sync_state, _rows(policy)[default_cluster().name].cluster_state) == (
        SyncState.SYNCED, ClusterState.MATCHES
    )
    assert _rows(policy)[WEST].cluster_state == ClusterState.MISSING


def test_a_policy_restricted_to_one_cluster_syncs_there_only(
    west, gateway, west_gateway, ctr, make_policy, as_alice, eager_celery, django_capture_on_commit_callbacks
):
    make_policy("west-only")
    response = as_alice.put("/api/v1/runtimes/west-only/clusters/", {"targetClusters": [WEST]}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["targetClusters"] == [WEST]
    assert [c["cluster"] for c in response.json()["clusters"]] == [WEST]

    response = _sync_everywhere(as_alice, "west-only", django_capture_on_commit_callbacks)
    assert response.status_code == 202 and response.json()["clusters"] == [WEST]
    assert gateway.get(ctr, name="west-only") is None
    assert west_gateway.get(west_gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME), name="west-only") is not None
    body = as_alice.get("/api/v1/runtimes/west-only/").json()
    assert (body["sync"]["status"], body["sync"]["clusters"]) == ("synced", "synced on 1 of 1 cluster")
    assert body["targetClusters"] == [WEST]

    # A bulk sync covers (policy × target cluster) pairs: this policy on gpu-west only, another on both.
    make_policy("everywhere")
    with django_capture_on_commit_callbacks(execute=True):
        response = as_alice.post("/api/v1/runtimes/sync/", {"names": ["west-only", "everywhere"]}, format="json")
    assert response.status_code == 202 and response.json()["total"] == 3
    progress = as_alice.get(response.json()["statusUrl"]).json()
    assert sorted((item["name"], item["cluster"], item["status"]) for item in progress["items"]) == sorted([
        ("everywhere", default_cluster().name, "succeeded"), ("everywhere", WEST, "succeeded"),
        ("west-only", WEST, "succeeded"),
    ])

    # Back to every cluster: the default cluster now counts, and it does not hold the policy yet.
    as_alice.put("/api/v1/runtimes/west-only/clusters/", {"targetClusters": []}, format="json")
    body = as_alice.get("/api/v1/runtimes/west-only/").json()
    assert body["sync"]["status"] == "draft"
    assert body["sync"]["clusters"] == f"synced on 1 of 2 clusters; not applied on {default_cluster().name}"
    listed = as_alice.get("/api/v1/runtimes/?sync_status=synced").json()
    assert [p["name"] for p in listed["results"]] == ["everywhere"]


@pytest.mark.parametrize(
    ("url", "method", "body", "field"),
    [
        ("/api/v1/runtimes/named/sync/", "post", {"clusters": ["nowhere"]}, "clusters"),
        ("/api/v1/runtimes/named/sync/", "post", {"clusters": "gpu-west"}, "clusters"),
        ("/api/v1/runtimes/named/sync/", "post", {"clusters": []}, "clusters"),
        ("/api/v1/runtimes/sync/", "post", {"clusters": ["nowhere"]}, "clusters"),
        ("/api/v1/runtimes/named/drift/check/", "post", {"clusters": ["nowhere"]}, "clusters"),
        ("/api/v1/runtimes/named/drift/resolve/", "post", {"action": "reapply", "clusters": ["nowhere"]}, "clusters"),
        ("/api/v1/runtimes/named/clusters/", "put", {"targetClusters": ["nowhere"]}, "targetClusters"),
    ],
)
def test_an_unknown_cluster_is_a_400_naming_the_field(west, make_policy, as_alice, url, method, body, field):
    make_policy("named")
    response = getattr(as_alice, method)(url, body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert field in [problem["path"] for problem in error["fields"]]
    assert not PolicySync.objects.exclude(sync_state=SyncState.DRAFT).exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_sync_requests_answer_202_or_409_never_500(west, west_gateway, alice, make_policy, eager_celery):
    # Tasks run inline on the requesting threads (eager), so the requests race the syncs they start as well.
    make_policy("racing")
    login = Client()
    login.force_login(alice)
    cookie = login.cookies["sessionid"].value
    bodies = [{}, {"clusters": [WEST]}, {}, {"clusters": [default_cluster().name, WEST]}, {}, {"clusters": [WEST]}]
    barrier = threading.Barrier(len(bodies) + 1)
    statuses: list[int | None] = [None] * (len(bodies) + 1)

    def request(index: int, call) -> None:
        client = Client(raise_request_exception=False)
        client.cookies["sessionid"] = cookie
        try:
            barrier.wait(timeout=30)
            statuses[index] = call(client).status_code
        finally:
            connection.close()

    calls = [
        (lambda c, b=body: c.post("/api/v1/runtimes/racing/sync/", json.dumps(b), content_type="application/json"))
        for body in bodies
    ]
    calls.append(lambda c: c.post("/api/v1/runtimes/sync/", json.dumps({}), content_type="application/json"))
    threads = [threading.Thread(target=request, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(statuses), statuses
    assert set(statuses) <= {202, 409}, statuses
    assert 202 in statuses
    rows = PolicySync.objects.filter(policy__name="racing")
    assert sorted(rows.values_list("cluster__name", "sync_state", "applied_revision")) == sorted([
        (default_cluster().name, SyncState.SYNCED, 1), (WEST, SyncState.SYNCED, 1)
    ])
    assert west_gateway.get(west_gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME), name="racing") is not None


def test_an_admin_chooses_target_clusters_on_the_policy_page_and_a_stale_form_is_refused(
    west, make_policy, alice, as_alice
):
    make_policy("picked")
    page = Client()
    page.force_login(alice)
    detail = page.get("/runtimes/picked/")
    assert 'href="/cluster/runtimes/picked/targets/"' in detail.content.decode()
    form = page.get("/cluster/runtimes/picked/targets/").content.decode()
    assert 'value="gpu-west"' in form and 'name="expected" value=""' in form

    response = page.post("/cluster/runtimes/picked/targets/", {"scope": "chosen", "clusters": [WEST], "expected": ""})
    assert response.status_code == 302
    assert as_alice.get("/api/v1/runtimes/picked/clusters/").json()["targetClusters"] == [WEST]

    # A second admin's form drawn before that change would silently widen the policy again: refused, unchanged.
    response = page.post("/cluster/runtimes/picked/targets/", {"scope": "all", "expected": ""})
    assert response.status_code == 409 and "changed meanwhile" in response.content.decode()
    response = as_alice.put("/api/v1/runtimes/picked/clusters/",
                            {"targetClusters": [], "expectedTargetClusters": []}, format="json")
    assert response.status_code == 409 and response.json()["error"]["code"] == "conflict"
    assert as_alice.get("/api/v1/runtimes/picked/clusters/").json()["targetClusters"] == [WEST]

    # "Only these" with nothing ticked is a mistake, not "every cluster".
    response = page.post("/cluster/runtimes/picked/targets/", {"scope": "chosen", "expected": WEST})
    assert response.status_code == 400
    response = page.post("/cluster/runtimes/picked/targets/", {"scope": "all", "expected": WEST})
    assert response.status_code == 302
    assert as_alice.get("/api/v1/runtimes/picked/clusters/").json()["targetClusters"] == []


def test_a_viewer_may_not_choose_target_clusters(west, make_policy, bob):
    make_policy("guarded")
    page = Client()
    page.force_login(bob)
    assert page.get("/cluster/runtimes/guarded/targets/").status_code == 403
    assert page.post("/cluster/runtimes/guarded/targets/", {"scope": "all", "expected": ""}).status_code == 403


def test_runtimes_are_adopted_from_the_cluster_the_page_shows(west, west_gateway, gateway, ctr, alice, as_alice):
    west_ctr = west_gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    west_gateway.apply(west_ctr, body=runtime_manifest("west-born", num_nodes=3), force=True)
    page = Client()
    page.force_login(alice)
    cluster_page = page.get(f"/cluster/?cluster={WEST}").content.decode()
    assert f'name="cluster" value="{WEST}"' in cluster_page

    response = page.post("/cluster/adopt/", {"cluster": WEST})
    assert response.status_code == 200 and "west-born" in response.content.decode()
    assert RuntimePolicy.objects.filter(name="west-born").exists()
    assert gateway.get(ctr, name="west-born") is None  # adopting reads gpu-west, writes no cluster

    again = as_alice.post(f"/api/v1/cluster/adopt/?cluster={WEST}")
    assert again.status_code == 200 and again.json()["unchanged"] == ["west-born"]
    unknown = as_alice.post("/api/v1/cluster/adopt/?cluster=nowhere")
    assert unknown.status_code == 400
    assert [field["path"] for field in unknown.json()["error"]["fields"]] == ["cluster"]
    assert page.post("/cluster/adopt/", {"cluster": "nowhere"}).status_code == 404
