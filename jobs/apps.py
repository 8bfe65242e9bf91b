from django.apps import AppConfig


class JobsConfig(AppConfig):
    """TrainJob gang-admission tracking: where every TrainJob is between submitted and finished, and why."""

    name = "jobs"
    verbose_name = "TrainJobs"

    def ready(self) -> None:
        # The admission tracker runs inside the cluster watcher's informer hub (one list+watch per process).
        from . import handlers

        handlers.register_with_hub()
