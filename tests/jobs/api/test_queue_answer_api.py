"""The TrainJob API joined to what other apps know through ``trainer_portal.jobfacts``: ``queue`` (place in
Kueue's line), ``estimatedStart``, and the quota sentence in ``message`` and ``reason`` while quota holds the job."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from jobs.api.serializers import TrainJobSerializer
from tests.jobs.factories import live_tracker, tracked_job
from trainer_portal import jobfacts

pytestmark = pytest.mark.django_db

LIST = "/api/v1/trainjobs/"
KUEUE_TEXT = "request > maximum capacity (24 > 16)"


@pytest.fixture
def providers():
    """Queue facts and start estimates for team-a's jobs, as the queues and forecast apps would give them."""
    computed = timezone.now().replace(microsecond=0)

    def queues(refs):
        return {ref: jobfacts.QueueFacts("lq-a", "cq-research", 3, "LocalQueue", 7, "visibility-api",
                                         (jobfacts.QuotaLine("nvidia.com/gpu", "h100", 32, 64, 48, 8),))
                for ref in refs if ref.namespace == "team-a"}

    def starts(refs):
        return {ref: jobfacts.StartEstimate(computed + dt.timedelta(hours=1), computed + dt.timedelta(hours=2),
                                            computed + dt.timedelta(hours=4), "simulated from 12 finished jobs",
                                            computed)
                for ref in refs if ref.namespace == "team-a"}

    jobfacts.register_queue_provider("test-queues", queues)
    jobfacts.register_start_provider("test-starts", starts)
    yield computed
    jobfacts._queue_providers.pop("test-queues", None)
    jobfacts._start_providers.pop("test-starts", None)


def test_a_job_waiting_for_quota_says_the_numbers_its_place_and_when_it_may_start(client, alice, providers):
    live_tracker()
    tracked_job("team-a", "llm-a", state="queued", queue="lq-a", reason="WaitingForQuota", message="insufficient")
    tracked_job("team-b", "llm-b", state="running", reason="Running", message="4 / 4 gang pods running")
    client.force_login(alice)

    items = {item["name"]: item for item in client.get(LIST).json()["items"]}

    queued = items["llm-a"]
    assert queued["queue"] == {"localQueue": "lq-a", "clusterQueue": "cq-research", "position": 3,
                               "positionIn": "LocalQueue", "pendingInQueue": 7, "positionSource": "visibility-api"}
    assert queued["message"].startswith("Waiting for quota in cq-research: needs 32 GPUs, 16 free of 64 (48 in use, "
                                        "8 borrowable from the cohort); position 3 of 7 in team-a's queue.")
    assert queued["reason"] == "waiting for quota · #3 of 7" and queued["reasonCode"] == "WaitingForQuota"
    start = providers + dt.timedelta(hours=2)
    assert queued["estimatedStart"]["p50"] == start.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert queued["estimatedStart"]["basis"] == "simulated from 12 finished jobs"
    assert items["llm-b"]["queue"] is None and items["llm-b"]["estimatedStart"] is None


def test_an_inadmissible_job_shows_the_state_and_kueue_s_words_without_a_provider(client, alice):
    live_tracker()
    tracked_job("team-a", "big", state="inadmissible", queue="lq-a", reason="ExceedsMaxQuota", message=KUEUE_TEXT)
    client.force_login(alice)

    item = client.get(LIST, {"state": "inadmissible"}).json()["items"][0]

    assert (item["state"], item["reason"], item["message"]) == ("inadmissible", "exceeds the queue's quota",
                                                                 KUEUE_TEXT)
    assert item["queue"]["positionSource"] == "unknown" and item["queue"]["position"] is None
    assert client.get("/api/v1/trainjobs/summary/").json()["counts"]["inadmissible"] == 1
    page = client.get("/jobs/", {"state": "inadmissible"})
    assert page.status_code == 200 and "Inadmissible" in page.content.decode()


def test_a_broken_provider_costs_its_facts_never_the_answer(client, alice):
    live_tracker()
    tracked_job("team-a", "llm-a", state="queued", queue="lq-a", reason="WaitingForQuota", message="insufficient")

    def broken(refs):
        raise RuntimeError("queues app is down")

    jobfacts.register_queue_provider("test-broken", broken)
    try:
        client.force_login(alice)
        item = client.get(LIST).json()["items"][0]
    finally:
        jobfacts._queue_providers.pop("test-broken", None)

    assert item["message"] == "insufficient" and item["queue"]["localQueue"] == "lq-a"


def test_the_fast_representation_equals_drf_s_own_with_facts_joined(providers):
    from jobs.selectors import join_answers

    job = tracked_job("team-a", "llm-a", state="queued", queue="lq-a", reason="WaitingForQuota", message="x")
    join_answers([job])
    serializer = TrainJobSerializer()

    assert serializer.to_representation(job) == dict(serializer.generic_representation(job))


def test_the_job_page_shows_the_place_in_line_and_the_estimate_and_the_list_a_compact_form(client, alice, providers):
    live_tracker()
    tracked_job("team-a", "llm-a", state="queued", queue="lq-a", reason="WaitingForQuota", message="insufficient")
    client.force_login(alice)

    page = client.get("/jobs/team-a/llm-a/").content.decode()
    listing = client.get("/jobs/").content.decode()

    assert "Position 3 of 7 in team-a&#x27;s queue" in page and "ClusterQueue cq-research" in page
    assert "Estimated start" in page and "simulated from 12 finished jobs" in page
    assert 'class="badge badge--info jobs-position"' in listing and "#3</span>" in listing
    assert "starts in ~" in listing
