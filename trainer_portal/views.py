"""Project-level pages: the landing page, the (rate-limited) login page and a health probe."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.core.exceptions import NON_FIELD_ERRORS
from django.forms.utils import ErrorDict
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from . import roles
from .sso.backends import SESSION_ERROR_KEY as SSO_ERROR_KEY
from .throttling import AuthRateThrottle


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Redirect to the first section the user's role opens: the policy list, else their TrainJobs; a user without
    a role gets a page saying so (200: it is the page they may see)."""
    if roles.has_capability(request.user, roles.POLICIES_VIEW):
        return redirect("runtimes:list")
    if roles.has_capability(request.user, roles.JOBS_VIEW):
        return redirect("jobs:list")
    return render(request, "no_role.html")


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Return 200 with {"status": "ok"}; used by container health checks (no auth, no DB)."""
    return JsonResponse({"status": "ok"})


class ThrottledLoginView(LoginView):
    """Django's login page; more than ``DEFAULT_THROTTLE_RATES["auth"]`` attempts from one address answer 429.

    With single sign-on on, the page offers "Sign in with <provider>" and shows why a sign-in was refused. With
    ``TRAINER_PORTAL_LOCAL_LOGIN=break-glass`` the password form appears only at ``?local=1`` and admits platform
    admins only (the break-glass account); everyone else signs in through the provider.
    """

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        sso = settings.TRAINER_PORTAL_SSO
        local = self.request.GET.get("local") == "1" or self.request.method == "POST"
        context.update(
            sso_enabled=sso.enabled, sso_provider=sso.provider_name,
            sso_error=self.request.session.pop(SSO_ERROR_KEY, "") if hasattr(self.request, "session") else "",
            show_password_form=not sso.enabled or sso.local_login == "on" or local,
        )
        return context

    def form_valid(self, form):
        sso = settings.TRAINER_PORTAL_SSO
        if sso.enabled and sso.local_login == "break-glass" and not roles.is_platform_admin(form.get_user()):
            form._errors = ErrorDict({NON_FIELD_ERRORS: form.error_class(
                [f"Password sign-in is kept for break-glass admins. Sign in with {sso.provider_name}."],
                error_class="nonfield")})
            return self.form_invalid(form)
        return super().form_valid(form)

    def post(self, request, *args, **kwargs):
        throttle = AuthRateThrottle()
        if throttle.allow_request(request, None):
            return super().post(request, *args, **kwargs)
        wait = throttle.retry_after()
        # An unbound form: the password is not even checked while the address is throttled.
        form = self.get_form_class()(request, initial={"username": request.POST.get("username", "")})
        message = f"Too many login attempts from your address. Try again in {wait} seconds."
        form._errors = ErrorDict({NON_FIELD_ERRORS: form.error_class([message], error_class="nonfield")})
        response = self.render_to_response(self.get_context_data(form=form), status=429)
        response["Retry-After"] = str(wait)
        return response
