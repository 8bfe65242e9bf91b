"""SSO settings read from the environment once, as plain data (no Django import: settings.py uses this).

Variables (docs/operations.md, "Single sign-on"):
``TRAINER_PORTAL_OIDC_ISSUER`` (turns SSO on; the provider's discovery document is read from
``<issuer>/.well-known/openid-configuration``), ``_CLIENT_ID``, ``_CLIENT_SECRET``, ``_SCOPES``,
``_GROUPS_CLAIM`` (default ``groups``), ``_USERNAME_CLAIM`` (default ``preferred_username``),
``_ADMIN_GROUPS`` / ``_VIEWER_GROUPS`` / ``_DATA_SCIENTIST_GROUPS`` (comma-separated IdP group names; ``*`` = every
user the provider signs in), ``_PROVIDER_NAME`` (the login button's text), ``_SESSION_SECONDS`` (how long an ID token
is trusted before the session is re-checked with the provider), and ``TRAINER_PORTAL_LOCAL_LOGIN``: ``on`` (default:
password and SSO), ``break-glass`` (the password form only at ``/login/?local=1``, for platform admins only).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

LOCAL_LOGIN_MODES = ("on", "break-glass")
EVERYONE = "*"


def _groups(value: str) -> frozenset[str]:
    return frozenset(part.strip() for part in value.split(",") if part.strip())


@dataclass(frozen=True)
class SsoSettings:
    """What the portal needs to know about its identity provider and how its groups map to roles."""

    issuer: str = ""
    client_id: str = ""
    client_secret: str = ""
    scopes: str = "openid email profile groups"
    groups_claim: str = "groups"
    username_claim: str = "preferred_username"
    admin_groups: frozenset[str] = field(default_factory=frozenset)
    viewer_groups: frozenset[str] = field(default_factory=frozenset)
    data_scientist_groups: frozenset[str] = field(default_factory=frozenset)
    provider_name: str = "single sign-on"
    session_seconds: int = 900
    local_login: str = "on"
    timeout_seconds: float = 5.0

    @property
    def enabled(self) -> bool:
        return bool(self.issuer)

    def origins(self) -> list[str]:
        """Return the provider's origin (scheme://host[:port]) as a one-item list, or [] when SSO is off."""
        if not self.enabled:
            return []
        scheme, _, rest = self.issuer.partition("://")
        return [f"{scheme}://{rest.split('/', 1)[0]}"]

    def problems(self) -> list[str]:
        """Return what is wrong with the configuration (empty when SSO is off or complete)."""
        if not self.enabled:
            return []
        problems = []
        if not self.issuer.startswith(("https://", "http://")):
            problems.append("TRAINER_PORTAL_OIDC_ISSUER must be an http(s) URL")
        if not self.client_id:
            problems.append("TRAINER_PORTAL_OIDC_CLIENT_ID is required when TRAINER_PORTAL_OIDC_ISSUER is set")
        if self.local_login not in LOCAL_LOGIN_MODES:
            problems.append(f"TRAINER_PORTAL_LOCAL_LOGIN must be one of {', '.join(LOCAL_LOGIN_MODES)}")
        if not (self.admin_groups or self.viewer_groups or self.data_scientist_groups):
            problems.append("map at least one IdP group to a role (TRAINER_PORTAL_OIDC_ADMIN_GROUPS, "
                            "_VIEWER_GROUPS or _DATA_SCIENTIST_GROUPS); otherwise nobody can sign in")
        return problems


def load(environ: dict[str, str] | None = None) -> SsoSettings:
    """Return the SSO settings from ``environ`` (default: the process environment)."""
    env = os.environ if environ is None else environ

    def get(name: str, default: str = "") -> str:
        return env.get(f"TRAINER_PORTAL_OIDC_{name}", default).strip()

    return SsoSettings(
        issuer=get("ISSUER").rstrip("/"),
        client_id=get("CLIENT_ID"),
        client_secret=get("CLIENT_SECRET"),
        scopes=get("SCOPES", "openid email profile groups"),
        groups_claim=get("GROUPS_CLAIM", "groups"),
        username_claim=get("USERNAME_CLAIM", "preferred_username"),
        admin_groups=_groups(get("ADMIN_GROUPS")),
        viewer_groups=_groups(get("VIEWER_GROUPS")),
        data_scientist_groups=_groups(get("DATA_SCIENTIST_GROUPS")),
        provider_name=get("PROVIDER_NAME", "single sign-on"),
        session_seconds=int(get("SESSION_SECONDS", "900") or 900),
        local_login=env.get("TRAINER_PORTAL_LOCAL_LOGIN", "on").strip() or "on",
        timeout_seconds=float(get("TIMEOUT_SECONDS", "5") or 5),
    )
