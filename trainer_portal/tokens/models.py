"""An API token: who owns it, what they called it, when it stops working. The key itself is never stored."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """One personal API token. ``key_hash`` is the SHA-256 of the key; ``prefix`` is its first characters, shown
    in lists so the owner can tell tokens apart."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    # The token that created this one over the API, if any: it expires no later, and revoking it revokes this one.
    minted_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="minted")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "expires_at"], name="tokens_user_expiry")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user_id}"
