"""What a sign-in through the identity provider changes: the user row, its SSO identity and its groups."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction

from .mapping import ROLE_GROUPS, Membership
from .models import SsoIdentity


def sso_user_find(*, issuer: str, subject: str):
    """Return the user linked to (issuer, subject), or None."""
    identity = SsoIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    return identity.user if identity else None


@transaction.atomic
def sso_user_create(*, issuer: str, subject: str, username: str, email: str, first_name: str, last_name: str,
                    membership: Membership):
    """Create a portal user for a first sign-in, linked to (issuer, subject), with its groups; return it.

    A local account that already holds ``username`` is never taken over (the provider could otherwise sign in as a
    break-glass admin): the new user gets ``username@<issuer host>`` instead. It has no usable password.
    """
    user_model = get_user_model()
    candidates = [username, f"{username}@{urlsplit(issuer).hostname}"[:150]]
    for candidate in candidates:
        if user_model.objects.filter(username=candidate).exists():
            continue
        try:
            with transaction.atomic():
                user = user_model.objects.create_user(candidate, email=email, first_name=first_name[:150],
                                                      last_name=last_name[:150])
        except IntegrityError:  # taken concurrently
            continue
        user.set_unusable_password()
        user.save(update_fields=["password"])
        SsoIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        sso_membership_apply(user=user, membership=membership)
        return user
    raise IntegrityError(f"no free username for {username!r}")


@transaction.atomic
def sso_user_update(*, user, email: str, first_name: str, last_name: str, membership: Membership):
    """Refresh ``user``'s profile and groups from a new sign-in; return the user."""
    user.email, user.first_name, user.last_name = email, first_name[:150], last_name[:150]
    user.save(update_fields=["email", "first_name", "last_name"])
    sso_membership_apply(user=user, membership=membership)
    return user


def sso_membership_apply(*, user, membership: Membership) -> None:
    """Make ``user``'s provider-controlled groups equal ``membership``.

    The provider controls the role groups and every group its last sign-in brought; groups an admin added by hand
    (for example a team group that holds a namespace grant) stay.
    """
    identity = SsoIdentity.objects.select_for_update().get(user=user)
    controlled = ROLE_GROUPS | set(identity.groups_from_provider)
    current = set(user.groups.values_list("name", flat=True))
    wanted = (current - controlled) | membership.all
    if wanted - current:
        user.groups.add(*[Group.objects.get_or_create(name=name)[0] for name in sorted(wanted - current)])
    if current - wanted:
        user.groups.remove(*Group.objects.filter(name__in=current - wanted))
    identity.groups_from_provider = sorted(membership.idp_groups)
    identity.save(update_fields=["groups_from_provider", "last_login_at"])
