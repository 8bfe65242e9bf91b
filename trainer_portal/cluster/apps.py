from django.apps import AppConfig


class ClusterConfig(AppConfig):
    """The live cluster: connection status, the live topology snapshot, the cluster page and the watcher."""

    name = "trainer_portal.cluster"
    label = "cluster"
    verbose_name = "Cluster"

    def ready(self) -> None:
        from trainer_portal.kube.client import set_default_connection_resolver

        from . import connections, handlers, informers

        informers.register(handlers.TopologySnapshotHandler)
        # get_gateway() means the default cluster: its row says how to reach it.
        set_default_connection_resolver(connections.default_connection)
