"""GET /api/v1/trainjobs/…: fields, filters, cursor pagination, conditional requests and namespace isolation."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.models import TrainJob
from tests.jobs.factories import live_tracker, tracked_job

pytestmark = pytest.mark.django_db

LIST = "/api/v1/trainjobs/"
SUMMARY = "/api/v1/trainjobs/summary/"


@pytest.fixture
def jobs():
    live_tracker()
    return {
        "a1": tracked_job("team-a", "llm-a", state="gang-pending", queue="lq-a"),
        "a2": tracked_job("team-a", "bert-a", state="running", runtime="deepspeed", level="job"),
        "b1": tracked_job("team-b", "llm-b", state="unschedulable"),
    }


def _names(response):
    return [item["name"] for item in response.json()["items"]]


def test_an_admin_sees_every_namespace_with_the_documented_fields(client, alice, jobs):
    client.force_login(alice)

    response = client.get(LIST)

    assert response.status_code == 200
    body = response.json()
    assert sorted(_names(response)) == ["bert-a", "llm-a", "llm-b"]
    item = next(i for i in body["items"] if i["name"] == "llm-a")
    for field in ("namespace", "name", "uid", "runtime", "state", "reason", "message", "since", "submittedAt",
                  "admittedAt", "finishedAt", "numNodes", "podGroups"):
        assert field in item
    assert set(item["podGroups"][0]) >= {"name", "policy", "minCount", "bound", "condition", "reason", "message"}
    assert body["tracking"]["stale"] is False


def test_a_data_scientist_sees_only_granted_namespaces_everywhere(client, dana, jobs):
    client.force_login(dana)

    assert sorted(_names(client.get(LIST))) == ["bert-a", "llm-a"]
    assert _names(client.get(LIST, {"namespace": "team-b"})) == []
    assert _names(client.get(LIST, {"search": "llm"})) == ["llm-a"]
    hidden = client.get("/api/v1/trainjobs/team-b/llm-b/")
    assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "not_found"
    assert client.get("/api/v1/trainjobs/team-a/llm-a/").status_code == 200
    counts = client.get(SUMMARY).json()
    assert counts["total"] == 2 and counts["counts"]["unschedulable"] == 0


def test_a_data_scientist_without_grants_sees_nothing(client, django_user_model, jobs):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("erin", password="erin-password-1")
    user.groups.add(Group.objects.get(name="data-scientist"))
    client.force_login(user)

    assert client.get(LIST).json()["items"] == []
    assert client.get(SUMMARY).json()["total"] == 0


@pytest.mark.parametrize("path", [LIST, SUMMARY, "/api/v1/trainjobs/team-a/llm-a/"])
def test_users_without_a_role_and_anonymous_callers_are_refused(client, charlie, jobs, path):
    assert client.get(path).status_code in (401, 403)
    client.force_login(charlie)
    assert client.get(path).status_code == 403


def test_filters_combine(client, bob, jobs):
    client.force_login(bob)

    assert sorted(_names(client.get(LIST, {"state": "running,unschedulable"}))) == ["bert-a", "llm-b"]
    assert _names(client.get(LIST, {"runtime": "deepspeed"})) == ["bert-a"]
    assert _names(client.get(LIST, {"level": "job"})) == ["bert-a"]
    assert _names(client.get(LIST, {"queue": "lq-a"})) == ["llm-a"]
    assert _names(client.get(LIST, {"namespace": "team-b"})) == ["llm-b"]


@pytest.mark.parametrize(("params", "field"), [
    ({"state": "pending-ish"}, "state"), ({"level": "rack"}, "level"), ({"sort": "color"}, "sort"),
    ({"limit": "0"}, "limit"), ({"limit": "many"}, "limit"), ({"cursor": "garbage!"}, "cursor"),
])
def test_bad_parameters_get_a_400_naming_the_field(client, bob, jobs, params, field):
    client.force_login(bob)

    response = client.get(LIST, params)

    assert response.status_code == 400
    assert response.json()["error"]["fields"][0]["path"] == field


def test_cursor_pages_cover_every_row_once_in_a_stable_order(client, bob):
    live_tracker()
    for i in range(7):
        tracked_job("team-a", f"job-{i:02d}")
    client.force_login(bob)

    seen, url = [], LIST + "?limit=3&sort=name"
    while url:
        body = client.get(url).json()
        seen += [item["name"] for item in body["items"]]
        url = body["next"]
        if len(seen) == 3:  # a job submitted while paging sorts before the cursor and does not shift the pages
            tracked_job("team-a", "aaa-inserted-meanwhile")

    assert seen[:3] == ["job-00", "job-01", "job-02"]
    assert seen[3:] == [f"job-{i:02d}" for i in range(3, 7)]


def test_the_list_costs_the_same_queries_for_5_or_50_rows(client, bob):
    live_tracker()
    client.force_login(bob)

    def queries(count):
        for _ in range(count):
            tracked_job("team-a")
        with CaptureQueriesContext(connection) as captured:
            assert len(client.get(LIST, {"limit": 100}).json()["items"]) >= count
        return len(captured.captured_queries)

    assert queries(5) == queries(45)


def test_an_unchanged_list_answers_304_and_a_change_invalidates_it(client, bob, jobs):
    client.force_login(bob)
    first = client.get(LIST)
    etag = first["ETag"]

    assert client.get(LIST, HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert client.get(SUMMARY, HTTP_IF_NONE_MATCH=etag).status_code == 200  # another view, another token
    # Above every sequence number handed out so far (the factory's counter runs across the whole session).
    newest = TrainJob.objects.order_by("-change_seq").values_list("change_seq", flat=True).first()
    jobs["a1"].state, jobs["a1"].change_seq = "admitted", newest + 1000
    jobs["a1"].save()
    assert client.get(LIST, HTTP_IF_NONE_MATCH=etag).status_code == 200


def test_the_detail_has_tree_timeline_and_reason(client, bob, jobs):
    client.force_login(bob)

    body = client.get("/api/v1/trainjobs/team-a/llm-a/").json()

    assert body["state"] == "gang-pending" and body["reasonCode"] == "GangPending"
    assert [t["toState"] for t in body["timeline"]] == ["gang-pending"]
    assert body["podGroups"][0]["minCount"] == 4
    assert body["tracking"]["message"] == "tracking live"
    assert "explanation" in body


def test_a_stale_tracker_is_reported(client, bob, jobs):
    from jobs.models import TrackerStatus

    TrackerStatus.objects.filter(pk=1).update(connected=False, last_error="connection refused")
    client.force_login(bob)

    tracking = client.get(LIST).json()["tracking"]

    assert tracking["stale"] is True
    assert "cluster unreachable" in tracking["message"] and tracking["message"].startswith("tracking stale since ")


def test_the_schema_documents_the_routes(client, bob):
    client.force_login(bob)

    schema = client.get("/api/schema/?format=json").json()

    for path in ("/api/v1/trainjobs/", "/api/v1/trainjobs/summary/", "/api/v1/trainjobs/{namespace}/{name}/"):
        assert path in schema["paths"]


def _save_snapshot():
    import time

    from tests.jobs.domain.test_explain import _cluster
    from trainer_portal.cluster.snapshots import save_live_snapshot
    from trainer_portal.placement.tracker import LiveSnapshot

    snapshot, _ = _cluster(busy=1)
    save_live_snapshot(LiveSnapshot(snapshot, time.time(), {}, "watch"))


def test_the_detail_explains_why_it_waits_on_the_live_snapshot(client, dana):
    live_tracker()
    _save_snapshot()
    tracked_job("team-a", "waiting", state="unschedulable", num_nodes=3, resources_per_node={"nvidia.com/gpu": "8"},
                pod_groups=[{"name": "waiting-pg", "policy": "gang", "minCount": 3, "members": 3, "bound": 0,
                             "topologyKey": "topology.kubernetes.io/zone", "condition": "", "reason": "",
                             "message": ""}])
    tracked_job("team-b", "holder", state="running", num_nodes=1, creator="grace",
                pods=[{"name": "holder-0", "node": "a0", "phase": "Running", "podGroup": "", "zone": "",
                       "block": "", "rack": ""}])
    tracked_job("team-a", "mine", state="running", num_nodes=1,
                pods=[{"name": "mine-0", "node": "b0", "phase": "Running", "podGroup": "", "zone": "", "block": "",
                       "rack": ""}])
    client.force_login(dana)

    explanation = client.get("/api/v1/trainjobs/team-a/waiting/").json()["explanation"]
    detail = client.get("/api/v1/trainjobs/team-a/mine/").json()

    assert explanation["available"] and explanation["fits"] is False
    assert explanation["message"].startswith("needs 3 nodes × 8 GPUs in one zone; the best zone, ")
    assert explanation["holders"] == [] and explanation["otherNodes"] == 1  # team-b's holder is not named to dana
    assert detail["explanation"] is None  # running: nothing to explain
    assert (detail["pods"][0]["zone"], detail["pods"][0]["rack"]) == ("zone-b", "rb0")


def test_without_a_live_snapshot_the_explanation_says_so(client, bob, jobs):
    client.force_login(bob)

    explanation = client.get("/api/v1/trainjobs/team-a/llm-a/").json()["explanation"]

    assert explanation["available"] is False and "no live cluster snapshot" in explanation["message"]


def test_the_fast_list_representation_equals_drf_s_own(jobs):
    from django.utils import timezone

    from jobs.api.serializers import TrainJobSerializer

    jobs["a2"].admitted_at = jobs["a2"].finished_at = jobs["a2"].gone_at = timezone.now()
    jobs["a2"].pod_groups = [{"name": "g", "policy": "basic", "minCount": None, "bound": 1, "members": 2,
                              "condition": "", "reason": "", "message": "", "topologyKey": "k"}]
    serializer = TrainJobSerializer()
    for job in jobs.values():
        assert serializer.to_representation(job) == dict(serializer.generic_representation(job))


def test_the_detail_says_how_long_admission_took_and_every_time_has_one_format(client, alice):
    import datetime as dt
    import re

    live_tracker()
    submitted = dt.datetime(2026, 12, 1, 12, 0, 26, tzinfo=dt.UTC)
    tracked_job("team-a", "ran", state="running", submitted=submitted,
                admitted=submitted + dt.timedelta(seconds=9, microseconds=324520))
    client.force_login(alice)

    body = client.get("/api/v1/trainjobs/team-a/ran/").json()
    item = client.get(LIST).json()["items"][0]

    assert body["timeToAdmissionSeconds"] == pytest.approx(9.32452)
    times = [body["since"], body["submittedAt"], body["admittedAt"], item["admittedAt"],
             *(entry["at"] for entry in body["timeline"])]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", value) for value in times), times
    assert body["admittedAt"] == "2026-12-01T12:00:35Z"


def test_a_job_whose_runtime_is_missing_never_fits_now(client, dana):
    live_tracker()
    _save_snapshot()
    tracked_job("team-a", "orphan", state="waiting-for-objects", num_nodes=1, pod_groups=[],
                resources_per_node={"nvidia.com/gpu": "8"})
    TrainJob.objects.filter(name="orphan").update(
        reason="TrainingRuntimeNotFound",
        message="ClusterTrainingRuntime 'torch-distributed' does not exist: the Trainer controller creates nothing "
                "until it does (sync the policy, or fix spec.runtimeRef)")
    client.force_login(dana)

    body = client.get("/api/v1/trainjobs/team-a/orphan/").json()

    assert body["reasonCode"] == "TrainingRuntimeNotFound" and body["reason"] == "runtime does not exist"
    assert "torch-distributed" in body["message"]
    assert body["explanation"]["available"] is False and not body["explanation"].get("fits")
    assert "capacity is not why this job waits" in body["explanation"]["message"]


@pytest.mark.parametrize(("state", "reason", "message"), [
    ("waiting-for-startup", "WaitingForStartupOrder",
     "node waits for dataset-initializer and model-initializer to complete; 1 of 2 done"),
    ("queued", "ExceedsMaxQuota", "couldn't assign flavors to pod set node: request > maximum capacity (24 > 16)"),
    ("waiting-for-objects", "TrainerPodsNotCreated", "the trainer's pods are not all created yet (0 / 32 bound)"),
])
def test_fits_now_is_never_said_while_something_other_than_placement_holds_the_job(client, dana, state, reason,
                                                                                    message):
    live_tracker()
    _save_snapshot()
    tracked_job("team-a", "held", state=state, num_nodes=1, pod_groups=[], resources_per_node={"nvidia.com/gpu": "8"})
    TrainJob.objects.filter(name="held").update(reason=reason, message=message)
    client.force_login(dana)

    body = client.get("/api/v1/trainjobs/team-a/held/").json()

    assert body["state"] == state
    assert body["explanation"]["available"] is False and not body["explanation"].get("fits")
    assert body["explanation"]["message"] == f"capacity is not why this job waits: {message}"


def _preempted_by_team_b():
    from jobs.models import TrainJobTransition

    text = "Preempted by PodGroup team-b/b-urgent-7f3a9 (uid 9c1d…)"
    tracked_job("team-b", "b-urgent", state="running")
    job = tracked_job("team-a", "victim", state="preempted",
                      pod_groups=[{"name": "victim-pg", "policy": "gang", "minCount": 4, "bound": 0,
                                   "condition": "DisruptionTarget=True", "reason": "PreemptionByScheduler",
                                   "message": text}],
                      events=[{"type": "Warning", "reason": "Preempted", "message": text, "count": 1,
                               "lastTimestamp": "2026-12-01T12:00:00Z",
                               "involvedObject": {"kind": "PodGroup", "name": "victim-pg"}}])
    TrainJob.objects.filter(pk=job.pk).update(reason="PreemptionByScheduler", message=text)
    TrainJobTransition.objects.filter(job=job).update(message=text)
    return text


def test_a_data_scientist_never_reads_another_namespaces_names(client, dana):
    live_tracker()
    _preempted_by_team_b()
    client.force_login(dana)

    body = client.get("/api/v1/trainjobs/team-a/victim/").json()
    listed = client.get(LIST).json()["items"]
    page = client.get("/jobs/team-a/victim/").content.decode()

    shown = [body["message"], body["podGroups"][0]["message"], body["events"][0]["message"],
             body["timeline"][0]["message"], *(item["message"] for item in listed)]
    assert all("team-b" not in text and "b-urgent" not in text for text in shown), shown
    assert body["message"] == "Preempted by a job in another namespace (uid 9c1d…)"
    assert "team-b/" not in page and "b-urgent" not in page and "a job in another namespace" in page
    # The stored row keeps the full text.
    assert "team-b/b-urgent" in TrainJob.objects.get(name="victim").message


def test_an_admin_reads_the_names(client, alice):
    live_tracker()
    text = _preempted_by_team_b()
    client.force_login(alice)

    assert client.get("/api/v1/trainjobs/team-a/victim/").json()["message"] == text
