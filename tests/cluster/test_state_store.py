"""State in the database: the live snapshot (versioned binary format, per-process cache keyed by version) and the
cluster's checked status and scheduling facts, per cluster; GETs read them and write nothing."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from runtimes.services import policies as policy_services
from tests.domain.test_policy_cases import with_scheduling
from trainer_portal.cluster import snapshots, status
from trainer_portal.cluster.models import Cluster, ClusterHealth, TopologySnapshot
from trainer_portal.placement.engine import place
from trainer_portal.placement.requests import PlacementRequest
from trainer_portal.placement.synthetic import synthetic_cluster
from trainer_portal.placement.tracker import LiveSnapshot, TopologyTracker, snapshot_fingerprint

pytestmark = pytest.mark.django_db
ZONE = "topology.kubernetes.io/zone"


def _node(name: str, rack: str, gpus: int = 8, taint: bool = False) -> dict:
    spec = {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]} if taint else {}
    return {"metadata": {"name": name, "labels": {ZONE: "z1", "cloud.provider.com/topology-block": "b1",
                                                  "topology.kubernetes.io/rack": rack, "kubernetes.io/hostname": name,
                                                  "team": "a" if gpus == 8 else "b"}},
            "spec": spec,
            "status": {"allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "32", "memory": "256Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, node: str, gpus: int) -> dict:
    return {"metadata": {"name": name, "namespace": "ml"}, "spec": {"nodeName": node, "containers": [
        {"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]}, "status": {"phase": "Running"}}


def tracked_live(nodes: int = 12) -> LiveSnapshot:
    tracker = TopologyTracker(snapshots.topology_keys())
    tracker.relist_nodes([_node(f"n{i}", f"r{i % 3}", gpus=8 if i % 4 else 4, taint=i == 5) for i in range(nodes)],
                         "10")
    tracker.relist_pods([_pod(f"p{i}", f"n{i}", gpus=2) for i in range(0, nodes, 2)], "11")
    return tracker.to_live(source="watch", server="https://east.example", stats={"pods": nodes // 2})


def test_the_stored_format_round_trips_a_snapshot_without_pickle():
    live = tracked_live()

    blob = snapshots.encode_live(live)
    back = snapshots.decode_live(blob)

    assert snapshot_fingerprint(back.snapshot) == snapshot_fingerprint(live.snapshot)
    assert back.label_keys() == live.label_keys() and back.server == "https://east.example"
    assert back.snapshot.taint_sets == live.snapshot.taint_sets
    assert back.snapshot.to_summary()["zones"] == live.snapshot.to_summary()["zones"]
    assert blob.startswith(b"trainer-portal topology snapshot\n") and b"\x80\x05" not in blob[:64]  # no pickle
    assert not back.snapshot.alloc_gpu.flags.writeable  # a view of the stored bytes: readers copy before changing
    assert back.snapshot.copy().alloc_gpu.flags.writeable
    request = PlacementRequest(name="job", pod_count=4, resources={"nvidia.com/gpu": 4}, policy="gang",
                               topology_key=ZONE)
    ours, theirs = place([request], back.snapshot.copy()).to_dict(), place([request], live.snapshot.copy()).to_dict()
    ours.pop("snapshotVersion"), theirs.pop("snapshotVersion")  # stamps are unique per object, by design
    assert ours == theirs and ours["fits"] is True


def test_a_50k_node_synthetic_cluster_round_trips():
    snapshot = synthetic_cluster(zones=2, blocks_per_zone=4, racks=400, nodes_per_rack=125, gpus_per_node=8,
                                 fragmentation="F2", seed=3)
    live = LiveSnapshot(snapshot, time.time(), {}, "list")
    back = snapshots.decode_live(snapshots.encode_live(live))
    assert back.snapshot.node_count == 50_000
    assert snapshot_fingerprint(back.snapshot) == snapshot_fingerprint(snapshot)


def test_a_damaged_or_foreign_blob_reads_as_no_snapshot():
    with pytest.raises(snapshots.SnapshotFormatError):
        snapshots.decode_live(b"\x80\x05not a snapshot")
    blob = snapshots.encode_live(tracked_live())
    with pytest.raises(snapshots.SnapshotFormatError):
        snapshots.decode_live(blob[: len(blob) // 2])  # truncated
    objects = snapshots._pack({"names": np.array(["a"], dtype=object)}, {"format": snapshots.FORMAT})
    with pytest.raises(snapshots.SnapshotFormatError, match="objects"):
        snapshots.decode_live(objects)
    snapshots.save_live_snapshot(tracked_live())
    TopologySnapshot.objects.update(blob=b"garbage", version=99)
    snapshots.clear_cache()
    assert snapshots.live_snapshot() is None


def test_a_reader_decodes_each_version_once_and_sees_the_next_save(settings):
    settings.SNAPSHOT_RECHECK_MS = 0
    assert snapshots.live_snapshot() is None
    assert snapshots.save_live_snapshot(tracked_live(6)) == 1
    before = snapshots.stats["decodes"]

    first = snapshots.live_snapshot()
    again = snapshots.live_snapshot()

    assert first is again and first.snapshot.node_count == 6
    assert snapshots.stats["decodes"] == before + 1
    assert snapshots.save_live_snapshot(tracked_live(9)) == 2
    assert snapshots.live_snapshot().snapshot.node_count == 9
    assert snapshots.stats["decodes"] == before + 2


def test_within_the_recheck_interval_a_cached_read_asks_the_database_nothing(settings):
    settings.SNAPSHOT_RECHECK_MS = 60_000
    snapshots.save_live_snapshot(tracked_live())
    snapshots.live_snapshot()
    with CaptureQueriesContext(connection) as queries:
        assert snapshots.live_snapshot() is not None
    assert len(queries) == 0
    settings.SNAPSHOT_RECHECK_MS = 0
    with CaptureQueriesContext(connection) as queries:
        assert snapshots.live_snapshot() is not None
    assert len(queries) == 1  # the version, nothing else


def test_a_heartbeat_moves_the_age_without_a_new_version(settings):
    settings.SNAPSHOT_RECHECK_MS = 0
    live = tracked_live()
    live.taken_at = time.time() - 500
    snapshots.save_live_snapshot(live)
    assert snapshots.live_snapshot().age_seconds > 400
    decodes = snapshots.stats["decodes"]

    assert snapshots.touch_live_snapshot() is True

    assert snapshots.live_snapshot().age_seconds < 60 and snapshots.snapshot_version() == 1
    assert snapshots.stats["decodes"] == decodes


def test_each_cluster_has_its_own_snapshot(settings):
    settings.SNAPSHOT_RECHECK_MS = 0
    west = Cluster.objects.create(name="gpu-west")
    snapshots.save_live_snapshot(tracked_live(4))
    snapshots.save_live_snapshot(tracked_live(7), west)

    assert snapshots.live_snapshot().snapshot.node_count == 4
    assert snapshots.live_snapshot("gpu-west").snapshot.node_count == 7
    assert snapshots.live_snapshot(west).snapshot.node_count == 7
    assert snapshots.live_snapshot("nowhere") is None
    with pytest.raises(Cluster.DoesNotExist):
        snapshots.save_live_snapshot(tracked_live(), "nowhere")


def _health(cluster: Cluster, *, reachable: bool = True, mode: str = "union", gate: bool | None = True,
            checked_at: float | None = None) -> None:
    when = checked_at or time.time()
    found = {"connection": "kubeconfig x", "field_manager": "trainer-portal", "reachable": reachable,
             "error": "" if reachable else "The API server did not answer", "hint": "", "version": None,
             "apis": [], "scheduling_versions": [], "crd_scheduling": None, "scheduling_support": None,
             "topology_gate": {"enabled": gate, "message": "", "hint": ""},
             "crd_schema": {"present": True, "disruption_mode": mode}, "permissions": [], "checked_at": when,
             "elapsed_ms": 3.0}
    status.record_check(cluster, found)


@pytest.fixture
def api(bob):
    client = APIClient()
    client.force_authenticate(bob)
    return client


def test_the_api_answers_for_the_default_and_any_named_cluster(api):
    west = Cluster.objects.create(name="gpu-west")
    _health(Cluster.objects.get(is_default=True), mode="union")
    _health(west, reachable=False)

    default = api.get("/api/v1/cluster/?dialect=camel").json()
    named = api.get("/api/v1/cluster/?cluster=gpu-west&dialect=camel").json()
    path = api.get("/api/v1/cluster/gpu-west/?dialect=camel").json()

    assert default["cluster"] == "default" and default["reachable"] is True and default["checked"] is True
    assert named["cluster"] == "gpu-west" and named["reachable"] is False
    assert path == {**named, **{k: path[k] for k in ("worker", "beat", "queueDepth") if k in path}}
    missing = api.get("/api/v1/cluster/?cluster=gpu-north")
    assert missing.status_code == 404
    assert missing.json()["error"]["fields"][0]["path"] == "cluster"
    assert "gpu-west" in missing.json()["error"]["message"]
    assert api.get("/api/v1/cluster/gpu-north/").status_code == 404


def test_before_the_first_check_the_api_says_so(api):
    body = api.get("/api/v1/cluster/?dialect=camel").json()
    assert body["checked"] is False and body["reachable"] is False and body["checkedAt"] is None
    assert "not been checked yet" in body["error"]


def test_the_page_says_as_of_when_and_that_the_cluster_was_unreachable(client, bob, settings):
    settings.CLUSTER_CHECK_INTERVAL_SECONDS = 60
    _health(Cluster.objects.get(is_default=True), reachable=False, checked_at=datetime(
        2026, 5, 1, 12, 4, tzinfo=UTC).timestamp())
    client.force_login(bob)
    page = client.get("/cluster/").content.decode()
    assert "As of 12:04 (cluster unreachable)" in page and "stale:" in page
    assert client.get("/cluster/?cluster=gpu-north").status_code == 404


def test_the_page_picks_a_cluster(client, bob):
    Cluster.objects.create(name="gpu-west", display_name="West")
    _health(Cluster.objects.get(name="gpu-west"))
    client.force_login(bob)
    page = client.get("/cluster/?cluster=gpu-west").content.decode()
    assert "Cluster gpu-west" in page and "(West)" in page and 'href="?cluster=default"' in page
    assert "(cluster reachable)" in page


def test_validation_follows_the_stored_facts_whatever_the_var_dir(settings, tmp_path, alice):
    manifest = with_scheduling("torch", {"schedulingPolicy": {"gang": {}}, "disruptionMode": {"all": {}}})
    codes = lambda: [p.code for p in policy_services.policy_validate(manifest=manifest).problems]  # noqa: E731
    assert "scheduling.disruption_mode.cluster_form" not in codes()

    _health(Cluster.objects.get(is_default=True), mode="string")
    assert "scheduling.disruption_mode.cluster_form" in codes()
    settings.VAR_DIR = tmp_path / "another-replica"
    assert "scheduling.disruption_mode.cluster_form" in codes()

    # A later check that cannot reach the cluster keeps the facts of the last one that could.
    _health(Cluster.objects.get(is_default=True), reachable=False, mode="")
    assert status.scheduling_facts()["disruption_mode"] == "string"


def _writes(queries) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]


def test_no_get_writes_anything(client, bob, api, settings):
    settings.SNAPSHOT_RECHECK_MS = 0
    snapshots.save_live_snapshot(tracked_live())
    _health(Cluster.objects.get(is_default=True))
    client.force_login(bob)
    client.get("/")  # the session exists before we count
    counts = (TopologySnapshot.objects.count(), ClusterHealth.objects.count(),
              list(ClusterHealth.objects.values_list("checked_at", "facts")))
    urls = ["/cluster/", "/cluster/?cluster=default", "/preview/", "/runtimes/", "/jobs/"]
    api_urls = ["/api/v1/cluster/", "/api/v1/cluster/default/", "/api/v1/runtimes/", "/api/v1/trainjobs/"]
    with CaptureQueriesContext(connection) as queries:
        for url in urls:
            assert client.get(url).status_code == 200, url
        for url in api_urls:
            assert api.get(url).status_code == 200, url
    assert _writes(queries) == []
    assert counts == (TopologySnapshot.objects.count(), ClusterHealth.objects.count(),
                      list(ClusterHealth.objects.values_list("checked_at", "facts")))
    assert not (settings.VAR_DIR / "cluster").exists() and not (settings.VAR_DIR / "topology").exists()


@pytest.fixture
def broker(tmp_path):
    """Publish to a broker folder of the test's own; yields the folder messages land in."""
    from trainer_portal.celery import app

    folder = tmp_path / "broker"
    folder.mkdir()
    (tmp_path / "control").mkdir()
    saved = (app.conf.get("broker_write_url"), app.conf.broker_transport_options, app.conf.task_always_eager)

    def use(url, options, eager):
        app.conf.broker_write_url, app.conf.broker_transport_options, app.conf.task_always_eager = url, options, eager
        app._pool = None
        app.amqp._producer_pool = None

    use("atomicfs://", {"data_folder_in": str(folder), "data_folder_out": str(folder),
                        "control_folder": str(tmp_path / "control")}, False)
    yield folder
    use(*saved)


