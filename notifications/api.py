"""The notifications API under ``/api/v1/notifications/``: the caller's channels, subscriptions and delivery log.

* ``GET|POST channels/`` — list; create (a webhook's signing secret is in the 201 answer, once).
* ``DELETE channels/<channel_id>/`` — delete; ``POST channels/<channel_id>/test/`` — queue a test message.
* ``GET|POST subscriptions/``, ``DELETE subscriptions/<subscription_id>/``.
* ``GET deliveries/?channel=<id>`` — the newest deliveries of the caller's channels (200 at most).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer_portal.api.schema import ErrorSerializer
from trainer_portal.permissions import HasCapability
from trainer_portal.roles import NOTIFICATIONS_OWN

from . import selectors, services
from .choices import ChannelKind, DeliveryState, EventKind, Scope

_ERR = OpenApiResponse(ErrorSerializer)
_COMMON = {401: _ERR, 403: _ERR, 503: OpenApiResponse(ErrorSerializer, description="The database is unavailable.")}
_BODY = {400: _ERR, 413: _ERR, 415: _ERR}
_TAGS = ["notifications"]


class ChannelSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=ChannelKind.choices)
    target = serializers.CharField(help_text="E-mail address or webhook URL; empty for chat (its URL is secret).")
    secretHint = serializers.CharField(source="secret_hint", help_text="Enough of the secret to tell it apart.")
    enabled = serializers.BooleanField()
    createdAt = serializers.DateTimeField(source="created_at")


class ChannelCreatedSerializer(ChannelSerializer):
    secret = serializers.CharField(help_text="A webhook's signing secret, shown this once (empty otherwise).")


class ChannelCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=ChannelKind.choices)
    target = serializers.CharField(max_length=2000, required=False, allow_blank=True,
                                   help_text="E-mail: the address. Webhook: the receiver's URL.")
    chatUrl = serializers.CharField(max_length=2000, required=False, allow_blank=True,
                                    help_text="Chat: the apprise URL (slack://…, msteams://…, mmost://…).")


class SubscriptionSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    channel = serializers.IntegerField(source="channel_id")
    scope = serializers.ChoiceField(choices=Scope.choices)
    value = serializers.CharField()
    cluster = serializers.CharField(source="cluster.name", allow_null=True, default=None)
    kinds = serializers.ListField(child=serializers.ChoiceField(choices=EventKind.choices))
    waitMinutes = serializers.IntegerField(source="wait_minutes", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")


class SubscriptionCreateSerializer(serializers.Serializer):
    channel = serializers.IntegerField(min_value=1)
    scope = serializers.ChoiceField(choices=Scope.choices)
    value = serializers.CharField(max_length=253, required=False, allow_blank=True,
                                  help_text="The namespace, runtime or queue (empty for mine and platform).")
    kinds = serializers.ListField(child=serializers.ChoiceField(choices=EventKind.choices), min_length=1,
                                  max_length=len(EventKind.values))
    waitMinutes = serializers.IntegerField(required=False, allow_null=True, min_value=1,
                                           max_value=services.MAX_WAIT_MINUTES)
    cluster = serializers.CharField(max_length=63, required=False, allow_blank=True,
                                    help_text="A cluster's name; empty for every cluster.")


class DeliverySerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    channel = serializers.IntegerField(source="channel_id")
    eventKey = serializers.CharField(source="event_key")
    idempotencyKey = serializers.CharField(source="idempotency_key")
    kind = serializers.CharField()
    subject = serializers.CharField()
    state = serializers.ChoiceField(choices=DeliveryState.choices)
    attempts = serializers.IntegerField()
    nextAttemptAt = serializers.DateTimeField(source="next_attempt_at")
    lastError = serializers.CharField(source="last_error")
    digest = serializers.IntegerField(source="digest_id", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    deliveredAt = serializers.DateTimeField(source="delivered_at", allow_null=True)


class _Base(APIView):
    permission_classes = [HasCapability.of(NOTIFICATIONS_OWN)]


class ChannelListApi(_Base):
    @extend_schema(operation_id="notifications_channels_list", summary="List your notification channels",
                   responses={200: ChannelSerializer(many=True), **_COMMON}, tags=_TAGS)
    def get(self, request):
        return Response(ChannelSerializer(selectors.channel_list(user=request.user), many=True).data)

    @extend_schema(operation_id="notifications_channels_create", summary="Create a notification channel",
                   request=ChannelCreateSerializer,
                   responses={201: ChannelCreatedSerializer, **_BODY, **_COMMON}, tags=_TAGS)
    def post(self, request):
        body = ChannelCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        channel, secret = services.channel_create(user=request.user, name=data["name"], kind=data["kind"],
                                                  target=data.get("target", ""), chat_url=data.get("chatUrl", ""))
        answer = dict(ChannelSerializer(channel).data)
        answer["secret"] = secret
        return Response(answer, status=status.HTTP_201_CREATED)


class ChannelDetailApi(_Base):
    @extend_schema(operation_id="notifications_channels_destroy", summary="Delete a notification channel",
                   responses={204: None, 404: _ERR, **_COMMON}, tags=_TAGS)
    def delete(self, request, channel_id: int):
        services.channel_delete(user=request.user, channel_id=channel_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ChannelTestApi(_Base):
    @extend_schema(operation_id="notifications_channels_test", summary="Send a test message on a channel",
                   description="Queues a test message; its delivery shows in the channel's log.",
                   request=None, responses={202: DeliverySerializer, 404: _ERR, **_COMMON}, tags=_TAGS)
    def post(self, request, channel_id: int):
        delivery = services.channel_test(user=request.user, channel_id=channel_id)
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)


class SubscriptionListApi(_Base):
    @extend_schema(operation_id="notifications_subscriptions_list", summary="List your subscriptions",
                   responses={200: SubscriptionSerializer(many=True), **_COMMON}, tags=_TAGS)
    def get(self, request):
        return Response(SubscriptionSerializer(selectors.subscription_list(user=request.user), many=True).data)

    @extend_schema(operation_id="notifications_subscriptions_create", summary="Subscribe to events",
                   description="Job scopes (mine, namespace, runtime, queue) take admitted, waiting (with "
                   "waitMinutes), preempted, failed, succeeded; the platform scope (platform admins) takes "
                   "sync_failed, drift, watcher_stale, cluster_unreachable. Only jobs you may see are notified.",
                   request=SubscriptionCreateSerializer,
                   responses={201: SubscriptionSerializer, 404: _ERR, **_BODY, **_COMMON}, tags=_TAGS)
    def post(self, request):
        body = SubscriptionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        subscription = services.subscription_create(
            user=request.user, channel_id=data["channel"], scope=data["scope"], value=data.get("value", ""),
            kinds=data["kinds"], wait_minutes=data.get("waitMinutes"), cluster=data.get("cluster") or None)
        return Response(SubscriptionSerializer(subscription).data, status=status.HTTP_201_CREATED)


class SubscriptionDetailApi(_Base):
    @extend_schema(operation_id="notifications_subscriptions_destroy", summary="Delete a subscription",
                   responses={204: None, 404: _ERR, **_COMMON}, tags=_TAGS)
    def delete(self, request, subscription_id: int):
        services.subscription_delete(user=request.user, subscription_id=subscription_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeliveryListApi(_Base):
    @extend_schema(operation_id="notifications_deliveries_list", summary="Your delivery log",
                   parameters=[OpenApiParameter("channel", int, description="Only this channel of yours.")],
                   responses={200: DeliverySerializer(many=True), 400: _ERR, 404: _ERR, **_COMMON}, tags=_TAGS)
    def get(self, request):
        raw = request.query_params.get("channel")
        channel_id = None
        if raw not in (None, ""):
            if not raw.isdigit() or len(raw) > 12:
                raise exceptions.ValidationError({"channel": ["a channel id (a positive integer)"]})
            channel_id = int(raw)
        rows = selectors.delivery_log(user=request.user, channel_id=channel_id)
        return Response(DeliverySerializer(rows, many=True).data)
