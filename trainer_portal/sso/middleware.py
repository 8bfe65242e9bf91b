"""Re-checks an SSO user's session with the provider when their ID token's trust period ends (silent, prompt=none)."""

from __future__ import annotations

from django.http import HttpResponse
from django.urls import reverse
from django.utils.deprecation import MiddlewareMixin
from django.utils.functional import cached_property
from mozilla_django_oidc.middleware import SessionRefresh

from . import discovery
from .settings_access import oidc_setting, sso_settings


class SsoSessionRefresh(SessionRefresh):
    """mozilla-django-oidc's SessionRefresh with discovered endpoints, no provider call at start-up, and htmx.

    A live page's htmx poll cannot follow a redirect to the provider; it gets ``HX-Redirect`` so the whole page goes
    through the provider and comes back to where it was. When SSO is off this middleware does nothing.
    """

    get_settings = staticmethod(oidc_setting)

    def __init__(self, get_response):  # the parent reads the endpoint here: defer it to the first refresh
        MiddlewareMixin.__init__(self, get_response)
        self.OIDC_EXEMPT_URLS = oidc_setting("OIDC_EXEMPT_URLS", [])
        self.OIDC_STATE_SIZE = 32
        self.OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
        self.OIDC_USE_NONCE = True
        self.OIDC_NONCE_SIZE = 32

    # Read per request (the parent reads them once at start-up): the provider is asked only when a session is due.
    OIDC_OP_AUTHORIZATION_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: sso_settings().client_id)
    OIDC_RP_SCOPES = property(lambda self: sso_settings().scopes)

    @cached_property
    def exempt_urls(self):
        """Return the paths never re-checked: the SSO flow itself, login/logout and the probes."""
        return {reverse(name) for name in ("oidc_authentication_init", "oidc_authentication_callback", "login",
                                           "logout")} | {"/healthz", "/readyz", "/favicon.ico"}

    def is_refreshable_url(self, request):
        return (sso_settings().enabled and "oidc_id_token_expiration" in request.session
                and super().is_refreshable_url(request))

    def process_request(self, request):
        try:
            response = super().process_request(request)
        except discovery.ProviderUnavailable:
            return None  # keep the session until the provider answers again
        if response is not None and request.headers.get("HX-Request") == "true" and response.status_code == 302:
            current = request.headers.get("HX-Current-URL", "")
            if current:
                request.session["oidc_login_next"] = current
            hx = HttpResponse(status=204)
            hx["HX-Redirect"] = response["Location"]
            return hx
        return response
