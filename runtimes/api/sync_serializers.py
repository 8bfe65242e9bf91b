"""Serializers of the cluster connection status (GET cluster/)."""

from __future__ import annotations

from rest_framework import serializers

# --------------------------------------------------------------------------------------------------- cluster


class ClusterVersionSerializer(serializers.Serializer):
    git_version = serializers.CharField(allow_blank=True)
    major = serializers.CharField(allow_blank=True)
    minor = serializers.CharField(allow_blank=True)
    platform = serializers.CharField(allow_blank=True)


class ClusterApiCheckSerializer(serializers.Serializer):
    group_version = serializers.CharField()
    served = serializers.BooleanField()
    error = serializers.CharField(allow_blank=True)
    hint = serializers.CharField(allow_blank=True)


class CrdSchedulingProbeSerializer(serializers.Serializer):
    accepted = serializers.BooleanField(allow_null=True, help_text="None when the probe could not run.")
    message = serializers.CharField(allow_blank=True)
    hint = serializers.CharField(allow_blank=True)


class ClusterPermissionSerializer(serializers.Serializer):
    verb = serializers.CharField()
    resource = serializers.CharField()
    allowed = serializers.BooleanField()
    reason = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    hint = serializers.CharField(allow_blank=True)


class ClusterStatusSerializer(serializers.Serializer):
    """The cluster connection status; when unreachable, ``error`` and ``hint`` say why and what to do."""

    connection = serializers.CharField()
    field_manager = serializers.CharField()
    reachable = serializers.BooleanField()
    server = serializers.CharField(required=False, help_text="Only when reachable.")
    error = serializers.CharField(allow_blank=True)
    hint = serializers.CharField(allow_blank=True)
    version = ClusterVersionSerializer(allow_null=True)
    apis = ClusterApiCheckSerializer(many=True)
    scheduling_versions = serializers.ListField(child=serializers.CharField())
    crd_scheduling = CrdSchedulingProbeSerializer(allow_null=True)
    permissions = ClusterPermissionSerializer(many=True)
    checked_at = serializers.FloatField(help_text="Unix time of the check.")
    elapsed_ms = serializers.FloatField()



