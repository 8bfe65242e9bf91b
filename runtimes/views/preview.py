"""HTML interface of the placement preview: the standalone page, the policy-page panel and the htmx results.

* `GET /preview/` shows the form (policy picker or pasted YAML); `?policy=NAME` preselects a policy and previews it.
* `POST /preview/` previews the submitted form: a full page without JavaScript, only the results with htmx.
* `POST /preview/results/` is what the form's htmx trigger posts to as the user types (debounced 300 ms).
* `GET /preview/panel/<name>/` is the panel that `static/js/preview.js` mounts into the policy page's
  `<section id="preview-panel" data-runtime="NAME">`.

Bad input never becomes a 500: it is shown next to the field it concerns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import View

from runtimes.domain.constants import MAX_NUM_NODES
from runtimes.domain.preview import API_VERSIONS, FRAGMENTATIONS, SYNTHETIC_BOUNDS, PreviewInputError
from runtimes.errors import PolicyNotFound
from runtimes.forms.preview import (
    FORM_FIELDS,
    SYNTHETIC_LABELS,
    field_errors,
    form_defaults,
    form_values,
    request_data_from_form,
)
from runtimes.selectors import policy_list
from runtimes.services.preview import (
    live_source_available,
    preview_manifest,
    preview_policy,
    preview_request_parse,
)
from runtimes.views.policies import policy_or_404
from trainer_portal.permissions import CapabilityRequiredMixin
from trainer_portal.roles import PREVIEW_RUN


def _policy_names() -> list[str]:
    return list(policy_list().values_list("name", flat=True))


def _run(values: Mapping[str, str]) -> dict[str, Any]:
    """Return the template context for form `values`: `result` or `errors` (by field) and `problems`."""
    try:
        preview_request = preview_request_parse(request_data_from_form(values))
        if values.get("manifest", "").strip():
            result = preview_manifest(manifest=values["manifest"], request=preview_request)
        elif values.get("policy"):
            result = preview_policy(name=values["policy"], request=preview_request)
        else:
            raise PreviewInputError([{"path": "policy", "message": "choose a saved policy or paste a manifest"}])
    except PolicyNotFound as error:
        return {"errors": {"policy": [error.message]}, "problems": [], "result": None}
    except PreviewInputError as error:
        by_field, other = field_errors(error.errors)
        manifest_problems = [e for e in error.errors if e["path"].startswith("manifest") and e["path"] != "manifest"]
        return {"errors": by_field, "problems": [*other, *manifest_problems], "result": None}
    return {"errors": {}, "problems": [], "result": result}


def _context(values: dict[str, str], *, fixed_policy: str = "", run: bool = True, with_form: bool = True) -> dict:
    """Return the template context: form values and choices, and (when `run`) the preview or its errors.

    `with_form=False` (the htmx results fragment) skips what only the form needs, such as the policy names query.
    """
    context: dict[str, Any] = {
        "values": values,
        "fixed_policy": fixed_policy,
        "api_versions": API_VERSIONS,
        "max_num_nodes": MAX_NUM_NODES,
        "fragmentations": FRAGMENTATIONS,
        "live_available": live_source_available(),
        "policy_names": _policy_names() if with_form and not fixed_policy else [],
        "errors": {},
        "problems": [],
        "result": None,
    }
    if run:
        context.update(_run(values))
    context["synthetic_fields"] = [
        {
            "name": name,
            "label": label,
            "value": values.get(name, ""),
            "errors": context["errors"].get(name),
            "min": SYNTHETIC_BOUNDS.get(name, (0, 0))[0],
            "max": SYNTHETIC_BOUNDS.get(name, (0, 0))[1],
        }
        for name, label in SYNTHETIC_LABELS.items()
    ]
    # The panel of a policy page has no policy picker or manifest box: their error slots do not exist there.
    shown = [name for name in FORM_FIELDS if not (fixed_policy and name in ("policy", "manifest"))]
    context["form_errors"] = [(name, context["errors"].get(name)) for name in shown]
    return context


class PreviewPageView(CapabilityRequiredMixin, View):
    """The standalone preview page: GET shows the form, POST previews (full page, or results only via htmx)."""

    capability = PREVIEW_RUN

    def get(self, request: HttpRequest) -> HttpResponse:
        """Return the page; previews right away when `?policy=NAME` (or any form field) is in the query."""
        values = form_values(request.GET) if request.GET else form_defaults()
        return render(request, "preview/page.html", _context(values, run=bool(values["policy"])))

    def post(self, request: HttpRequest) -> HttpResponse:
        """Return the preview of the submitted form: the results fragment for htmx, the whole page otherwise."""
        values = form_values(request.POST)
        fixed = request.POST.get("fixedPolicy", "") if values["policy"] == request.POST.get("fixedPolicy") else ""
        htmx = bool(request.htmx)
        context = _context(values, fixed_policy=fixed, with_form=not htmx)
        if htmx:
            return render(request, "preview/_results.html", {**context, "oob": True})
        return render(request, "preview/page.html", context)


class PreviewResultsView(CapabilityRequiredMixin, View):
    """The htmx endpoint: POST the form, get the results fragment (with out-of-band field errors)."""

    capability = PREVIEW_RUN

    def post(self, request: HttpRequest) -> HttpResponse:
        """Return `preview/_results.html` for the submitted form; 200 even for bad input (errors are inline)."""
        values = form_values(request.POST)
        fixed = request.POST.get("fixedPolicy", "")
        context = _context(values, fixed_policy=fixed if fixed == values["policy"] else "", with_form=False)
        return render(request, "preview/_results.html", {**context, "oob": True})


class PreviewPanelView(CapabilityRequiredMixin, View):
    """The panel for a policy page: the form bound to one policy and its first preview."""

    capability = PREVIEW_RUN

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        """Return `preview/_panel.html` for policy `name`; 404 when there is no such policy."""
        policy = policy_or_404(name)
        values = form_values(request.GET) if request.GET else form_defaults()
        values["policy"] = policy.name
        values["manifest"] = ""
        return render(request, "preview/_panel.html", _context(values, fixed_policy=policy.name))


