"""Live streams end to end: a real uvicorn serving the portal, real HTTP streams, changes written as the watcher
writes them (jobs.services.apply_records)."""

from __future__ import annotations

import html
import json
import re
import time
import urllib.parse
from dataclasses import replace

import pytest
from django.test import Client
from django.utils import timezone

from jobs import services
from tests.browser.test_jobs import PENDING, _heartbeat, _record
from tests.live.conftest import STREAM, EventReader

pytestmark = [pytest.mark.django_db(transaction=True)]

POLLER = re.compile(r'class="jobs-poller"[^>]*hx-get="([^"]+)"[^>]*hx-headers="([^"]+)"[^>]*data-live-stream="([^"]+)"')


def _user(django_user_model, username: str, *groups: str):
    from django.contrib.auth.models import Group

    from jobs.models import NamespaceGrant

    user = django_user_model.objects.create_user(username, password="x")
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    if "team-a-ml" in groups:
        NamespaceGrant.objects.get_or_create(group=Group.objects.get(name="team-a-ml"), namespace="team-a")
    return user


def _open(asgi_server, user, page: str) -> EventReader:
    """Load ``page`` as ``user`` and open the stream its poller names; return the reader (status 200 checked)."""
    client = Client()
    client.force_login(user)
    body = client.get(page).content.decode()
    live_url, headers, stream_path = POLLER.search(body).groups()
    assert stream_path == STREAM
    etag = json.loads(html.unescape(headers))["If-None-Match"]
    query = urllib.parse.urlencode({"page": html.unescape(live_url), "etag": etag})
    reader = EventReader(asgi_server, f"{STREAM}?{query}", f"sessionid={client.cookies['sessionid'].value}")
    assert reader.status == 200
    return reader


@pytest.fixture
def jobs(settings):
    settings.TRAINER_PORTAL_TRACKING_STALE_SECONDS = 600
    services.apply_records([
        PENDING,
        _record("team-b", "llm-b", "running", reason="Running", message="all pods running", num_nodes=1),
    ])
    _heartbeat()


def _change(record, version: int, **fields):
    services.apply_records([replace(record, observed_version=str(version), since=timezone.now(), **fields)])


def test_a_change_reaches_an_open_list_page(asgi_server, django_user_model, jobs):
    reader = _open(asgi_server, _user(django_user_model, "vic", "viewer"), "/jobs/")
    _change(PENDING, 2, state="admitted", reason="Admitted", message="all 3 members bound")
    event = reader.next_event(10)
    assert event is not None and event[0] == "swap"
    assert "llm-a" in event[1] and "Admitted" in event[1]
    reader.close()


def test_a_detail_page_is_sent_nothing_until_what_it_shows_changes(asgi_server, django_user_model, jobs):
    from trainer_portal.live import hub as live_hub

    reader = _open(asgi_server, _user(django_user_model, "vic", "viewer"), "/jobs/team-a/llm-a/")
    hub = next(h for h in list(live_hub._HUBS.values()) if h.streams)
    asked = hub.fragment_requests
    # Another job changes: the waiting job's fragment is asked again (its token covers every change) but shows the
    # same, so the page is sent nothing.
    _change(_record("team-b", "llm-b", "running", reason="Running", message="all pods running", num_nodes=1), 2,
            message="still running")
    deadline = time.monotonic() + 10
    while hub.fragment_requests == asked:
        assert time.monotonic() < deadline, "the hub never asked the fragment again"
        time.sleep(0.05)
    assert reader.next_event(1.0) is None
    _change(PENDING, 2, message="1 of 3 members bound")
    event = reader.next_event(10)
    assert event is not None and event[0] == "swap" and "1 of 3 members bound" in event[1]
    reader.close()


def test_a_stream_never_carries_a_job_the_user_may_not_see(asgi_server, django_user_model, jobs):
    reader = _open(asgi_server, _user(django_user_model, "dana", "data-scientist", "team-a-ml"), "/jobs/")
    _change(_record("team-b", "llm-b", "running", reason="Running", message="all pods running", num_nodes=1), 2,
            state="succeeded", reason="Succeeded", message="secret-team-b-result")
    assert reader.next_event(1.5) is None  # nothing of team-b, not even an empty repaint
    _change(PENDING, 2, state="admitted", reason="Admitted", message="all 3 members bound")
    event = reader.next_event(10)
    assert event is not None and event[0] == "swap" and "llm-a" in event[1]
    assert "llm-b" not in event[1] and "secret-team-b-result" not in event[1]
    reader.close()


def test_the_stream_checks_who_asks(asgi_server, django_user_model, jobs):
    user = _user(django_user_model, "vic", "viewer")
    anonymous = EventReader(asgi_server, f"{STREAM}?page=/jobs/live/&etag=x", "")
    assert anonymous.status == 302
    anonymous.close()
    not_a_fragment = Client()
    not_a_fragment.force_login(user)
    cookie = f"sessionid={not_a_fragment.cookies['sessionid'].value}"
    refused = EventReader(asgi_server, f"{STREAM}?page=/admin/&etag=x", cookie)
    assert refused.status == 400
    refused.close()
    # Signed out while the stream is open: the next delivery is refused by the fragment, the stream ends.
    reader = _open(asgi_server, user, "/jobs/")
    from django.contrib.sessions.models import Session

    Session.objects.all().delete()
    _change(PENDING, 2, state="admitted", reason="Admitted", message="all 3 members bound")
    event = reader.next_event(10)
    assert event is not None and event[0] == "end"
    reader.close()


def test_under_wsgi_the_stream_answers_503_and_the_page_polls(client, django_user_model, settings):
    settings.TRAINER_PORTAL_LIVE_STREAM = STREAM
    client.force_login(_user(django_user_model, "vic", "viewer"))
    response = client.get(STREAM, {"page": "/jobs/live/", "etag": "x"})
    assert response.status_code == 503 and response["Retry-After"]
    settings.TRAINER_PORTAL_LIVE_STREAM = ""
    assert client.get(STREAM, {"page": "/jobs/live/", "etag": "x"}).status_code == 404
    assert "data-live-stream" not in client.get("/jobs/").content.decode()
