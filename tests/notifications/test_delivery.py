"""Delivery from the outbox to real receivers: an HTTP server (webhooks, chat through apprise) and an SMTP server
(aiosmtpd), both failing and recovering. Nothing is lost, nothing is acknowledged twice, nobody hears about a job
they may not see."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from django.utils import timezone

from notifications import services
from notifications.choices import DeliveryState
from notifications.errors import Invalid
from notifications.models import Delivery
from runtimes.models import SyncEvent
from trainer_portal.cluster.models import Cluster, ClusterEvent

from .conftest import job, move

pytestmark = pytest.mark.django_db


def _webhook(user, receiver, **subscription):
    channel, secret = services.channel_create(user=user, name="hook", kind="webhook", target=receiver.url + "/hook")
    services.subscription_create(user=user, channel_id=channel.pk, **subscription)
    return channel, secret


def _drain(rounds: int = 10) -> None:
    """Scan, then send until nothing is due (retries are due at once under ``quick_retries``)."""
    services.outbox_scan()
    for _ in range(rounds):
        if not services.deliveries_send_due():
            return


def test_a_webhook_is_signed_and_carries_the_documented_payload(alice, receiver, quick_retries):
    row = job("team-a", "bert", creator="alice")
    channel, secret = _webhook(alice, receiver, scope="mine", kinds=["admitted"])
    move(row, "admitted", reason="Admitted", message="all 4 pods bound")
    _drain()

    [request] = receiver.received
    headers = request["headers"]
    expected = hmac.new(secret.encode(), headers["X-Portal-Timestamp"].encode() + b"." + request["body"],
                        hashlib.sha256).hexdigest()
    assert headers["X-Portal-Signature"] == f"sha256={expected}"
    document = json.loads(request["body"])
    assert document["version"] == 1 and document["kind"] == "admitted"
    key = f"{document['event']['key']}@{channel.pk}"
    assert document["idempotencyKey"] == headers["X-Portal-Idempotency-Key"] == key
    cluster = Cluster.objects.get(is_default=True).name
    assert document["event"]["job"] == {"cluster": cluster, "namespace": "team-a", "name": "bert", "uid": row.uid}
    assert document["event"]["reason"] == "Admitted"
    assert Delivery.objects.get().state == DeliveryState.DELIVERED


def test_a_failing_and_hanging_receiver_gets_every_event_exactly_once(alice, receiver, quick_retries):
    _webhook(alice, receiver, scope="namespace", value="team-a", kinds=["admitted", "failed", "succeeded"])
    rows = [job("team-a") for _ in range(5)]
    receiver.fail_next, receiver.hang_next, receiver.hang_seconds = 3, 2, 1.0
    for row in rows:
        move(row, "admitted")
    move(rows[0], "failed")
    move(rows[1], "succeeded")
    _drain()
    services.outbox_scan()  # a second scan of the same events writes nothing new
    _drain()

    keys = [document["idempotencyKey"] for document in receiver.documents()]
    assert len(keys) == 7 and len(set(keys)) == 7
    assert receiver.seen == 7 + 3 + 2  # the failures were real and were retried
    assert set(Delivery.objects.values_list("state", flat=True)) == {DeliveryState.DELIVERED}
    assert Delivery.objects.filter(attempts__gt=1).count() == 5


def test_an_absent_receiver_leaves_the_delivery_pending_for_a_later_attempt(alice, receiver, quick_retries):
    gone, _ = services.channel_create(user=alice, name="gone", kind="webhook", target=receiver.url.replace(
        str(receiver.server.server_address[1]), "1") + "/")
    services.subscription_create(user=alice, channel_id=gone.pk, scope="mine", kinds=["admitted"])
    move(job(creator="alice"), "admitted")
    services.outbox_scan()
    services.deliveries_send_due()
    delivery = Delivery.objects.get()
    assert delivery.state == DeliveryState.PENDING and delivery.attempts == 1 and delivery.last_error


def test_e_mail_through_a_real_smtp_server_that_refuses_once(dora, smtp, quick_retries):
    channel, shown = services.channel_create(user=dora, name="mail", kind="email", target="dora@example.org")
    assert shown == ""
    services.subscription_create(user=dora, channel_id=channel.pk, scope="mine", kinds=["preempted"])
    smtp.mailbox.refuse_next = 1
    move(job("team-a", "llama", creator="dora", state="running"), "preempted", reason="Preempted")
    _drain()

    [message] = smtp.messages
    assert message["to"] == ["dora@example.org"]
    assert "team-a/llama" in message["data"] and "Preempted" in message["data"]
    assert Delivery.objects.get().attempts == 2


def test_nobody_hears_about_a_job_they_may_not_see(dora, receiver, quick_retries):
    _webhook(dora, receiver, scope="runtime", value="torch", kinds=["admitted"])
    move(job("team-b", "secret-job"), "admitted")
    move(job("team-a", "open-job"), "admitted")
    _drain()
    assert [d["event"]["subject"] for d in receiver.documents()] == ["team-a/open-job"]


def test_a_notification_names_no_other_namespaces_objects(dora, receiver, quick_retries):
    _webhook(dora, receiver, scope="namespace", value="team-a", kinds=["preempted"])
    move(job("team-a", "mine"), "preempted", reason="PreemptionByScheduler",
         message="Preempted by PodGroup team-b/b-urgent-0 to make room; PodGroup team-a/mine-node waits again")
    _drain()
    message = receiver.documents()[0]["event"]["message"]
    assert "team-b" not in message and "b-urgent" not in message
    assert "a job in another namespace" in message and "team-a/mine-node" in message


def test_a_burst_goes_out_as_one_digest(alice, receiver, quick_retries, settings):
    settings.NOTIFICATIONS_DIGEST_THRESHOLD = 3
    _webhook(alice, receiver, scope="namespace", value="team-a", kinds=["admitted"])
    for _ in range(6):
        move(job("team-a"), "admitted")
    _drain()
    [document] = receiver.documents()
    assert document["kind"] == "digest" and document["event"]["count"] == 6
    assert Delivery.objects.filter(state=DeliveryState.DIGESTED).count() == 6


def test_waiting_longer_than_n_minutes_is_told_once_per_job_and_threshold(alice, receiver, quick_retries):
    _webhook(alice, receiver, scope="queue", value="gpu", kinds=["waiting"], wait_minutes=30)
    job("team-a", "long", queue="gpu", since=timezone.now() - timezone.timedelta(minutes=45))
    job("team-a", "short", queue="gpu", since=timezone.now() - timezone.timedelta(minutes=5))
    _drain()
    _drain()
    assert [d["event"]["subject"] for d in receiver.documents()] == ["team-a/long"]


def test_platform_admins_hear_of_sync_failures_and_unreachable_clusters(alice, dora, receiver, quick_retries):
    with pytest.raises(Invalid, match="platform admins"):
        channel, _ = services.channel_create(user=dora, name="x", kind="webhook", target=receiver.url)
        services.subscription_create(user=dora, channel_id=channel.pk, scope="platform", kinds=["drift"])
    _webhook(alice, receiver, scope="platform", kinds=["sync_failed", "cluster_unreachable"])
    cluster = Cluster.objects.get(is_default=True)
    SyncEvent.objects.create(policy_name="torch", cluster=cluster, kind="sync_failed", message="forbidden")
    ClusterEvent.objects.create(cluster=cluster, kind="cluster_unreachable", message="connection refused")
    SyncEvent.objects.create(policy_name="torch", cluster=cluster, kind="drift")  # not subscribed
    _drain()
    assert sorted(d["kind"] for d in receiver.documents()) == ["cluster_unreachable", "sync_failed"]


def test_chat_through_apprise_reaches_a_mattermost_style_receiver(alice, receiver, quick_retries):
    host = receiver.url.removeprefix("http://")
    channel, _ = services.channel_create(user=alice, name="chat", kind="chat", chat_url=f"mmost://{host}/tok3n")
    assert channel.secret_hint.endswith("tok3n"[-4:]) and "tok3n" not in channel.secret_encrypted
    services.channel_test(user=alice, channel_id=channel.pk)
    services.deliveries_send_due()
    [request] = receiver.received
    assert request["path"] == "/hooks/tok3n" and b"This channel works" in request["body"]


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest", "http://[fe80::1]/x", "file:///etc/passwd"],
                         ids=["metadata", "link-local-v6", "file"])
def test_webhooks_to_link_local_and_metadata_addresses_are_refused(alice, url):
    with pytest.raises(Invalid) as refused:
        services.channel_create(user=alice, name="bad", kind="webhook", target=url)
    assert refused.value.field_name == "target"


def test_chat_urls_outside_the_chat_services_are_refused(alice):
    with pytest.raises(Invalid, match="chat services"):
        services.channel_create(user=alice, name="bad", kind="chat", chat_url="json://127.0.0.1/")


def test_backoff_doubles_and_is_capped(settings):
    settings.NOTIFICATIONS_RETRY_INITIAL_SECONDS, settings.NOTIFICATIONS_RETRY_MAX_SECONDS = 5, 60
    assert [services.backoff_seconds(n) for n in (1, 2, 3, 4, 5, 9)] == [5, 10, 20, 40, 60, 60]
