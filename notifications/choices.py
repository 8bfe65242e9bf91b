"""Choices of the notifications models: channel kinds, subscription scopes, delivery states."""

from __future__ import annotations

from django.db import models

from trainer_portal import outbox


class ChannelKind(models.TextChoices):
    EMAIL = "email", "E-mail"
    WEBHOOK = "webhook", "Webhook (JSON, HMAC-SHA256 signed)"
    CHAT = "chat", "Chat (Slack, Teams, Mattermost, … through apprise)"


class Scope(models.TextChoices):
    MINE = "mine", "My jobs"
    NAMESPACE = "namespace", "A namespace"
    RUNTIME = "runtime", "A runtime"
    QUEUE = "queue", "A queue"
    PLATFORM = "platform", "The platform (admins)"


class EventKind(models.TextChoices):
    ADMITTED = outbox.ADMITTED, "Admitted"
    WAITING = outbox.WAITING, "Waiting longer than N minutes"
    PREEMPTED = outbox.PREEMPTED, "Preempted"
    FAILED = outbox.FAILED, "Failed"
    SUCCEEDED = outbox.SUCCEEDED, "Succeeded"
    SYNC_FAILED = outbox.SYNC_FAILED, "Sync failed"
    DRIFT = outbox.DRIFT, "Drift"
    WATCHER_STALE = outbox.WATCHER_STALE, "Watcher stale"
    CLUSTER_UNREACHABLE = outbox.CLUSTER_UNREACHABLE, "Cluster unreachable"


class DeliveryState(models.TextChoices):
    PENDING = "pending", "Pending"
    SENDING = "sending", "Sending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"
    DIGESTED = "digested", "Sent in a digest"


JOB_SCOPES = (Scope.MINE, Scope.NAMESPACE, Scope.RUNTIME, Scope.QUEUE)
