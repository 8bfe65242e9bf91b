from django.apps import AppConfig


class HealthConfig(AppConfig):
    """Heartbeats of the background processes (worker, beat) and the queue depth they last measured."""

    name = "trainer_portal.health"
    label = "health"
    verbose_name = "Background process health"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from trainer_portal.cluster.selectors import PagePanel, register_page_panel

        from .selectors import background_health

        register_page_panel(PagePanel("health", "aside", "health/_cluster_panel.html",
                                      lambda request: {"health": background_health()}))
