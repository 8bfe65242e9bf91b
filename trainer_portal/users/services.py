"""Creating and changing local users: role (one role group), other groups, active flag, password.

Every change that would leave no active platform admin is refused (409): the check and the change run in one
transaction that first locks the rows of the active platform admins, so two admins demoting each other at once
cannot both succeed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from trainer_portal import roles

from .errors import UserError
from .selectors import active_platform_admin_ids

ROLE_CHOICES = (*roles.ROLE_GROUPS, roles.NONE)
USERNAME_MAX = 150
GROUP_NAME_MAX = 150
GROUPS_MAX = 50
PASSWORD_MAX = 256  # hashing cost grows with length; nobody types more
_GROUP_SEPARATORS = re.compile(r"[,\n]")


def _printable(value: str) -> bool:
    return all(unicodedata.category(ch)[0] != "C" for ch in value)


def clean_username(value) -> str:
    """Return ``value`` stripped. Raises UserError (400, ``username``) unless it is 1–150 letters, digits and
    ``@.+-_``."""
    if not isinstance(value, str) or not value.strip():
        raise UserError("username", "Enter a username.")
    value = value.strip()
    if len(value) > USERNAME_MAX:
        raise UserError("username", f"At most {USERNAME_MAX} characters.")
    try:
        UnicodeUsernameValidator()(value)
    except ValidationError:
        raise UserError("username", "Use letters, digits and @ . + - _ only.") from None
    return value


def clean_role(value) -> str:
    """Return ``value``. Raises UserError (400, ``role``) unless it is a role group name or "none"."""
    if value not in ROLE_CHOICES:
        raise UserError("role", f"Choose one of: {', '.join(ROLE_CHOICES)}.")
    return value


def parse_groups(text) -> list[str]:
    """Return the group names of a comma- or line-separated text (what the page's field holds), in order, without
    duplicates. Raises UserError (400, ``groups``) like ``clean_groups``."""
    if not isinstance(text, str):
        raise UserError("groups", "Enter group names separated by commas.")
    return clean_groups(part for part in _GROUP_SEPARATORS.split(text) if part.strip())


def clean_groups(names: Iterable) -> list[str]:
    """Return the stripped, de-duplicated group names. Raises UserError (400, ``groups``) for a name that is not a
    printable string of at most 150 characters, for a role group's name (roles are set with ``role``) or for more
    than 50 groups."""
    cleaned: list[str] = []
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise UserError("groups", "Each group needs a name (a non-empty string).")
        name = name.strip()
        if len(name) > GROUP_NAME_MAX or not _printable(name) or "," in name:
            raise UserError("groups", f"{name[:40]!r} is not a group name: at most {GROUP_NAME_MAX} printable "
                                      "characters, no commas.")
        if name in roles.ROLE_GROUPS:
            raise UserError("groups", f"{name!r} is a role; choose it as the role, not as a group.")
        if name not in cleaned:
            cleaned.append(name)
    if len(cleaned) > GROUPS_MAX:
        raise UserError("groups", f"At most {GROUPS_MAX} groups.")
    return cleaned


def _check_password(password, user) -> str:
    if not isinstance(password, str) or not password:
        raise UserError("password", "Enter a password.")
    if len(password) > PASSWORD_MAX or "\x00" in password:
        raise UserError("password", f"At most {PASSWORD_MAX} characters, no NUL.")
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise UserError("password", " ".join(exc.messages)) from None
    return password


def _set_role_and_groups(user, *, role: str | None, groups: list[str] | None) -> None:
    current = set(user.groups.values_list("name", flat=True))
    keep = set(current)
    if role is not None:
        keep -= set(roles.ROLE_GROUPS)
        if role != roles.NONE:
            keep.add(role)
    if groups is not None:
        keep = {name for name in keep if name in roles.ROLE_GROUPS} | set(groups)
    if keep == current:
        return
    wanted = []
    for name in sorted(keep):
        # get_or_create races with another request creating the same group: the loser reads the winner's row.
        try:
            with transaction.atomic():
                group, _ = Group.objects.get_or_create(name=name)
        except IntegrityError:
            group = Group.objects.get(name=name)
        wanted.append(group)
    user.groups.set(wanted)
    for attribute in ("_portal_group_names", "_portal_capabilities"):
        user.__dict__.pop(attribute, None)


def user_create(*, username, password, role, groups: Iterable = ()) -> object:
    """Create an active local user with ``role`` and ``groups`` (groups that do not exist yet are created); return
    the user. Raises UserError: 400 naming the bad field, 409 (``username``) when the name is taken, in any case."""
    username = clean_username(username)
    role = clean_role(role)
    groups = clean_groups(groups)
    User = get_user_model()
    if User.objects.filter(username__iexact=username).exists():
        raise UserError("username", f"A user named {username!r} exists already (names ignore case).", 409)
    _check_password(password, User(username=username))
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, password=password)
            _set_role_and_groups(user, role=role, groups=groups)
    except IntegrityError:  # created by a concurrent request between the check and the insert
        raise UserError("username", f"A user named {username!r} exists already.", 409) from None
    return user


def user_update(*, user_id: int, role=None, groups: Iterable | None = None, is_active=None) -> object:
    """Change what is given of ``user_id``'s role, groups (replacing the non-role groups) and active flag; return
    the user. Raises UserError: 404 (``user``) for no such user, 400 naming a bad field, 409 when the change would
    leave no active platform admin or would change a superuser's role (superuser status is not managed here)."""
    if role is not None:
        role = clean_role(role)
    if groups is not None:
        groups = clean_groups(groups)
    if is_active is not None and not isinstance(is_active, bool):
        raise UserError("isActive", "Must be true or false.")
    User = get_user_model()
    with transaction.atomic():
        admins = active_platform_admin_ids()
        # Lock the platform admins (and the target) first, then decide on a fresh count (see the module doc).
        locked = list(User.objects.select_for_update().filter(pk__in=admins | {user_id}).order_by("pk"))
        user = next((u for u in locked if u.pk == user_id), None)
        if user is None:
            raise UserError("user", f"No user with id {user_id}.", 404)
        if user.is_superuser and role not in (None, roles.PLATFORM_ADMIN):
            raise UserError("role", f"{user.username} is a superuser and holds every capability whatever the role; "
                                    "remove the superuser flag with manage.py first.", 409)
        admins_now = active_platform_admin_ids()
        was_admin = user.pk in admins_now
        active_after = user.is_active if is_active is None else is_active
        admin_after = active_after and (user.is_superuser or (was_admin if role is None else
                                                               role == roles.PLATFORM_ADMIN))
        if was_admin and not admin_after and not admins_now - {user.pk}:
            field = "isActive" if not active_after else "role"
            raise UserError(field, f"{user.username} is the last active platform admin: make someone else a "
                                   "platform admin first.", 409)
        _set_role_and_groups(user, role=role, groups=groups)
        if is_active is not None and is_active != user.is_active:
            user.is_active = is_active
            user.save(update_fields=["is_active"])
    return user


def user_set_password(*, user_id: int, password) -> object:
    """Set ``user_id``'s password (their signed-in sessions end); return the user. Raises UserError: 404
    (``user``), 400 (``password``) when the password validators refuse it."""
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        raise UserError("user", f"No user with id {user_id}.", 404)
    user.set_password(_check_password(password, user))
    user.save(update_fields=["password"])
    return user
