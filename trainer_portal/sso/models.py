"""Who a user is at the identity provider, and which of their groups the provider gave them."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SsoIdentity(models.Model):
    """Links a portal user to one (issuer, subject) and remembers the groups the last sign-in brought.

    The remembered groups are what a later sign-in may take away again; groups an admin added by hand stay.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    groups_from_provider = models.JSONField(default=list, blank=True)
    last_login_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique_subject")]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