def test_check_now_queues_a_background_check_once(api, broker, client, bob):
    first = api.post("/api/v1/cluster/default/check/")
    second = api.post("/api/v1/cluster/default/check/")

    assert first.status_code == 202 and first.json()["queued"] is True
    assert second.status_code == 202 and second.json()["queued"] is False
    assert ClusterHealth.objects.get().check_requested_at is not None
    assert len(list(broker.glob("*.msg"))) == 1  # one message for the worker; nothing reached the cluster
    assert api.post("/api/v1/cluster/gpu-north/check/").status_code == 404
    assert api.get("/api/v1/cluster/default/check/").status_code == 405

    client.force_login(bob)
    response = client.post("/cluster/check/", {"cluster": "default"}, follow=True)
    assert response.redirect_chain[-1][0] == "/cluster/?cluster=default"
    assert "check of default is already on its way" in response.content.decode()


def test_check_now_answers_503_with_retry_after_when_the_broker_refuses(api, broker):
    import shutil

    shutil.rmtree(broker)
    response = api.post("/api/v1/cluster/default/check/")
    assert response.status_code == 503 and response["Retry-After"]
    assert "broker" in response.json()["error"]["message"]


def test_the_check_task_stores_an_unreachable_cluster_within_the_probe_timeout(settings, tmp_path):
    from trainer_portal.cluster.tasks import cluster_check_task
    from trainer_portal.kube.client import reset_gateway

    settings.KUBE_CONFIG_PATH = str(tmp_path / "absent")
    reset_gateway()
    try:
        assert cluster_check_task() == "default: unreachable"
    finally:
        reset_gateway()
    stored = status.stored_status()
    assert stored["checked"] is True and stored["reachable"] is False and "TRAINER_PORTAL_KUBECONFIG" in stored["hint"]


def test_a_nul_or_broken_text_from_the_cluster_is_stored_cleanly():
    cluster = Cluster.objects.get(is_default=True)
    _health(cluster, reachable=False)
    found = dict(ClusterHealth.objects.get().status, error="refused\x00 by \ud800 proxy")
    status.record_check(cluster, found)
    assert status.stored_status()["error"] == "refused by ? proxy"
