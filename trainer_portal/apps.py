from django.apps import AppConfig
from django.db.models.signals import post_migrate


class TrainerPortalConfig(AppConfig):
    """Project-level app: roles (groups), shared templates tags and management commands."""

    name = "trainer_portal"
    verbose_name = "Trainer Portal"

    def ready(self) -> None:
        from django.apps import apps

        # Sent once per app with models; the auth app's signal is the one that follows the groups table.
        post_migrate.connect(_ensure_role_groups, sender=apps.get_app_config("auth"),
                             dispatch_uid="trainer_portal.ensure_role_groups")


def _ensure_role_groups(using: str = "default", **kwargs) -> None:
    """After migrate (and a test database's flush, which sends post_migrate too): the role groups exist.

    The migrations create them; a flushed database (transactional tests) gets them back here, as the cluster app gets
    its default cluster back, so no test needs to restore a serialized database (which clashes with the content
    types a flush re-creates under new keys on PostgreSQL).
    """
    from django.contrib.auth.models import Group

    from .roles import ROLE_GROUPS

    for name in ROLE_GROUPS:
        Group.objects.using(using).get_or_create(name=name)
