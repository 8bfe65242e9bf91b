"""The authentication backend: verifies the provider's tokens (mozilla-django-oidc) and maps claims to a user."""

from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from . import discovery, mapping, services
from .settings_access import oidc_setting, sso_settings

logger = logging.getLogger(__name__)
SESSION_ERROR_KEY = "sso_error"


def _claim(claims: dict, key: str) -> str:
    value = claims.get(key)
    return value.replace("\x00", "").strip() if isinstance(value, str) else ""


class PortalOIDCBackend(OIDCAuthenticationBackend):
    """Signs users in with the OpenID provider; the provider's groups decide the portal role.

    Endpoints are read lazily from the discovery document: constructing the backend (Django does for every
    password login) never reaches the provider.
    """

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args, **kwargs):  # the parent reads every endpoint here; ours are properties
        self.UserModel = get_user_model()

    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_TOKEN_ENDPOINT"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_USER_ENDPOINT"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_JWKS_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: sso_settings().client_id)
    OIDC_RP_CLIENT_SECRET = property(lambda self: sso_settings().client_secret)
    OIDC_RP_SIGN_ALGO = property(lambda self: oidc_setting("OIDC_RP_SIGN_ALGO", "RS256"))
    OIDC_RP_IDP_SIGN_KEY = None

    def authenticate(self, request, **kwargs):
        """Return the signed-in user, or None (password logins pass through untouched)."""
        if request is None or not sso_settings().enabled or "code" not in request.GET:
            return None
        try:
            return super().authenticate(request, **kwargs)
        except discovery.ProviderUnavailable as exc:
            self._refuse(str(exc))
            return None

    def get_userinfo(self, access_token, id_token, payload):
        """Return the ID token's claims overlaid with the userinfo endpoint's (groups may be in either)."""
        claims = dict(payload)
        if oidc_setting("OIDC_OP_USER_ENDPOINT"):
            claims.update(super().get_userinfo(access_token, id_token, payload) or {})
        return claims

    def verify_claims(self, claims):
        return bool(_claim(claims, "sub"))

    def filter_users_by_claims(self, claims):
        user = services.sso_user_find(issuer=sso_settings().issuer, subject=_claim(claims, "sub"))
        return [user] if user else self.UserModel.objects.none()

    def _membership(self, claims) -> mapping.Membership:
        sso = sso_settings()
        membership = mapping.membership(claims, sso)
        if not membership.roles:
            groups = ", ".join(sorted(mapping.idp_groups(claims, sso.groups_claim))) or "none"
            self._refuse(f"You signed in at {sso.provider_name}, but none of your groups ({groups}) gives a role in "
                         "Trainer Portal. Ask a platform admin to map one of them.")
            raise SuspiciousOperation("no mapped group")
        return membership

    def create_user(self, claims):
        sso = sso_settings()
        membership = self._membership(claims)
        return services.sso_user_create(
            issuer=sso.issuer, subject=_claim(claims, "sub"), username=mapping.username(claims, sso),
            email=_claim(claims, "email"), first_name=_claim(claims, "given_name"),
            last_name=_claim(claims, "family_name"), membership=membership,
        )

    def update_user(self, user, claims):
        membership = self._membership(claims)
        return services.sso_user_update(user=user, email=_claim(claims, "email"),
                                        first_name=_claim(claims, "given_name"),
                                        last_name=_claim(claims, "family_name"), membership=membership)

    def _refuse(self, message: str) -> None:
        logger.warning("SSO sign-in refused: %s", message)
        request = getattr(self, "request", None)
        if request is not None and hasattr(request, "session"):
            request.session[SESSION_ERROR_KEY] = message
            request.session.save()
