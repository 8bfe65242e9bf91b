"""GET /jobs/export.csv: the list's rows with its filters, only what the user may see, streamed, formula-safe."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import Group

from tests.jobs.factories import grant, tracked_job
from trainer_portal import roles

pytestmark = pytest.mark.django_db


def rows(response) -> list[dict]:
    assert response.status_code == 200, response.content
    assert response.streaming and response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="trainjobs-')
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture
def scientist(django_user_model):
    user = django_user_model.objects.create_user("dana", password="dana-password-1")
    user.groups.add(Group.objects.get_or_create(name=roles.DATA_SCIENTIST)[0])
    user.groups.add(grant("team-a-ml", "team-a").group)
    return user


@pytest.fixture
def jobs():
    tracked_job("team-a", "a-running", state="running", queue="q1")
    tracked_job("team-a", "a-queued", state="queued", queue="q1")
    tracked_job("team-b", "b-running", state="running", creator="=HYPERLINK(\"http://x\",\"y\")")


def test_the_filters_and_sort_of_the_list_apply(client, bob, jobs):
    client.force_login(bob)

    exported = rows(client.get("/jobs/export.csv?state=running&sort=name"))

    assert [(r["namespace"], r["name"], r["state"]) for r in exported] == [("team-a", "a-running", "running"),
                                                                            ("team-b", "b-running", "running")]
    assert exported[0]["cluster"] == "default" and exported[0]["nodes"] == "4" and exported[0]["queue"] == "q1"
    assert exported[0]["submitted_at"].startswith("20")


def test_a_data_scientist_exports_only_granted_namespaces(client, scientist, jobs):
    client.force_login(scientist)

    exported = rows(client.get("/jobs/export.csv"))

    assert sorted(r["name"] for r in exported) == ["a-queued", "a-running"]
    refused = client.get("/jobs/export.csv?namespace=team-b")
    assert refused.status_code == 400 and b"namespace" in refused.content


def test_a_cell_that_would_be_a_formula_is_defused(client, bob, jobs):
    client.force_login(bob)

    (row,) = rows(client.get("/jobs/export.csv?namespace=team-b"))

    assert row["creator"] == "'=HYPERLINK(\"http://x\",\"y\")"


def test_a_bad_filter_is_named(client, bob, jobs):
    client.force_login(bob)

    response = client.get("/jobs/export.csv?state=bogus")

    assert response.status_code == 400 and b"state" in response.content


def test_the_list_links_to_the_export_with_its_filters(client, bob, jobs):
    client.force_login(bob)

    html = client.get("/jobs/?state=running").content.decode()

    assert 'href="/jobs/export.csv?state=running"' in html
