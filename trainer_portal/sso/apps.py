from django.apps import AppConfig


class SsoConfig(AppConfig):
    """OpenID Connect login: who a user is at the identity provider, and which of their groups came from it."""

    name = "trainer_portal.sso"
    label = "sso"
    verbose_name = "Single sign-on"
    default_auto_field = "django.db.models.BigAutoField"
