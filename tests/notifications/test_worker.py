"""A real Celery worker delivers notifications while the receiver fails (500s, timeouts) and recovers: every
event is acknowledged once, none is lost, none is acknowledged twice.

The worker opens the test database itself (a file with SQLite, PostgreSQL in CI); the broker is Redis when
CELERY_BROKER_URL is set, the filesystem broker otherwise (see tests/sync/worker.py)."""

from __future__ import annotations

import time

import pytest

from notifications import services
from notifications.choices import DeliveryState
from notifications.models import Delivery

from ..sync.worker import WorkerProcess, database_url
from .conftest import job, move

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(tmp_path):
    url = database_url()
    if url is None:
        pytest.skip("the worker needs a database it can open too: run with DATABASE_URL=postgres://… (CI does)")
    process = WorkerProcess(kubeconfig="", var_dir=tmp_path / "var", db_url=url)
    process.env.update({"TRAINER_PORTAL_NOTIFY_RETRY_INITIAL": "0.2", "TRAINER_PORTAL_NOTIFY_RETRY_MAX": "1",
                        "TRAINER_PORTAL_NOTIFY_HTTP_TIMEOUT": "1"})
    yield process.start()
    process.stop()


def test_a_worker_delivers_every_event_once_through_failures_and_timeouts(alice, receiver, worker):
    channel, _ = services.channel_create(user=alice, name="hook", kind="webhook", target=receiver.url + "/")
    services.subscription_create(user=alice, channel_id=channel.pk, scope="namespace", value="team-a",
                                 kinds=["admitted", "failed"])
    receiver.fail_next, receiver.hang_next, receiver.hang_seconds = 4, 2, 2.0
    rows = [job("team-a") for _ in range(6)]
    for row in rows:
        move(row, "admitted")
    move(rows[0], "failed")
    move(rows[1], "failed")

    worker.send("notifications.tasks.notifications_tick_task")
    deadline = time.monotonic() + 60
    while len(receiver.received) < 8:
        assert time.monotonic() < deadline, f"{len(receiver.received)} of 8 received\n{worker.log()[-3000:]}"
        time.sleep(0.2)
    worker.send("notifications.tasks.notifications_tick_task")  # a later tick finds nothing left to send
    time.sleep(2)

    keys = [document["idempotencyKey"] for document in receiver.documents()]
    assert len(keys) == 8 and len(set(keys)) == 8
    assert receiver.seen >= 8 + 4 + 2
    assert set(Delivery.objects.values_list("state", flat=True)) == {DeliveryState.DELIVERED}
