"""The cluster page and GET /api/v1/cluster/ show the worker's and beat's heartbeats and the queue depth."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from trainer_portal.health.models import Process
from trainer_portal.health.services import heartbeat_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def unreachable(settings, tmp_path):
    # The health part does not depend on the cluster: point it nowhere, fast.
    settings.KUBE_CONFIG_PATH = str(tmp_path / "missing-kubeconfig")


def test_the_api_reports_heartbeats_in_camel_case(bob, unreachable):
    seen = timezone.now() - timedelta(seconds=3)
    heartbeat_record(process=Process.WORKER, hostname="celery@a", queue_depth=5, now=seen)
    heartbeat_record(process=Process.BEAT, now=seen - timedelta(seconds=4))
    api = APIClient()
    api.force_authenticate(bob)

    body = api.get("/api/v1/cluster/").json()

    assert body["worker"]["alive"] is True
    assert body["worker"]["lastSeen"].startswith(seen.strftime("%Y-%m-%dT%H:%M:%S"))
    assert body["beat"]["lastRun"] and body["beat"]["alive"] is True
    assert body["queueDepth"] == 5
    assert body["reachable"] is False  # the connection status is still there


def test_the_api_says_so_when_no_worker_ever_reported(bob, unreachable):
    api = APIClient()
    api.force_authenticate(bob)

    body = api.get("/api/v1/cluster/").json()

    assert body["worker"] == {"lastSeen": None, "alive": False}
    assert body["beat"] == {"lastRun": None, "alive": False}
    assert body["queueDepth"] is None


def test_the_cluster_page_shows_when_the_worker_was_last_seen(client, bob, unreachable):
    heartbeat_record(process=Process.WORKER, queue_depth=2, now=timezone.now() - timedelta(seconds=3))
    heartbeat_record(process=Process.BEAT, now=timezone.now() - timedelta(seconds=8))
    client.force_login(bob)

    html = client.get("/cluster/").content.decode()

    assert "worker alive" in html
    assert "last seen 3 s ago" in html or "last seen 4 s ago" in html
    assert "last ran 8 s ago" in html or "last ran 9 s ago" in html
    assert "2 waiting" in html


def test_the_cluster_page_warns_without_a_live_worker(client, bob, unreachable):
    heartbeat_record(process=Process.WORKER, now=timezone.now() - timedelta(minutes=5))
    client.force_login(bob)

    html = client.get("/cluster/").content.decode()

    assert "no live worker" in html
    assert "last seen 5 min ago" in html
    assert "Nothing is applied while no worker runs" in html
