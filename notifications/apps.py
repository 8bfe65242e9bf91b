from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    """Notifications: channels, subscriptions, an outbox over the apps' event logs, delivery with retries."""

    name = "notifications"
    verbose_name = "Notifications"
