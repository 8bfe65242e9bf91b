"""Pages of notifications under /notifications/."""

from django.urls import path

from . import views

app_name = "notifications"

urlpatterns = [
    path("", views.NotificationsView.as_view(), name="page"),
    path("channels/new/", views.ChannelCreateView.as_view(), name="channel-new"),
    path("channels/<int:channel_id>/", views.ChannelLogView.as_view(), name="channel"),
    path("channels/<int:channel_id>/delete/", views.ChannelDeleteView.as_view(), name="channel-delete"),
    path("channels/<int:channel_id>/test/", views.ChannelTestView.as_view(), name="channel-test"),
    path("subscriptions/new/", views.SubscriptionCreateView.as_view(), name="subscription-new"),
    path("subscriptions/<int:subscription_id>/delete/", views.SubscriptionDeleteView.as_view(),
         name="subscription-delete"),
]
