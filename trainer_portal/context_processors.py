"""Template context shared by every page."""

from __future__ import annotations

from django.conf import settings

from .roles import is_platform_admin, role_name


def portal(request) -> dict:
    """Return the role flags and mode every template needs (``can_edit``, ``role``, ``embedded``)."""
    user = getattr(request, "user", None)
    return {
        "can_edit": bool(user) and is_platform_admin(user),
        "role": role_name(user) if user else "none",
        "embedded": settings.EMBEDDED,
    }
