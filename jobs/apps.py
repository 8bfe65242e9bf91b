from django.apps import AppConfig


class JobsConfig(AppConfig):
    """TrainJob gang-admission tracking: where every TrainJob is between submitted and finished, and why."""

    name = "jobs"
    verbose_name = "TrainJobs"

    def ready(self) -> None:
        # The admission tracker runs inside the cluster watcher's informer hub (one list+watch per process).
        from django.conf import settings
        from django.core.signals import setting_changed

        from . import handlers
        from .domain import signals

        signals.configure_creator_keys(getattr(settings, "TRAINER_PORTAL_CREATOR_KEYS", []))
        setting_changed.connect(_creator_keys_changed, dispatch_uid="jobs-creator-keys")
        handlers.register_with_hub()
        # Live streams of the list and detail pages follow this watermark (trainer_portal/live).
        from trainer_portal.live import sources

        from . import live

        sources.register("jobs", live.watermark)

        # Transitions are an outbox source for notifications (which never imports jobs).
        from trainer_portal import outbox

        from .selectors import JOBS_SOURCE

        outbox.register_source(JOBS_SOURCE)


def _creator_keys_changed(*, setting: str, value, **_) -> None:
    """Follow TRAINER_PORTAL_CREATOR_KEYS when a test overrides it."""
    if setting == "TRAINER_PORTAL_CREATOR_KEYS":
        from .domain import signals

        signals.configure_creator_keys(value or [])
