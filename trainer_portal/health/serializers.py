"""The health part of ``GET /api/v1/cluster/`` (camelCase, as ``BackgroundHealth.as_api`` returns it)."""

from __future__ import annotations

from rest_framework import serializers


class WorkerHealthSerializer(serializers.Serializer):
    lastSeen = serializers.DateTimeField(allow_null=True, help_text="Last heartbeat of a worker; null if never.")
    alive = serializers.BooleanField(help_text="A heartbeat within the last 30 s.")


class BeatHealthSerializer(serializers.Serializer):
    lastRun = serializers.DateTimeField(allow_null=True, help_text="Last time beat published a task; null if never.")
    alive = serializers.BooleanField(help_text="Beat published within the last 30 s.")


class BackgroundHealthFields(serializers.Serializer):
    """Fields to add to a serializer documenting a response that includes ``BackgroundHealth.as_api()``."""

    worker = WorkerHealthSerializer()
    beat = BeatHealthSerializer()
    queueDepth = serializers.IntegerField(allow_null=True, help_text="Messages waiting in the default queue when "
                                          "the worker last looked; null if unknown.")
