from django.apps import AppConfig


class RuntimesConfig(AppConfig):
    """ClusterTrainingRuntime scheduling policies: authoring, validation, history, preview and sync."""

    name = "runtimes"
    verbose_name = "Runtime policies"

    def ready(self) -> None:
        from trainer_portal.cluster import informers
        from trainer_portal.cluster.selectors import PagePanel, register_page_panel

        from . import handlers, selectors
        from .views.sync import batch_id_in

        informers.register(handlers.RuntimeDriftHandler)
        # Sync failures and drift are an outbox source for notifications (which never imports runtimes).
        from trainer_portal import outbox

        outbox.register_source(selectors.SYNC_SOURCE)

        register_page_panel(PagePanel("runtimes-actions", "actions", "runtimes/_cluster_actions.html",
                                      lambda request: {}))
        register_page_panel(PagePanel("runtimes-sync", "aside", "runtimes/_cluster_sync_overview.html",
                                      lambda request: {"state_counts": selectors.sync_state_counts(),
                                                       "attention": selectors.policies_needing_attention(),
                                                       "batch_id": batch_id_in(request)}))
        register_page_panel(PagePanel("runtimes-topology-gate", "aside", "runtimes/_cluster_topology_gate.html",
                                      lambda request: {"policies": selectors.policies_with_ignored_topology()}))
