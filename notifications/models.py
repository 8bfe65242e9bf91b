"""Channels (where a user is told), subscriptions (what about), deliveries (the outbox rows and their log), the
per-source cursors of the outbox and the "waiting longer than N" notices already emitted.

Secrets (a webhook's signing secret, a chat URL, which carries its service token) are stored encrypted with the
portal's keys (`trainer_portal.cluster.connections.encrypt_secret`) and never shown back in full.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from trainer_portal.cluster.models import Cluster

from .choices import ChannelKind, DeliveryState, Scope


class Channel(models.Model):
    """One way to reach its owner: an e-mail address, a webhook URL (with its signing secret) or a chat URL."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_channels")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=ChannelKind.choices)
    # E-mail: the address; webhook: the URL (shown); chat: empty (the URL is a secret).
    target = models.CharField(max_length=2000, blank=True)
    secret_encrypted = models.TextField(blank=True, help_text="Webhook signing secret or chat URL, encrypted.")
    # What the page shows of the secret ("slack://…ab12"): enough to tell two apart, never enough to use.
    secret_hint = models.CharField(max_length=64, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("owner", "name", "id")
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="notif_channel_owner_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class Subscription(models.Model):
    """``owner`` wants to hear on ``channel`` about ``kinds`` of events in ``scope`` (``value``: the namespace,
    runtime or queue; empty for "mine" and "platform"), on ``cluster`` or every cluster."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="notification_subscriptions")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="subscriptions")
    scope = models.CharField(max_length=16, choices=Scope.choices)
    value = models.CharField(max_length=253, blank=True)
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    kinds = models.JSONField(default=list)
    wait_minutes = models.PositiveIntegerField(null=True, blank=True,
                                               help_text='For "waiting": tell after this many minutes.')
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("owner", "id")

    def __str__(self) -> str:
        return f"{self.owner_id}: {self.scope} {self.value} → {self.channel_id}"


class Delivery(models.Model):
    """One event (or one digest of events) for one channel: the outbox row, its attempts and its outcome.

    ``event_key`` identifies the event across sources ("jobs:42", "waiting:7:1:uid:30"); together with the channel
    it is unique in the database, so an event reaches a channel at most once however often it is matched.
    """

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries")
    subscription = models.ForeignKey(Subscription, on_delete=models.SET_NULL, null=True, blank=True,
                                     related_name="+")
    event_key = models.CharField(max_length=200)
    kind = models.CharField(max_length=24)
    subject = models.CharField(max_length=600, blank=True)
    payload = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    last_error = models.TextField(blank=True)
    digest = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="folded")
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-id",)
        constraints = [models.UniqueConstraint(fields=["channel", "event_key"], name="notif_delivery_idempotent")]
        indexes = [
            models.Index(fields=["state", "next_attempt_at"], name="notif_delivery_due"),
            models.Index(fields=["channel", "-id"], name="notif_delivery_log"),
        ]

    def __str__(self) -> str:
        return f"{self.event_key} → {self.channel_id} ({self.state})"

    @property
    def idempotency_key(self) -> str:
        """Return the key receivers deduplicate on: the event × the channel."""
        return f"{self.event_key}@{self.channel_id}"


class SourceCursor(models.Model):
    """How far the outbox scanner has read one source's log (its sequence)."""

    source = models.CharField(max_length=64, unique=True)
    position = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.source}@{self.position}"
