"""The "API tokens" page: the signed-in user's tokens, a form for a new one, and revoke buttons."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views import View

from trainer_portal.permissions import CapabilityRequiredMixin
from trainer_portal.roles import TOKENS_OWN

from .errors import TokenNotFound
from .forms import TokenCreateForm
from .selectors import token_list
from .services import token_issue, token_revoke


class TokenListView(CapabilityRequiredMixin, View):
    """GET: the list and the form. POST: issue a token and show its key once."""

    capability = TOKENS_OWN

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request, TokenCreateForm())

    def post(self, request: HttpRequest) -> HttpResponse:
        form = TokenCreateForm(request.POST)
        if not form.is_valid():
            return self._page(request, form, status=400)
        issued = token_issue(user=request.user, name=form.cleaned_data["name"],
                             lifetime=timedelta(days=form.cleaned_data["days"]))
        return self._page(request, TokenCreateForm(), issued=issued, status=201)

    def _page(self, request, form, *, issued=None, status: int = 200) -> HttpResponse:
        context = {"form": form, "tokens": token_list(user=request.user), "issued": issued, "now": timezone.now()}
        return render(request, "tokens/list.html", context, status=status)


class TokenRevokeView(CapabilityRequiredMixin, View):
    """POST: revoke one of the user's own tokens; 404 for anyone else's."""

    capability = TOKENS_OWN

    def post(self, request: HttpRequest, token_id: int) -> HttpResponse:
        try:
            token_revoke(user=request.user, token_id=token_id)
        except TokenNotFound:
            raise Http404("No such token.")
        messages.success(request, "Token revoked: it no longer works.")
        return redirect("tokens:list")
