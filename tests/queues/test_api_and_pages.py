"""The queues API and pages: who sees what (namespace isolation, other teams as counts), staleness, bad input."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from queues.models import ClusterQueue, LocalQueue, QueuedWorkload, QueueWatchState
from trainer_portal.cluster.models import Cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def queues_model():
    """A ClusterQueue shared by team-a and team-b: team-a's two jobs wait around one of team-b's."""
    cluster = Cluster.objects.get(is_default=True)
    QueueWatchState.objects.create(cluster=cluster, kueue_served=True, heartbeat_at=timezone.now(),
                                   synced_at=timezone.now(), position_source="visibility-api")
    ClusterQueue.objects.create(cluster=cluster, name="cq-shared", cohort="research", pending=3, admitted=1, usage=[
        {"flavor": "default-flavor", "resource": "nvidia.com/gpu", "nominal": 16.0, "used": 16.0, "borrowed": 0.0,
         "lendable": 0.0, "borrowable": 8.0, "borrowingLimit": None, "lendingLimit": None}])
    for namespace in ("team-a", "team-b"):
        LocalQueue.objects.create(cluster=cluster, namespace=namespace, name="user-queue", cluster_queue="cq-shared")
    for position, (namespace, job, local) in enumerate((("team-a", "a-first", 0), ("team-b", "b-secret", 0),
                                                        ("team-a", "a-second", 1))):
        QueuedWorkload.objects.create(cluster=cluster, namespace=namespace, name=f"trainjob-{job}-1a2b3",
                                      local_queue="user-queue", cluster_queue="cq-shared", state="pending",
                                      position_in_cluster_queue=position, position_in_local_queue=local,
                                      reason="WaitingForQuota", message="insufficient unused quota",
                                      job_kind="TrainJob", job_name=job, job_uid=f"uid-{job}")
    QueuedWorkload.objects.create(cluster=cluster, namespace="team-b", name="trainjob-b-running-1a2b3",
                                  local_queue="user-queue", cluster_queue="cq-shared", state="admitted",
                                  job_kind="TrainJob", job_name="b-running", job_uid="uid-b-running")
    return cluster


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_data_scientist_sees_their_local_queues_and_others_as_counts(dana, queues_model):
    body = _api(dana).get("/api/v1/queues/").json()
    assert [(q["namespace"], q["name"]) for q in body["localQueues"]] == [("team-a", "user-queue")]
    assert body["hiddenLocalQueues"] == 1
    assert [q["name"] for q in body["clusterQueues"]] == ["cq-shared"]
    assert body["cohorts"] == [] and body["stale"] is False

    detail = _api(dana).get("/api/v1/queues/clusterqueues/cq-shared/").json()
    assert [(line["kind"], line["count"], (line["workload"] or {}).get("job", {}).get("name") if line["workload"]
             else None) for line in detail["pending"]] == [("workload", 1, "a-first"), ("hidden", 1, None),
                                                          ("workload", 1, "a-second")]
    assert detail["pending"][2]["workload"]["positionInClusterQueue"] == 3
    assert (detail["admitted"], detail["admittedHidden"], detail["hiddenLocalQueues"]) == ([], 1, 1)
    assert "b-secret" not in str(detail) and "b-running" not in str(detail)


def test_a_local_queue_of_another_team_is_a_404_like_a_missing_one(dana, queues_model):
    own = _api(dana).get("/api/v1/queues/localqueues/team-a/user-queue/")
    assert own.status_code == 200
    assert [(w["job"]["name"], w["positionInLocalQueue"]) for w in own.json()["pending"]] == [("a-first", 1),
                                                                                               ("a-second", 2)]
    other = _api(dana).get("/api/v1/queues/localqueues/team-b/user-queue/")
    missing = _api(dana).get("/api/v1/queues/localqueues/team-a/nope/")
    assert other.status_code == missing.status_code == 404
    assert "b-secret" not in other.content.decode()


def test_a_viewer_sees_every_team(bob, queues_model):
    detail = _api(bob).get("/api/v1/queues/clusterqueues/cq-shared/").json()
    assert [line["workload"]["job"]["name"] for line in detail["pending"]] == ["a-first", "b-secret", "a-second"]
    assert [w["job"]["name"] for w in detail["admitted"]] == ["b-running"]


def test_without_a_role_the_queues_are_refused(charlie, queues_model, client):
    assert _api(charlie).get("/api/v1/queues/").status_code == 403
    client.force_login(charlie)
    assert client.get("/queues/").status_code == 403


def test_an_unknown_cluster_is_a_400_naming_the_field(bob, queues_model, client):
    response = _api(bob).get("/api/v1/queues/?cluster=nowhere")
    assert response.status_code == 400 and "cluster" in response.content.decode()
    client.force_login(bob)
    page = client.get("/queues/?cluster=nowhere")
    assert page.status_code == 400 and "nowhere" in page.content.decode()
    assert _api(bob).get("/api/v1/queues/clusterqueues/nope/").status_code == 404


def test_the_cluster_queue_page_shows_others_only_as_counts(dana, queues_model, client):
    client.force_login(dana)
    page = client.get("/queues/clusterqueues/cq-shared/").content.decode()
    assert "a-first" in page and "a-second" in page
    assert "1 workload of other namespaces" in page and "b-secret" not in page
    assert 'hx-trigger="every 1s"' in page  # live, and complete without it
    overview = client.get("/queues/").content.decode()
    assert "team-a/user-queue" in overview and "team-b/user-queue" not in overview
    assert "1 LocalQueue of other namespaces" in overview


def test_old_watcher_data_says_as_of_and_stale(dana, queues_model, client):
    QueueWatchState.objects.update(heartbeat_at=timezone.now() - dt.timedelta(minutes=5),
                                   synced_at=timezone.now() - dt.timedelta(minutes=5))
    client.force_login(dana)
    page = client.get("/queues/localqueues/team-a/user-queue/").content.decode()
    assert "(stale)" in page and "stopped reporting" in page
    assert _api(dana).get("/api/v1/queues/").json()["stale"] is True


def test_a_live_poll_gets_304_until_the_queue_changes(dana, queues_model, client):
    client.force_login(dana)
    url = "/queues/clusterqueues/cq-shared/"
    etag = client.get(url)["ETag"]
    assert client.get(url, headers={"HX-Request": "true", "If-None-Match": etag}).status_code == 304
    assert client.get(url, headers={"If-None-Match": etag}).status_code == 200  # a plain reload renders

    from queues.services import apply_changes

    apply_changes(queues_model.pk, {"workloads": ({("team-a", "trainjob-a-first-1a2b3"): {
        "uid": "", "local_queue": "user-queue", "cluster_queue": "cq-shared", "state": "admitted", "priority": 0,
        "queued_at": "", "position_in_cluster_queue": None, "position_in_local_queue": None, "reason": "",
        "message": "", "job_kind": "TrainJob", "job_name": "a-first", "job_uid": "uid-a-first", "requests": {}}}, [])},
        full=False)
    changed = client.get(url, headers={"HX-Request": "true", "If-None-Match": etag})
    assert changed.status_code == 200 and changed["ETag"] != etag
