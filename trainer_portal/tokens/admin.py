from django.contrib import admin

from .models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created_at", "expires_at")
    list_filter = ("expires_at",)
    search_fields = ("name", "user__username", "prefix")
    readonly_fields = ("key_hash", "prefix", "created_at")
