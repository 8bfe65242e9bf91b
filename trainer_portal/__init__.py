"""Trainer Portal: policy authoring, placement preview and gang-admission tracking for Kubeflow Trainer."""

from .celery import app as celery_app

__all__ = ["celery_app"]
