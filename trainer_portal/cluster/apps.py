from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ClusterConfig(AppConfig):
    """The live cluster: connection status, the live topology snapshot, the cluster page and the watcher."""

    name = "trainer_portal.cluster"
    label = "cluster"
    verbose_name = "Cluster"

    def ready(self) -> None:
        from trainer_portal.kube.client import set_default_connection_resolver

        from . import connections, handlers, informers

        informers.register(handlers.TopologySnapshotHandler)
        # Health changes are an outbox source for notifications.
        from trainer_portal import outbox

        from .selectors import CLUSTER_SOURCE

        outbox.register_source(CLUSTER_SOURCE)
        # get_gateway() means the default cluster: its row says how to reach it.
        set_default_connection_resolver(connections.default_connection)
        post_migrate.connect(_ensure_default_cluster, sender=self, dispatch_uid="cluster.ensure_default")


def _ensure_default_cluster(*, using: str = "default", apps=None, **kwargs) -> None:
    """After migrate (and a test database's flush, which sends post_migrate too): one default cluster exists."""
    from .registry_services import ensure_default_cluster

    try:
        ensure_default_cluster(using=using, apps=apps)
    except LookupError:  # the cluster app is being migrated to zero: no table, no default
        return
