from django.apps import AppConfig


class TokensConfig(AppConfig):
    """Personal API tokens (``Authorization: Token <key>``) that expire and can be revoked."""

    name = "trainer_portal.tokens"
    label = "tokens"
    verbose_name = "API tokens"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import signals

        signals.connect()
