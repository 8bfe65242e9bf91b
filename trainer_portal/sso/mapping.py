"""Pure: which portal role groups and which IdP groups a signed-in user gets from their claims."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .config import EVERYONE, SsoSettings

# Role group names, as trainer_portal.roles stores them (kept literal: this module imports nothing of Django).
PLATFORM_ADMIN = "platform-admin"
VIEWER = "viewer"
DATA_SCIENTIST = "data-scientist"
ROLE_GROUPS = frozenset({PLATFORM_ADMIN, VIEWER, DATA_SCIENTIST})
MAX_GROUPS = 200
MAX_GROUP_NAME = 150  # django.contrib.auth Group.name


@dataclass(frozen=True)
class Membership:
    """The groups a user should be in after signing in: role groups plus their IdP groups (for namespace grants)."""

    roles: frozenset[str]
    idp_groups: frozenset[str]

    @property
    def all(self) -> frozenset[str]:
        return self.roles | self.idp_groups


def idp_groups(claims: Mapping[str, Any], claim: str) -> frozenset[str]:
    """Return the IdP group names in ``claims[claim]`` (a list, or one string); odd entries are dropped.

    Names that collide with a portal role group are dropped too: an IdP group called ``platform-admin`` must not
    make its members admins unless the mapping says so.
    """
    value = claims.get(claim)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return frozenset()
    names = {item.strip() for item in value[:MAX_GROUPS] if isinstance(item, str)}
    return frozenset(name for name in names if name and len(name) <= MAX_GROUP_NAME and "\x00" not in name
                     and name not in ROLE_GROUPS)


def membership(claims: Mapping[str, Any], config: SsoSettings) -> Membership:
    """Return the role groups and IdP groups ``claims`` give under ``config``'s mapping."""
    groups = idp_groups(claims, config.groups_claim)
    roles = set()
    for role, mapped in ((PLATFORM_ADMIN, config.admin_groups), (VIEWER, config.viewer_groups),
                         (DATA_SCIENTIST, config.data_scientist_groups)):
        if EVERYONE in mapped or groups & mapped:
            roles.add(role)
    return Membership(roles=frozenset(roles), idp_groups=groups)


def username(claims: Mapping[str, Any], config: SsoSettings) -> str:
    """Return a Django username for ``claims``: the configured claim, else the e-mail, else ``sub`` (≤ 150 chars)."""
    for key in (config.username_claim, "email", "sub"):
        value = claims.get(key)
        if isinstance(value, str) and value.strip() and "\x00" not in value:
            return value.strip()[:150]
    return ""
