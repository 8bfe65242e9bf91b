from django.apps import AppConfig


class ClusterConfig(AppConfig):
    """The live cluster: connection status, the live topology snapshot, the cluster page and the watcher."""

    name = "trainer_portal.cluster"
    label = "cluster"
    verbose_name = "Cluster"

    def ready(self) -> None:
        from . import handlers, informers

        informers.register(handlers.TopologySnapshotHandler)
