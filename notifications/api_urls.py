"""REST routes of notifications under /api/v1/notifications/."""

from django.urls import path

from . import api

urlpatterns = [
    path("channels/", api.ChannelListApi.as_view(), name="api-notification-channels"),
    path("channels/<int:channel_id>/", api.ChannelDetailApi.as_view(), name="api-notification-channel"),
    path("channels/<int:channel_id>/test/", api.ChannelTestApi.as_view(), name="api-notification-channel-test"),
    path("subscriptions/", api.SubscriptionListApi.as_view(), name="api-notification-subscriptions"),
    path("subscriptions/<int:subscription_id>/", api.SubscriptionDetailApi.as_view(),
         name="api-notification-subscription"),
    path("deliveries/", api.DeliveryListApi.as_view(), name="api-notification-deliveries"),
]
