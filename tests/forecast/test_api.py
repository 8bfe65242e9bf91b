"""The forecast API: estimates and accuracy for those who see the whole queue, what-ifs for those who may preview."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from forecast import services
from forecast.models import WhatIf
from tests.contract import api_schema, assert_conforms
from tests.jobs.factories import tracked_job
from trainer_portal.cluster.models import Cluster

pytestmark = pytest.mark.django_db


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def scientist(django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("sam", password="sam-password-1")
    user.groups.add(Group.objects.get_or_create(name="data-scientist")[0])
    return user


def test_estimates_list_the_waiting_jobs_in_order(bob, queue_with_history):
    services.compute_estimates(Cluster.objects.get(is_default=True))
    response = _client(bob).get("/api/v1/forecast/estimates/")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert [(item["name"], item["rank"]) for item in body["items"]] == [("waiter", 1)]
    assert body["items"][0]["p10"] and body["items"][0]["basis"].startswith("1 running job")


def test_a_data_scientist_reads_estimates_on_their_jobs_not_the_whole_queue(scientist):
    response = _client(scientist).get("/api/v1/forecast/estimates/")
    assert response.status_code == 403


def test_an_unknown_cluster_is_a_400_naming_the_field(bob):
    response = _client(bob).get("/api/v1/forecast/estimates/?cluster=nowhere")
    assert response.status_code == 400 and "cluster" in response.content.decode()


def test_a_whatif_that_adds_nodes_runs_and_keeps_both_sides(alice, queue_with_history, eager_celery,
                                                          django_capture_on_commit_callbacks):
    now = timezone.now()
    for index in range(4):  # four 2-node jobs that arrived together over the last day: they queue on 2 nodes
        tracked_job("team-a", f"past-{index}", state="succeeded", num_nodes=2,
                    resources_per_node={"nvidia.com/gpu": "8"}, submitted=now - dt.timedelta(hours=20),
                    admitted=now - dt.timedelta(hours=20 - index), finished_at=now - dt.timedelta(hours=19 - index))
    client = _client(alice)
    zone = "zone-a"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/forecast/whatifs/", {
            "title": "two more nodes", "days": 2, "seed": 3,
            "candidate": {"nodes": [{"domain": zone, "change": "add", "count": 2, "gpusPerNode": 8}]}},
            format="json")
    assert response.status_code == 202, response.content
    whatif_id = response.json()["id"]
    body = client.get(f"/api/v1/forecast/whatifs/{whatif_id}/").json()
    assert body["status"] == "done", body
    assert body["result"]["candidate"]["waitP95Seconds"] < body["result"]["current"]["waitP95Seconds"]
    assert WhatIf.objects.get(pk=whatif_id).jobs > 0


def test_a_whatif_without_a_change_is_refused_naming_the_field(alice):
    response = _client(alice).post("/api/v1/forecast/whatifs/", {"candidate": {}}, format="json")
    assert response.status_code == 400 and "candidate" in response.content.decode()


def test_cancel_stops_a_queued_whatif_and_it_never_runs(alice):
    whatif = WhatIf.objects.create(cluster=Cluster.objects.get(is_default=True),
                                   candidate={"topology": [{"runtime": "x", "topologyLevel": "rack"}]})
    response = _client(alice).post(f"/api/v1/forecast/whatifs/{whatif.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert services.whatif_run(whatif.pk) == "skipped"


def test_the_answers_conform_to_the_schema(alice, queue_with_history):
    services.compute_estimates(Cluster.objects.get(is_default=True))
    services.run_backtest(Cluster.objects.get(is_default=True), checkpoints=2)
    client = _client(alice)
    schema = api_schema()
    for path in ("/api/v1/forecast/estimates/", "/api/v1/forecast/accuracy/", "/api/v1/forecast/whatifs/"):
        response = client.get(path)
        assert response.status_code == 200
        assert_conforms(schema, response, method="get", path=path)


def test_accuracy_says_how_often_the_calibrated_range_held_the_start(bob):
    from django.test import Client

    from forecast.models import ForecastRun

    cluster = Cluster.objects.get(is_default=True)
    report = {"checkpoints": 120, "estimates": 159, "unknown": 0, "medianAbsErrorSeconds": 15_900.0,
              "p90AbsErrorSeconds": 57_000.0, "coverage": 0.26, "baselineMedianAbsErrorSeconds": 60_600.0,
              "heldOut": 103, "rawCoverageHeldOut": 0.39, "calibratedCoverage": 0.8, "history": []}
    ForecastRun.objects.create(cluster=cluster, computed_at=timezone.now(), backtest=report,
                               backtest_at=timezone.now())
    body = _client(bob).get("/api/v1/forecast/accuracy/").json()
    assert (body["heldOut"], body["rawCoverageHeldOut"], body["calibratedCoverage"]) == (103, 0.39, 0.8)
    page = Client()
    page.force_login(bob)
    text = page.get("/forecast/").content.decode()
    assert "over 103 estimates calibrated on earlier moments only, the calibrated range held the true start 80%" in text
