"""The charts on the overview and on a runtime's jobs (the policy page's partial): server-rendered SVG with what the
signed-in user may see, and nothing of namespaces they may not."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from jobs.templatetags.jobs_charts import admission_svg
from tests.jobs.factories import grant, tracked_job
from trainer_portal import roles

pytestmark = pytest.mark.django_db


@pytest.fixture
def scientist(django_user_model):
    """A data scientist granted team-a only."""
    user = django_user_model.objects.create_user("dana", password="dana-password-1")
    user.groups.add(Group.objects.get_or_create(name=roles.DATA_SCIENTIST)[0])
    user.groups.add(grant("team-a-ml", "team-a").group)
    return user


@pytest.fixture
def jobs():
    now = timezone.now()
    tracked_job("team-a", state="running", runtime="torch-a", submitted=now - dt.timedelta(hours=1, minutes=10),
                admitted=now - dt.timedelta(hours=1))
    tracked_job("team-a", state="queued", runtime="torch-a")
    tracked_job("team-b", state="failed", runtime="secret-runtime", submitted=now - dt.timedelta(hours=2),
                admitted=now - dt.timedelta(minutes=90))
    return now


def test_the_overview_shows_both_charts_of_every_namespace_to_a_viewer(client, bob, jobs):
    client.force_login(bob)

    html = client.get("/jobs/overview/").content.decode()

    assert html.count("<svg class=\"chart") == 2
    assert "torch-a · TrainJob p50" in html and "secret-runtime · TrainJob p95" in html
    assert ">Failed</text>" in html and ">Running</text>" in html


def test_a_data_scientist_sees_only_the_namespaces_granted(client, scientist, jobs):
    client.force_login(scientist)

    html = client.get("/jobs/overview/").content.decode()

    assert "torch-a · TrainJob p50" in html
    assert "secret-runtime" not in html and ">Failed</text>" not in html
    assert "Queued 1, Running 1" in html  # the state mix's description


def test_a_runtime_shows_its_own_charts(client, bob, jobs):
    client.force_login(bob)

    html = client.get("/jobs/runtimes/torch-a/jobs/", HTTP_HX_REQUEST="true").content.decode()

    assert html.count("<svg class=\"chart") == 2
    assert "torch-a · TrainJob p95" in html and "secret-runtime" not in html
    assert "Queued 1, Running 1" in html


def test_the_wait_is_drawn_in_the_bucket_of_its_admission(bob, jobs):
    svg = admission_svg(user=bob, runtime="torch-a", now=jobs)

    # One job admitted an hour ago after 10 minutes: p50 = p95 = 10 min, the axis top; a lone value is a dot.
    assert "torch-a · TrainJob p50: latest 10 min" in svg and ">5 min</text>" in svg
    assert svg.count("<circle") == 2 and "<polyline" not in svg
