"""The jobs list: visibility, filters, counts, stable order, empty states, stale tracking and the live partial."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from jobs import services
from jobs.models import TrainJob
from tests.jobs.factories import live_tracker, tracked_job

pytestmark = pytest.mark.django_db


def _names(response) -> list[str]:
    return re.findall(r'<tr id="job-[^"]+"[^>]*>.*?<a href="/jobs/[^/]+/([^/]+)/">', response.content.decode(), re.S)


@pytest.fixture
def two_teams():
    live_tracker()
    return {
        "a1": tracked_job("team-a", "a-pending", state="gang-pending", runtime="torch-distributed", queue="gpu-a"),
        "a2": tracked_job("team-a", "a-running", state="running", runtime="deepspeed", level="replicatedjob"),
        "b1": tracked_job("team-b", "b-unschedulable", state="unschedulable", runtime="torch-distributed"),
    }


def test_a_data_scientist_sees_only_granted_namespaces(client, dana, two_teams):
    client.force_login(dana)

    response = client.get("/jobs/")

    assert response.status_code == 200
    assert sorted(_names(response)) == ["a-pending", "a-running"]
    assert "b-unschedulable" not in response.content.decode()
    assert "team-b" not in response.content.decode()  # not even as a filter choice


def test_a_viewer_sees_every_namespace(client, bob, two_teams):
    client.force_login(bob)

    response = client.get("/jobs/")

    assert sorted(_names(response)) == ["a-pending", "a-running", "b-unschedulable"]


def test_a_row_shows_namespace_runtime_link_size_level_state_reason_and_queue(client, bob, two_teams):
    client.force_login(bob)

    html = client.get("/jobs/").content.decode()
    row = re.search(rf'<tr id="job-{two_teams["a1"].uid}".*?</tr>', html, re.S).group(0)

    assert "team-a" in row
    assert 'href="/runtimes/torch-distributed/"' in row
    assert "4 × 8 GPUs" in row
    assert "TrainJob" in row
    assert "Gang pending" in row
    assert "GangPending" in row and "gang-pending for a reason" in row
    assert "gpu-a" in row


def test_search_and_every_filter_narrow_the_list(client, bob, two_teams):
    client.force_login(bob)

    assert _names(client.get("/jobs/?q=unsched")) == ["b-unschedulable"]
    assert _names(client.get("/jobs/?namespace=team-b")) == ["b-unschedulable"]
    assert _names(client.get("/jobs/?state=running")) == ["a-running"]
    assert _names(client.get("/jobs/?runtime=deepspeed")) == ["a-running"]
    assert _names(client.get("/jobs/?level=replicatedjob")) == ["a-running"]
    assert _names(client.get("/jobs/?queue=gpu-a")) == ["a-pending"]


def test_a_data_scientist_cannot_filter_into_another_namespace(client, dana, two_teams):
    client.force_login(dana)

    response = client.get("/jobs/?namespace=team-b")

    assert response.status_code == 400
    assert "namespace" in response.content.decode()
    assert _names(response) == []


def test_an_invalid_filter_is_a_400_naming_the_field(client, bob, two_teams):
    client.force_login(bob)

    response = client.get("/jobs/?state=waiting-forever&sort=chaos")

    assert response.status_code == 400
    html = response.content.decode()
    assert "state:" in html and "sort:" in html


def test_counts_per_state_are_links_that_filter(client, dana, two_teams):
    client.force_login(dana)

    html = client.get("/jobs/").content.decode()
    counts = re.search(r'<nav id="jobs-counts".*?</nav>', html, re.S).group(0)

    assert re.search(r'href="\?state=gang-pending"[^>]*><span[^>]*>1</span> Gang pending', counts)
    assert re.search(r'href="\?state=running"[^>]*><span[^>]*>1</span> Running', counts)
    assert "Unschedulable" not in counts  # team-b's job is not counted for dana
    assert re.search(r'<span class="jobs-count__n">2</span> All', counts)


def test_rows_keep_their_order_when_a_job_changes_state(client, bob, two_teams):
    client.force_login(bob)
    before = _names(client.get("/jobs/"))
    TrainJob.objects.filter(pk=two_teams["a2"].pk).update(state="failed", since=timezone.now(), change_seq=99)

    after = _names(client.get("/jobs/"))

    assert after == before


def test_sorting_by_size_puts_ties_in_a_stable_order(client, bob):
    live_tracker()
    for i in range(5):
        tracked_job("team-a", f"same-{i}", num_nodes=2)
    tracked_job("team-a", "big", num_nodes=16)
    client.force_login(bob)

    first = _names(client.get("/jobs/?sort=-size"))
    second = _names(client.get("/jobs/?sort=-size"))

    assert first[0] == "big"
    assert first == second
    assert set(first[1:]) == {f"same-{i}" for i in range(5)}


def test_pages_follow_a_cursor_without_repeating_rows(client, bob, monkeypatch):
    from jobs import views

    live_tracker()
    for i in range(7):
        tracked_job("team-a", f"job-{i}")
    monkeypatch.setattr(views, "PAGE_SIZE", 3)
    client.force_login(bob)

    seen: list[str] = []
    url = "/jobs/"
    while url:
        html = client.get(url).content.decode()
        seen += re.findall(r'<a href="/jobs/team-a/([^/]+)/">', html)
        match = re.search(r'href="(\?cursor=[^"]+)">Next page', html)
        url = "/jobs/" + match.group(1).replace("&amp;", "&") if match else None

    assert sorted(seen) == sorted(f"job-{i}" for i in range(7))


def test_a_data_scientist_without_grants_is_told_whom_to_ask(client, django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("erin")
    user.groups.add(Group.objects.get(name="data-scientist"))
    tracked_job("team-a", "secret-run")
    client.force_login(user)

    html = client.get("/jobs/").content.decode()

    assert "You have no namespace grants: ask a platform admin (Grants page) to grant your group a namespace" in html
    assert "secret-run" not in html


def test_an_empty_cluster_says_how_to_get_jobs_here(client, bob):
    live_tracker()
    client.force_login(bob)

    assert "No TrainJobs yet" in client.get("/jobs/").content.decode()


def test_stale_tracking_is_said_prominently_and_states_are_dimmed(client, bob):
    tracker = live_tracker()
    tracker.connected = False
    tracker.error_since = timezone.now() - dt.timedelta(minutes=3)
    tracker.save()
    tracked_job("team-a", "old-news", state="running")
    client.force_login(bob)

    html = client.get("/jobs/").content.decode()

    assert re.search(r'role="alert">\s*<strong>Tracking stale since \d\d:\d\d — cluster unreachable', html)
    assert "jobs-state--stale" in html and ">stale</span>" in html
    assert "Tracking live" not in html


def test_live_tracking_says_so(client, bob, two_teams):
    client.force_login(bob)

    html = client.get("/jobs/").content.decode()

    assert "Tracking live" in html and "jobs-state--stale" not in html


# -- the live partial -----------------------------------------------------------------------------------------------


def _poller(html: str) -> tuple[str, str]:
    match = re.search(r'<div id="jobs-poll"[^>]*hx-get="([^"]+)"[^>]*hx-headers="([^"]+)"', html)
    import html as h
    import json

    return h.unescape(match.group(1)), json.loads(h.unescape(match.group(2)))["If-None-Match"]


def test_the_live_partial_answers_304_while_nothing_changes(client, bob, two_teams):
    client.force_login(bob)
    url, etag = _poller(client.get("/jobs/").content.decode())

    response = client.get(url, headers={"If-None-Match": etag})

    assert response.status_code == 304
    assert response["ETag"] == etag


def test_the_live_partial_sends_only_the_rows_that_changed(client, bob, two_teams):
    client.force_login(bob)
    url, etag = _poller(client.get("/jobs/").content.decode())
    TrainJob.objects.filter(pk=two_teams["a1"].pk).update(state="admitted", reason="Admitted",
                                                          since=timezone.now(), change_seq=1000)

    response = client.get(url, headers={"If-None-Match": etag})

    assert response.status_code == 200
    html = response.content.decode()
    rows = re.findall(r'<tr id="job-([^"]+)"[^>]*hx-swap-oob="true"', html)
    assert rows == [two_teams["a1"].uid]
    assert "Admitted" in html
    assert 'id="jobs-results"' not in html
    assert '<nav id="jobs-counts"' in html and 'hx-swap-oob="true"' in html  # counts changed too
    new_url, new_etag = _poller(html)
    assert new_etag != etag
    assert client.get(new_url, headers={"If-None-Match": new_etag}).status_code == 304


def test_a_new_job_repaints_the_whole_table(client, bob, two_teams):
    client.force_login(bob)
    url, etag = _poller(client.get("/jobs/").content.decode())
    tracked_job("team-a", "brand-new")

    html = client.get(url, headers={"If-None-Match": etag}).content.decode()

    assert '<div id="jobs-results" hx-swap-oob="true">' in html
    assert "brand-new" in html


def test_the_live_partial_of_a_data_scientist_never_carries_other_namespaces(client, dana, two_teams):
    client.force_login(dana)
    url, etag = _poller(client.get("/jobs/").content.decode())
    TrainJob.objects.filter(pk=two_teams["b1"].pk).update(state="admitted", change_seq=2000)
    tracked_job("team-b", "b-new")

    response = client.get(url, headers={"If-None-Match": etag})

    assert response.status_code == 304  # team-b changes are invisible, so nothing changed for dana
    html = client.get(url).content.decode()
    assert "team-b" not in html and "b-new" not in html and "b-unschedulable" not in html


def test_a_write_through_the_tracker_services_reaches_the_live_partial(client, bob, two_teams):
    client.force_login(bob)
    url, etag = _poller(client.get("/jobs/").content.decode())
    services.mark_gone([two_teams["a2"].uid])

    html = client.get(url, headers={"If-None-Match": etag}).content.decode()

    assert "a-running" not in html  # gone jobs leave the list
    assert '<div id="jobs-results" hx-swap-oob="true">' in html


def test_pages_in_the_same_state_share_one_answer_after_a_change(client, bob, two_teams, django_assert_max_num_queries):
    from django.test import Client

    client.force_login(bob)
    other = Client()
    other.force_login(bob)
    url, etag = _poller(client.get("/jobs/").content.decode())
    TrainJob.objects.filter(pk=two_teams["a1"].pk).update(state="admitted", change_seq=5000)
    first = client.get(url, headers={"If-None-Match": etag})

    with django_assert_max_num_queries(6):  # session, user, groups, tracker, token: no list, no counts
        second = other.get(url, headers={"If-None-Match": etag})

    assert second.status_code == 200 and second.content == first.content


def test_the_list_costs_the_same_queries_for_3_or_30_jobs(client, bob):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    live_tracker()
    client.force_login(bob)
    counts = []
    for total in (3, 30):
        while TrainJob.objects.count() < total:
            tracked_job("team-a", runtime=f"rt-{TrainJob.objects.count() % 4}")
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/jobs/").status_code == 200
        counts.append(len(captured.captured_queries))

    assert counts[0] == counts[1]


def test_when_tracking_goes_stale_the_live_partial_repaints_everything_dimmed(client, bob, two_teams):
    from jobs.models import TrackerStatus

    client.force_login(bob)
    url, etag = _poller(client.get("/jobs/").content.decode())
    TrackerStatus.objects.filter(pk=1).update(connected=False, last_error="connection refused",
                                              error_since=timezone.now())

    html = client.get(url, headers={"If-None-Match": etag}).content.decode()

    assert '<div id="jobs-results" hx-swap-oob="true">' in html
    assert '<div id="jobs-tracking" class="jobs-tracking" hx-swap-oob="true">' in html
    assert "cluster unreachable (connection refused)" in html
    assert html.count("jobs-state--stale") == 3


def test_every_value_in_a_row_is_escaped(client, bob):
    live_tracker()
    job = tracked_job("team-a", "evil", runtime='<img src=x onerror="alert(1)">', queue="<b>q</b>",
                      creator='"><script>alert(2)</script>')
    TrainJob.objects.filter(pk=job.pk).update(message="<script>alert(3)</script>", reason="<i>r</i>")
    client.force_login(bob)

    for url in ("/jobs/", "/jobs/live/"):
        html = client.get(url).content.decode()
        assert "<script>alert" not in html and "<img src=x" not in html and "<b>q</b>" not in html
        assert "<i>r</i>" not in html
        assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html


@pytest.mark.parametrize("query", ["cursor=not-a-cursor", "sort=sideways", "level=galactic", "_seq=x&_m=y&_c=z",
                                   "q=" + "x" * 500, "namespace=%00"])
def test_odd_queries_never_fail_the_server(client, bob, two_teams, query):
    client.force_login(bob)

    for url in (f"/jobs/?{query}", f"/jobs/live/?{query}"):
        assert client.get(url).status_code in (200, 400), url


def test_removing_a_grant_that_is_gone_is_a_404(client, alice):
    client.force_login(alice)

    assert client.post("/jobs/grants/999/delete/").status_code == 404
