"""Project-level pages: the landing page and a health probe."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET

from . import roles


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Redirect to the policy list, the portal's main page (data scientists, who see no policies: their jobs)."""
    if not roles.is_viewer(request.user) and roles.is_data_scientist(request.user):
        return redirect("jobs:list")
    return redirect("runtimes:list")


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Return 200 with {"status": "ok"}; used by container health checks (no auth, no DB)."""
    return JsonResponse({"status": "ok"})
