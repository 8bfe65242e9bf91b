"""Django admin: tracked TrainJobs read-only (the tracker owns them), namespace grants editable."""

from __future__ import annotations

from django.contrib import admin

from .models import NamespaceGrant, TrackerStatus, TrainJob, TrainJobTransition


class TransitionInline(admin.TabularInline):
    model = TrainJobTransition
    extra = 0
    can_delete = False
    fields = ("seq", "from_state", "to_state", "reason", "message", "at")
    readonly_fields = fields
    ordering = ("seq",)

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(TrainJob)
class TrainJobAdmin(admin.ModelAdmin):
    list_display = ("cluster", "namespace", "name", "state", "reason", "runtime_name", "num_nodes", "since",
                    "gone_at")
    list_filter = ("cluster", "state", "level", "namespace")
    search_fields = ("namespace", "name", "uid", "runtime_name", "creator")
    inlines = (TransitionInline,)

    # The tracker writes these rows from the cluster; an edit here would be overwritten by the next event.
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(NamespaceGrant)
class NamespaceGrantAdmin(admin.ModelAdmin):
    list_display = ("group", "namespace", "cluster", "created_at")
    list_filter = ("group", "cluster")
    search_fields = ("namespace", "group__name")


@admin.register(TrackerStatus)
class TrackerStatusAdmin(admin.ModelAdmin):
    list_display = ("holder", "connected", "synced", "heartbeat_at", "last_event_at", "tracked", "last_error")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
