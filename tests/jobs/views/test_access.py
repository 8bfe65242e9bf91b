"""Who sees what on every TrainJob page: namespace isolation per route, grants editable by platform admins only."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group

from jobs.models import NamespaceGrant
from tests.jobs.factories import grant, live_tracker, tracked_job

pytestmark = pytest.mark.django_db

SECRET = "b-secret-run"


@pytest.fixture
def jobs_of_both_teams():
    live_tracker()
    tracked_job("team-a", "a-visible-run", state="gang-pending", runtime="torch-distributed")
    tracked_job("team-b", SECRET, state="unschedulable", runtime="torch-distributed")


READ_ROUTES = ["/jobs/", "/jobs/live/", "/jobs/overview/", "/jobs/runtimes/torch-distributed/jobs/",
               "/jobs/?q=secret", "/jobs/live/?q=b-", "/jobs/?runtime=torch-distributed"]


@pytest.mark.parametrize("route", READ_ROUTES)
def test_no_route_shows_a_data_scientist_another_namespaces_jobs(client, dana, jobs_of_both_teams, route):
    client.force_login(dana)

    response = client.get(route)

    assert response.status_code in (200, 400)
    html = response.content.decode()
    assert SECRET not in html and "team-b" not in html


@pytest.mark.parametrize("route", READ_ROUTES)
def test_a_viewer_sees_both_teams_on_every_route(client, bob, jobs_of_both_teams, route):
    client.force_login(bob)

    response = client.get(route)

    assert response.status_code == 200
    if "q=secret" in route or "q=b-" in route or "runtime" in route or route in ("/jobs/", "/jobs/overview/"):
        assert "team-b" in response.content.decode()


def test_the_overview_counts_only_visible_jobs(client, dana, jobs_of_both_teams):
    client.force_login(dana)

    html = client.get("/jobs/overview/").content.decode()

    assert "team-a" in html and "team-b" not in html
    assert "a-visible-run" in html  # the longest-waiting gang


def test_the_policy_pages_job_list_is_a_partial_for_htmx_and_a_page_without(client, bob, jobs_of_both_teams):
    client.force_login(bob)

    partial = client.get("/jobs/runtimes/torch-distributed/jobs/", headers={"HX-Request": "true"})
    page = client.get("/jobs/runtimes/torch-distributed/jobs/")

    assert partial.content.decode().lstrip().startswith("<section")
    assert "<!doctype html>" in page.content.decode()
    for response in (partial, page):
        assert "a-visible-run" in response.content.decode() and SECRET in response.content.decode()


def test_the_policy_detail_page_loads_its_job_list_with_a_no_js_link(client, alice, bob, jobs_of_both_teams):
    from tests.ui import make_policy, torch_manifest

    make_policy(torch_manifest("torch-distributed"), alice)
    client.force_login(bob)

    html = client.get("/runtimes/torch-distributed/").content.decode()

    assert 'hx-get="/jobs/runtimes/torch-distributed/jobs/"' in html
    assert '<a class="small" href="/jobs/runtimes/torch-distributed/jobs/">TrainJobs using this runtime</a>' in html


@pytest.mark.parametrize("route", ["/jobs/grants/", "/jobs/grants/1/delete/"])
def test_grants_are_for_platform_admins_only(client, bob, dana, route):
    for user in (bob, dana):
        client.force_login(user)
        assert client.get(route).status_code in (403, 405)
        assert client.post(route, {"group": 1, "namespace": "team-b"}).status_code == 403
    assert not NamespaceGrant.objects.filter(namespace="team-b").exists()


def test_a_platform_admin_grants_and_removes_a_namespace(client, alice, dana, jobs_of_both_teams):
    team = Group.objects.get(name="team-a-ml")
    client.force_login(alice)

    page = client.get("/jobs/grants/").content.decode()
    added = client.post("/jobs/grants/", {"group": team.pk, "namespace": "team-b"}, follow=True)

    assert "team-a-ml" in page and 'name="csrfmiddlewaretoken"' in page
    assert added.status_code == 200
    assert "Members of team-a-ml now see the TrainJobs of team-b." in added.content.decode()
    client.force_login(dana)
    assert SECRET in client.get("/jobs/").content.decode()

    client.force_login(alice)
    grant_pk = NamespaceGrant.objects.get(group=team, namespace="team-b").pk
    client.post(f"/jobs/grants/{grant_pk}/delete/")
    client.force_login(dana)
    assert SECRET not in client.get("/jobs/").content.decode()


def test_a_bad_grant_is_a_400_naming_the_field(client, alice):
    grant("team-a-ml", "team-a")
    team = Group.objects.get(name="team-a-ml")
    client.force_login(alice)

    bad_name = client.post("/jobs/grants/", {"group": team.pk, "namespace": "Team_B!"})
    duplicate = client.post("/jobs/grants/", {"group": team.pk, "namespace": "team-a"})
    role_group = client.post("/jobs/grants/", {"group": Group.objects.get(name="viewer").pk, "namespace": "x"})

    assert bad_name.status_code == 400 and "a namespace is a DNS label" in bad_name.content.decode()
    assert duplicate.status_code == 400 and "already sees namespace" in duplicate.content.decode()
    assert role_group.status_code == 400 and "Select a valid choice" in role_group.content.decode()
    assert NamespaceGrant.objects.count() == 1


def test_the_grants_page_needs_the_csrf_token(alice):
    from django.test import Client

    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(alice)
    team = Group.objects.get_or_create(name="team-c")[0]

    response = csrf_client.post("/jobs/grants/", {"group": team.pk, "namespace": "team-c"})

    assert response.status_code == 403
    assert not NamespaceGrant.objects.exists()


def test_a_data_scientist_lands_on_the_jobs_list_and_sees_their_role(client, dana):
    client.force_login(dana)

    assert client.get("/")["Location"] == "/jobs/"
    assert ">data scientist</span>" in client.get("/jobs/").content.decode()


def test_the_overview_shows_counts_longest_waiting_and_time_to_admission(client, bob):
    import datetime as dt

    from django.utils import timezone

    live_tracker()
    now = timezone.now()
    for minutes in (2, 4, 6):
        tracked_job("team-a", f"fast-{minutes}", state="running", submitted=now - dt.timedelta(hours=1),
                    admitted=now - dt.timedelta(hours=1) + dt.timedelta(minutes=minutes))
    tracked_job("team-b", "stuck", state="unschedulable", submitted=now - dt.timedelta(hours=3))
    client.force_login(bob)

    html = client.get("/jobs/overview/").content.decode()

    assert re.search(r'<th scope="row"><a href="/jobs/\?namespace=team-a">team-a</a></th>.*?<strong>3</strong>', html,
                     re.S)
    waiting = re.search(r'id="wait-h".*?</section>', html, re.S).group(0)
    assert "team-b/stuck" in waiting and "3h 00m" in waiting
    stats = re.search(r'id="tta-h".*?</section>', html, re.S).group(0)
    assert re.search(r"torch-distributed</th><td>trainjob</td><td class=\"num\">3</td><td class=\"num\">4m 00s</td>"
                     r"<td class=\"num\">6m 00s</td>", stats)
    assert "Preempted" not in html  # columns only for states some job is in


def test_a_data_scientist_is_not_offered_pages_they_may_not_open(client, dana, bob):
    client.force_login(dana)
    nav = re.search(r'<nav class="nav".*?</nav>', client.get("/jobs/").content.decode(), re.S).group(0)
    assert 'href="/jobs/"' in nav and "Policies" not in nav and "Cluster" not in nav

    client.force_login(bob)
    nav = re.search(r'<nav class="nav".*?</nav>', client.get("/jobs/").content.decode(), re.S).group(0)
    assert "Policies" in nav and "Cluster" in nav and 'href="/jobs/"' in nav
