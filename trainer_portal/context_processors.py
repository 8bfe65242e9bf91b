"""Template context shared by every page."""

from __future__ import annotations

from django.conf import settings

from .roles import CAPABILITIES, POLICIES_EDIT, capabilities, role_name


def capability_flags(user) -> dict[str, bool]:
    """Return ``{"policies_edit": True, …}``: every capability of the table, dots as underscores, for ``user``."""
    held = capabilities(user)
    return {name.replace(".", "_"): name in held for name in CAPABILITIES}


def portal(request) -> dict:
    """Return what every template needs: ``caps`` (the user's capabilities, ``{% if caps.policies_edit %}``),
    ``can_edit`` (``caps.policies_edit``, the first release's name), ``role`` (a label) and ``embedded``."""
    user = getattr(request, "user", None)
    caps = capability_flags(user)
    return {
        "caps": caps,
        "can_edit": caps[POLICIES_EDIT.replace(".", "_")],
        "role": role_name(user) if user else "none",
        "embedded": settings.EMBEDDED,
    }
