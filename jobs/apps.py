from django.apps import AppConfig


class JobsConfig(AppConfig):
    """TrainJob gang-admission tracking (queued vs admitted); filled in by the tracking work."""

    name = "jobs"
    verbose_name = "TrainJobs"
