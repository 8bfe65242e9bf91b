"""Django admin: read-mostly views of policies and their history (edits belong in the portal, which validates)."""

from __future__ import annotations

from django.contrib import admin

from .models import PolicyRevision, PolicySync, RuntimePolicy


class PolicySyncInline(admin.TabularInline):
    model = PolicySync
    extra = 0
    can_delete = False
    fields = ("cluster", "sync_state", "applied_revision", "cluster_state", "last_synced_at", "last_sync_error")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class PolicyRevisionInline(admin.TabularInline):
    model = PolicyRevision
    extra = 0
    can_delete = False
    fields = ("number", "source", "author_name", "message", "created_at")
    readonly_fields = fields
    ordering = ("-number",)
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(RuntimePolicy)
class RuntimePolicyAdmin(admin.ModelAdmin):
    list_display = ("name", "framework", "scheduling_mode", "version", "sync_state", "updated_at", "updated_by")
    list_filter = ("framework", "scheduling_mode", "syncs__sync_state")
    search_fields = ("name", "scheduling_summary")
    list_select_related = ("updated_by",)
    inlines = (PolicySyncInline, PolicyRevisionInline)
    # Manifests change only through the services (validation + revision); the admin shows them read-only.
    readonly_fields = (
        "name",
        "manifest",
        "version",
        "framework",
        "scheduling_mode",
        "scheduling_summary",
        "warnings",
        "created_at",
        "updated_at",
        "created_by",
        "updated_by",
        "target_clusters",
    )

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(PolicyRevision)
class PolicyRevisionAdmin(admin.ModelAdmin):
    list_display = ("policy", "number", "source", "author_name", "created_at")
    list_filter = ("source",)
    search_fields = ("policy__name", "message", "author_name")
    list_select_related = ("policy",)
    readonly_fields = ("policy", "number", "manifest", "message", "source", "author", "author_name", "created_at")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
