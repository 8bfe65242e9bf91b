"""The Celery application; tasks are discovered in each installed app's ``tasks`` module."""

import os

from celery import Celery

from . import broker  # noqa: F401  (registers the atomicfs:// transport before any connection is made)
from .health.signals import WorkerHeartbeat

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainer_portal.settings")

app = Celery("trainer_portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.steps["worker"].add(WorkerHeartbeat)
