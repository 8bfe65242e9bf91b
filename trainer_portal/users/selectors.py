"""Reading local users with their role and groups."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Q

from trainer_portal import roles


@dataclass(frozen=True)
class UserRow:
    """One user as the Users page and API show them."""

    user: object
    role: str  # a role group name or roles.NONE
    groups: tuple[str, ...]  # the non-role groups, sorted

    @property
    def role_label(self) -> str:
        """Return the role's human label ("superuser" for superusers)."""
        return "superuser" if self.user.is_superuser else roles.ROLE_LABELS[self.role]


def _row(user) -> UserRow:
    names = sorted(group.name for group in user.groups.all())
    role = roles.PLATFORM_ADMIN if user.is_superuser else next(
        (r for r in roles.ROLE_GROUPS if r in names), roles.NONE)
    return UserRow(user=user, role=role, groups=tuple(n for n in names if n not in roles.ROLE_GROUPS))


def user_rows() -> list[UserRow]:
    """Return every local user, by username, with role and groups (two queries)."""
    users = get_user_model().objects.order_by("username").prefetch_related("groups")
    return [_row(user) for user in users]


def user_row(user_id: int) -> UserRow | None:
    """Return one user's row, or None when there is no user ``user_id``."""
    user = get_user_model().objects.filter(pk=user_id).prefetch_related("groups").first()
    return _row(user) if user else None


def active_platform_admin_ids() -> set[int]:
    """Return the ids of the active users who hold the platform-admin role (members or superusers)."""
    users = get_user_model().objects.filter(is_active=True).filter(
        Q(is_superuser=True) | Q(groups__name=roles.PLATFORM_ADMIN))
    return set(users.values_list("pk", flat=True))
