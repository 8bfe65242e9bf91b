from django.apps import AppConfig


class QueuesConfig(AppConfig):
    """Kueue's queues: the read model of ClusterQueues, LocalQueues, cohorts and positions, its pages and API."""

    name = "queues"
    verbose_name = "Queues"

    def ready(self) -> None:
        # The queue watcher runs inside the cluster watcher's informer hub; jobs learn their queue facts through
        # the job-facts seam, without importing this app.
        from trainer_portal import jobfacts

        from . import facts, handlers

        handlers.register_with_hub()
        jobfacts.register_queue_provider("queues", facts.queue_facts)
