"""Portal roles, stored as Django groups.

* ``platform-admin`` may author, import, roll back, sync and delete policies.
* ``viewer`` may read everything the portal shows and run previews.
* ``data-scientist`` sees only the TrainJobs of namespaces granted to one of its groups (``jobs.NamespaceGrant``).
Superusers may do everything. A user in neither group (and not a superuser) sees nothing.
"""

from __future__ import annotations

PLATFORM_ADMIN = "platform-admin"
VIEWER = "viewer"
DATA_SCIENTIST = "data-scientist"
ALL_ROLES = (PLATFORM_ADMIN, VIEWER)


def is_platform_admin(user) -> bool:
    """Return True when ``user`` may change policies (superuser or member of ``platform-admin``)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_superuser:
        return True
    return _in_group(user, PLATFORM_ADMIN)


def is_viewer(user) -> bool:
    """Return True when ``user`` may read portal data (any role, or superuser)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_superuser:
        return True
    return _in_group(user, PLATFORM_ADMIN) or _in_group(user, VIEWER)


def is_data_scientist(user) -> bool:
    """Return True when ``user`` is an active member of ``data-scientist`` (TrainJobs of granted namespaces)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return _in_group(user, DATA_SCIENTIST)


def can_see_trainjobs(user) -> bool:
    """Return True when ``user`` may open TrainJob pages at all (any portal role or data scientist)."""
    return is_viewer(user) or is_data_scientist(user)


def role_name(user) -> str:
    """Return a human label for the strongest role of ``user`` ("superuser", "platform admin", "viewer",
    "data scientist", "none")."""
    if getattr(user, "is_superuser", False):
        return "superuser"
    if is_platform_admin(user):
        return "platform admin"
    if is_viewer(user):
        return "viewer"
    if is_data_scientist(user):
        return "data scientist"
    return "none"


def _in_group(user, group_name: str) -> bool:
    # Cache the group names on the user object: a page checks roles several times per request.
    cached = getattr(user, "_portal_group_names", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        user._portal_group_names = cached
    return group_name in cached
