"""The event logs the outbox reads, and the notifications API and pages (only one's own things, secrets once)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from notifications.models import Channel
from trainer_portal.cluster.models import Cluster, ClusterEvent
from trainer_portal.cluster.status import record_check

pytestmark = pytest.mark.django_db


def test_a_cluster_going_unreachable_is_logged_once_and_its_recovery_once():
    cluster = Cluster.objects.get(is_default=True)
    for reachable in (True, False, False, True, True):
        record_check(cluster, {"reachable": reachable, "error": "" if reachable else "connection refused"})
    kinds = list(ClusterEvent.objects.filter(cluster=cluster).values_list("kind", flat=True))
    assert kinds == ["cluster_unreachable", "cluster_reachable"]


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_webhook_secret_is_shown_once_and_stored_encrypted(dora, receiver):
    api = _api(dora)
    created = api.post("/api/v1/notifications/channels/",
                       {"name": "hook", "kind": "webhook", "target": receiver.url}, format="json")
    assert created.status_code == 201, created.content
    secret = created.json()["secret"]
    assert len(secret) > 30
    listed = api.get("/api/v1/notifications/channels/").json()
    assert secret not in str(listed) and listed[0]["secretHint"].startswith("…")
    assert secret not in Channel.objects.get().secret_encrypted


def test_nobody_reaches_another_users_channel(dora, alice, receiver):
    created = _api(alice).post("/api/v1/notifications/channels/",
                               {"name": "hook", "kind": "webhook", "target": receiver.url}, format="json").json()
    api = _api(dora)
    assert api.delete(f"/api/v1/notifications/channels/{created['id']}/").status_code == 404
    assert api.post(f"/api/v1/notifications/channels/{created['id']}/test/").status_code == 404
    assert api.get(f"/api/v1/notifications/deliveries/?channel={created['id']}").status_code == 404
    answer = api.post("/api/v1/notifications/subscriptions/",
                      {"channel": created["id"], "scope": "mine", "kinds": ["admitted"]}, format="json")
    assert answer.status_code == 404


@pytest.mark.parametrize(("body", "field"), [
    ({"scope": "platform", "kinds": ["drift"]}, "scope"),
    ({"scope": "namespace", "kinds": ["admitted"]}, "value"),
    ({"scope": "mine", "kinds": ["waiting"]}, "waitMinutes"),
    ({"scope": "mine", "kinds": ["drift"]}, "kinds"),
], ids=["platform-needs-admin", "namespace-needs-value", "waiting-needs-minutes", "job-scope-platform-kind"])
def test_a_bad_subscription_is_a_400_naming_the_field(dora, receiver, body, field):
    api = _api(dora)
    channel = api.post("/api/v1/notifications/channels/",
                       {"name": "hook", "kind": "webhook", "target": receiver.url}, format="json").json()
    answer = api.post("/api/v1/notifications/subscriptions/", {"channel": channel["id"], **body}, format="json")
    assert answer.status_code == 400, answer.content
    assert [item["path"] for item in answer.json()["error"]["fields"]] == [field]


def test_the_page_shows_a_bad_channel_next_to_its_field(client, dora):
    client.force_login(dora)
    answer = client.post("/notifications/channels/new/",
                         {"name": "x", "kind": "webhook", "target": "http://169.254.169.254/"})
    assert answer.status_code == 400
    assert b"link-local" in answer.content


def test_a_watcher_whose_snapshot_grows_old_is_logged_stale_once_and_fresh_again(settings):
    from django.utils import timezone

    from trainer_portal.cluster.models import TopologySnapshot

    cluster = Cluster.objects.get(is_default=True)
    settings.WATCHER_STALE_SECONDS = 60
    snapshot = TopologySnapshot.objects.create(cluster=cluster, taken_at=timezone.now() - timezone.timedelta(
        minutes=5), format=1, blob=b"")
    record_check(cluster, {"reachable": True})
    record_check(cluster, {"reachable": True})
    TopologySnapshot.objects.filter(pk=snapshot.pk).update(taken_at=timezone.now())
    record_check(cluster, {"reachable": True})
    kinds = list(ClusterEvent.objects.filter(cluster=cluster).values_list("kind", flat=True))
    assert kinds == ["watcher_stale", "watcher_fresh"]
