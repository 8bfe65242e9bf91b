"""A broker that refuses the message after the sync was recorded: the rows say "failed: could not queue" and the
API answers 503, never a 500 with rows left "queued". Real brokers: Redis on a port where nothing listens, and the
embedded atomicfs:// broker pointed at a folder that does not exist."""

from __future__ import annotations

import socket

import pytest
from rest_framework.test import APIClient

from runtimes.choices import SyncState
from runtimes.models import PolicySync, RuntimePolicy

pytestmark = pytest.mark.django_db(transaction=True)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the socket is: nothing listens there


def _use_broker(app, url: str | None, options: dict) -> None:
    # The write URL: publishing uses it, and it wins over a CELERY_BROKER_URL in the environment (CI sets one).
    app.conf.broker_write_url = url
    app.conf.broker_transport_options = options
    # Drop the connection and producer pools built for the previous broker.
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture(params=["redis-down", "missing-broker-folder"])
def broken_broker(request, tmp_path):
    from trainer_portal.celery import app

    saved = (app.conf.get("broker_write_url"), app.conf.broker_transport_options, app.conf.task_always_eager)
    app.conf.task_always_eager = False
    if request.param == "redis-down":
        _use_broker(app, f"redis://127.0.0.1:{_closed_port()}/0", {})
    else:
        missing = str(tmp_path / "no-such-folder" / "broker")
        _use_broker(app, "atomicfs://", {"data_folder_in": missing, "data_folder_out": missing,
                                         "control_folder": str(tmp_path / "control")})
    yield request.param
    app.conf.task_always_eager = saved[2]
    _use_broker(app, saved[0], saved[1])


@pytest.fixture
def as_alice(alice):
    client = APIClient()
    client.force_authenticate(alice)
    return client


def test_one_sync_that_cannot_be_queued_is_marked_failed_and_answers_503(broken_broker, make_policy, as_alice):
    make_policy("unqueued")

    response = as_alice.post("/api/v1/runtimes/unqueued/sync/")

    assert response.status_code == 503
    assert response["Retry-After"] == "2"
    body = response.json()["error"]
    assert body["code"] == "unavailable" and body["message"].startswith("Could not queue")
    policy = RuntimePolicy.objects.get(name="unqueued")
    assert policy.sync_state == SyncState.FAILED
    assert policy.last_sync_error.startswith("Could not queue: the task broker refused the message")


def test_a_bulk_sync_that_cannot_be_queued_marks_every_row_failed(broken_broker, make_policy, as_alice):
    for name in ("bulk-x", "bulk-y"):
        make_policy(name)
    make_policy("left-alone")

    response = as_alice.post("/api/v1/runtimes/sync/", {"names": ["bulk-x", "bulk-y"]}, format="json")

    assert response.status_code == 503
    states = dict(PolicySync.objects.values_list("policy__name", "sync_state"))
    assert states == {"bulk-x": SyncState.FAILED, "bulk-y": SyncState.FAILED, "left-alone": SyncState.DRAFT}


def test_the_policy_page_shows_it_failed_instead_of_queued(broken_broker, make_policy, alice, client):
    make_policy("page-unqueued")
    client.force_login(alice)

    response = client.post("/cluster/runtimes/page-unqueued/sync/", follow=True)

    assert response.status_code == 200
    page = response.content.decode()
    assert "Could not queue" in page
    assert RuntimePolicy.objects.get(name="page-unqueued").sync_state == SyncState.FAILED
