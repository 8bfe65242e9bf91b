from django.apps import AppConfig


class TrainerPortalConfig(AppConfig):
    """Project-level app: roles (groups), shared templates tags and management commands."""

    name = "trainer_portal"
    verbose_name = "Trainer Portal"
