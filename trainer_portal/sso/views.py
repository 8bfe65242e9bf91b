"""Sign-in, callback and sign-out with the identity provider (mozilla-django-oidc's views, endpoints discovered)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse
from mozilla_django_oidc import views as oidc_views

from . import discovery
from .backends import SESSION_ERROR_KEY
from .settings_access import oidc_setting, sso_settings


def _to_login(request: HttpRequest, message: str) -> HttpResponseRedirect:
    request.session[SESSION_ERROR_KEY] = message
    return HttpResponseRedirect(reverse("login"))


class SsoLoginView(oidc_views.OIDCAuthenticationRequestView):
    """Redirects to the provider's authorization endpoint (authorization code flow with PKCE and a nonce)."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args, **kwargs):  # the parent reads the endpoint here; an unreachable provider is no 500
        self.unavailable = ""
        try:
            super().__init__(*args, **kwargs)
        except discovery.ProviderUnavailable as exc:
            self.unavailable = str(exc)

    def get(self, request):
        if not sso_settings().enabled:
            return HttpResponseRedirect(reverse("login"))
        if self.unavailable:
            return _to_login(request, f"Single sign-on is unavailable: {self.unavailable}. Try again shortly.")
        return super().get(request)


class SsoCallbackView(oidc_views.OIDCAuthenticationCallbackView):
    """Receives the provider's answer, signs the user in or back to the login page with the reason."""

    get_settings = staticmethod(oidc_setting)

    def login_failure(self):
        if self.request.GET.get("error") and SESSION_ERROR_KEY not in self.request.session:
            description = self.request.GET.get("error_description") or self.request.GET["error"]
            self.request.session[SESSION_ERROR_KEY] = f"The identity provider refused the sign-in: {description[:300]}"
        user = getattr(self, "user", None)
        if user is not None and not user.is_active:
            self.request.session[SESSION_ERROR_KEY] = "This account is disabled in Trainer Portal."
        return HttpResponseRedirect(reverse("login"))


class PortalLogoutView(auth_views.LogoutView):
    """Signs out of the portal; for a user who signed in with SSO, also at the provider (RP-initiated logout)."""

    def post(self, request, *args, **kwargs):
        id_token = request.session.get("oidc_id_token")
        response = super().post(request, *args, **kwargs)
        if not id_token or not sso_settings().enabled:
            return response
        try:
            end_session = oidc_setting("OIDC_OP_LOGOUT_ENDPOINT", None)
        except discovery.ProviderUnavailable:
            return response  # signed out here; the provider's session ends on its own
        if not end_session:
            return response
        query = urlencode({"id_token_hint": id_token, "client_id": sso_settings().client_id,
                           "post_logout_redirect_uri": request.build_absolute_uri(reverse("login"))})
        return HttpResponseRedirect(f"{end_session}?{query}")
