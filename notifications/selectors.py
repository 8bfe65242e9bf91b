"""Reads of the notifications app: a user's channels, subscriptions and delivery log (only their own)."""

from __future__ import annotations

from django.db.models import QuerySet

from .errors import ChannelNotFound
from .models import Channel, Delivery, Subscription

LOG_LIMIT = 200


def channel_list(*, user) -> list[Channel]:
    """Return ``user``'s channels by name."""
    return list(Channel.objects.filter(owner=user).order_by("name", "id"))


def channel_get(*, user, channel_id: int) -> Channel:
    """Return ``user``'s channel ``channel_id``. Raises ChannelNotFound (also for someone else's channel)."""
    channel = Channel.objects.filter(owner=user, pk=channel_id).first()
    if channel is None:
        raise ChannelNotFound(f"You have no notification channel {channel_id}.")
    return channel


def subscription_list(*, user) -> list[Subscription]:
    """Return ``user``'s subscriptions, oldest first, with their channel and cluster."""
    return list(Subscription.objects.filter(owner=user).select_related("channel", "cluster").order_by("id"))


def delivery_log(*, user, channel_id: int | None = None, limit: int = LOG_LIMIT) -> QuerySet[Delivery]:
    """Return the newest deliveries (at most ``limit``) of ``user``'s channels, or of one of them. Raises
    ChannelNotFound for a channel that is not ``user``'s."""
    rows = Delivery.objects.filter(channel__owner=user).select_related("channel")
    if channel_id is not None:
        channel_get(user=user, channel_id=channel_id)
        rows = rows.filter(channel_id=channel_id)
    return rows.order_by("-id")[:limit]
