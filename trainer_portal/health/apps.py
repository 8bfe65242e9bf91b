from django.apps import AppConfig


class HealthConfig(AppConfig):
    """Heartbeats of the background processes (worker, beat) and the queue depth they last measured."""

    name = "trainer_portal.health"
    label = "health"
    verbose_name = "Background process health"
    default_auto_field = "django.db.models.BigAutoField"
