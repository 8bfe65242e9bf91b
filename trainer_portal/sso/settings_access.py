"""The provider endpoints mozilla-django-oidc reads as settings, answered from the discovery document instead.

mozilla-django-oidc reads ``OIDC_OP_*_ENDPOINT`` through each class's ``get_settings``; our subclasses route those
names here, so the operator configures only the issuer and the endpoints are never stale or mistyped.
"""

from __future__ import annotations

from django.conf import settings
from mozilla_django_oidc.utils import import_from_settings

from . import config, discovery

ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_LOGOUT_ENDPOINT": "end_session_endpoint",
}


# mozilla-django-oidc settings answered from the SSO settings (one source; tests swap one object).
_FROM_SSO = {
    "OIDC_RP_CLIENT_ID": lambda sso: sso.client_id,
    "OIDC_RP_CLIENT_SECRET": lambda sso: sso.client_secret,
    "OIDC_RP_SCOPES": lambda sso: sso.scopes,
    "OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS": lambda sso: sso.session_seconds,
    "OIDC_TIMEOUT": lambda sso: sso.timeout_seconds,
}


def sso_settings() -> config.SsoSettings:
    """Return the SSO settings of this process (``settings.TRAINER_PORTAL_SSO``)."""
    return settings.TRAINER_PORTAL_SSO


def oidc_setting(attr: str, *default):
    """Return a mozilla-django-oidc setting; endpoint names come from the provider's discovery document.

    Raises discovery.ProviderUnavailable when an endpoint is asked for and the provider cannot be read.
    """
    sso_value = _FROM_SSO.get(attr)
    if sso_value is not None:
        return sso_value(sso_settings())
    if attr in ENDPOINTS:
        sso = sso_settings()
        document = discovery.provider_metadata(sso.issuer, timeout=sso.timeout_seconds)
        value = document.get(ENDPOINTS[attr])
        if value is None and default:
            return default[0]
        return value
    return import_from_settings(attr, *default)
