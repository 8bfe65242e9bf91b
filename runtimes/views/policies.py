"""HTML pages for runtime policies: list, detail, guided editor (form ⇄ YAML), import, history, export.

Views stay thin: they read through `runtimes.selectors`, write through `runtimes.services`, and turn the domain's
problems into inline messages. Every page needs ``policies.view``; every page or endpoint that
can change something needs ``policies.edit`` (`CapabilityRequiredMixin`), GET included, so a viewer gets
403 on edit URLs rather than a form they cannot submit.

The editor works without JavaScript: the save POST carries both the form and the YAML text; the YAML is the source
of truth and the form is merged into it only when the user changed the form (see `_merge`). With htmx, the form
re-renders the YAML on every change (`RenderYamlView`) and valid YAML refills the form (`ParseYamlView`).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views import View

from runtimes import selectors
from runtimes.domain.manifest import dump_many, dump_yaml
from runtimes.domain.numbers import parse_whole_number
from runtimes.errors import (
    ImportInvalid,
    PolicyInvalid,
    PolicyNotFound,
    RevisionNotFound,
    StaleVersion,
)
from runtimes.forms.filters import PolicyFilterForm
from runtimes.forms.imports import ImportForm, VersionForm
from runtimes.models import RuntimePolicy
from runtimes.services import policies as policy_services
from trainer_portal.permissions import CapabilityRequiredMixin
from trainer_portal.roles import POLICIES_EDIT, POLICIES_VIEW

PAGE_SIZE = 50
EDITOR_TEMPLATE = "runtimes/editor.html"
FRAMEWORK_SUGGESTIONS = ("torch", "deepspeed", "torchtune", "mpi", "jax", "xgboost", "flux", "mlx")


def policy_or_404(name: str) -> RuntimePolicy:
    """Return the policy named ``name`` (through the selector); raise Http404 when there is none."""
    try:
        return selectors.policy_get(name=name)
    except PolicyNotFound:
        raise Http404(f"No policy named '{name}'.")


def _report_dicts(manifest: dict) -> list[dict[str, Any]]:
    # The settings and the last cluster check (composite, topology gate, disruptionMode form) apply, as on save.
    return policy_services.policy_validate(manifest=manifest).as_dicts()


def _yaml_filename(name: str) -> str:
    safe = "".join(ch for ch in name if ch.isalnum() or ch in "-.") or "runtime"
    return f"{safe}.yaml"


# --------------------------------------------------------------------------------------------------- reading


class PolicyListView(CapabilityRequiredMixin, View):
    """The policy table with search, filters and sorting (GET parameters); htmx swaps just the results."""

    capability = POLICIES_VIEW

    def get(self, request: HttpRequest) -> HttpResponse:
        filters = PolicyFilterForm(request.GET or None, frameworks=selectors.policy_frameworks())
        criteria = filters.filters() if filters.is_bound else PolicyFilterForm.default_filters()
        policies = selectors.policy_list(**criteria)
        page = Paginator(policies, PAGE_SIZE).get_page(request.GET.get("page"))
        filtered = any(criteria[key] for key in ("search", "framework", "scheduling_mode", "sync_state"))
        context = {
            "filters": filters,
            "page_obj": page,
            "filtered": filtered,
            "total_count": page.paginator.count if not filtered else selectors.policy_list().count(),
        }
        template = "runtimes/list.html#results" if request.htmx and not request.htmx.boosted else "runtimes/list.html"
        return render(request, template, context)


class PolicyDetailView(CapabilityRequiredMixin, View):
    """Summary, warnings, YAML (copy/download), recent revisions and the preview-panel mount point."""

    capability = POLICIES_VIEW

    RECENT_REVISIONS = 10

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = policy_or_404(name)
        revisions = list(selectors.revision_list(policy=policy)[: self.RECENT_REVISIONS + 1])
        context = {
            "policy": policy,
            "yaml": dump_yaml(policy.manifest),
            "revisions": revisions[: self.RECENT_REVISIONS],
            "more_revisions": len(revisions) > self.RECENT_REVISIONS,
            "spec": policy.manifest.get("spec") if isinstance(policy.manifest.get("spec"), dict) else {},
            "metadata": policy.manifest.get("metadata") if isinstance(policy.manifest.get("metadata"), dict) else {},
        }
        return render(request, "runtimes/detail.html", context)


class PolicyExportView(CapabilityRequiredMixin, View):
    """The policy's YAML as a download, ready for `kubectl apply --server-side -f` (`?inline=1` shows it)."""

    capability = POLICIES_VIEW

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = policy_or_404(name)
        manifest = selectors.manifest_in_cluster_form(policy.manifest)
        response = HttpResponse(dump_yaml(manifest), content_type="application/yaml; charset=utf-8")
        if not request.GET.get("inline"):
            response["Content-Disposition"] = f'attachment; filename="{_yaml_filename(policy.name)}"'
        return response


class PolicyExportAllView(CapabilityRequiredMixin, View):
    """Every policy (or the filtered list) as one multi-document YAML download."""

    capability = POLICIES_VIEW

    def get(self, request: HttpRequest) -> HttpResponse:
        filters = PolicyFilterForm(request.GET or None, frameworks=selectors.policy_frameworks())
        criteria = filters.filters() if filters.is_bound else PolicyFilterForm.default_filters()
        manifests = [selectors.manifest_in_cluster_form(p.manifest) for p in selectors.policy_list(**criteria)]
        response = HttpResponse(dump_many(manifests), content_type="application/yaml; charset=utf-8")
        stamp = timezone.now().strftime("%Y%m%d-%H%M")
        response["Content-Disposition"] = f'attachment; filename="clustertrainingruntimes-{stamp}.yaml"'
        return response


class PolicyHistoryView(CapabilityRequiredMixin, View):
    """Every revision with who/when/why, a picker to diff any two, and rollback buttons for admins."""

    capability = POLICIES_VIEW

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = policy_or_404(name)
        revisions = list(selectors.revision_list(policy=policy))
        return render(request, "runtimes/history.html", {"policy": policy, "revisions": revisions})


MAX_REVISION = 2**31 - 1


def revision_number(value: str | None) -> int | None:
    """Return the revision number in query or form text `value`, or None when it names none (1 … 2³¹-1)."""
    number = parse_whole_number(value)
    return number if number is not None and 1 <= number <= MAX_REVISION else None


class PolicyDiffView(CapabilityRequiredMixin, View):
    """Unified YAML diff between two revisions (`?from=&to=`; defaults: previous → current)."""

    capability = POLICIES_VIEW

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = policy_or_404(name)
        to_number = revision_number(request.GET.get("to")) or policy.version
        from_number = revision_number(request.GET.get("from")) or max(to_number - 1, 1)
        try:
            text, changes = selectors.revision_diff(policy=policy, from_number=from_number, to_number=to_number)
        except RevisionNotFound as exc:
            raise Http404(exc.message)
        context = {
            "policy": policy,
            "from_number": from_number,
            "to_number": to_number,
            "diff": text,
            "changes": changes,
            "revisions": list(selectors.revision_list(policy=policy)),
        }
        return render(request, "runtimes/diff.html", context)


# --------------------------------------------------------------------------------------------------- confirms


class PolicyRollbackView(CapabilityRequiredMixin, View):
    """GET: what rolling back to revision N would change. POST: do it (a new revision), with optimistic locking."""

    capability = POLICIES_EDIT

    def _context(self, policy: RuntimePolicy, number: int) -> dict[str, Any]:
        try:
            revision = selectors.revision_get(policy=policy, number=number)
            text, _changes = selectors.revision_diff(policy=policy, from_number=policy.version, to_number=number)
        except RevisionNotFound as exc:
            raise Http404(exc.message)
        form = VersionForm(initial={"version": policy.version})
        return {"policy": policy, "revision": revision, "diff": text, "form": form}

    def get(self, request: HttpRequest, name: str, number: int) -> HttpResponse:
        policy = policy_or_404(name)
        return render(request, "runtimes/rollback.html", self._context(policy, number))

    def post(self, request: HttpRequest, name: str, number: int) -> HttpResponse:
        policy = policy_or_404(name)
        form = VersionForm(request.POST)
        if not form.is_valid():
            messages.error(request, "The confirmation lost its version number; review the changes and confirm again.")
            return redirect("runtimes:rollback", name=policy.name, number=number)
        expected = form.cleaned_data["version"]
        try:
            updated = policy_services.policy_rollback(
                name=policy.name, to_revision=number, expected_version=expected, author=request.user
            )
        except RevisionNotFound as exc:
            raise Http404(exc.message)
        except StaleVersion as exc:
            messages.error(request, exc.message)
            return redirect("runtimes:rollback", name=policy.name, number=number)
        except PolicyInvalid as exc:
            context = self._context(policy, number)
            context["problems"] = exc.problems
            context["error"] = f"Revision {number} does not pass today's validation, so it cannot be restored as is."
            return render(request, "runtimes/rollback.html", context, status=400)
        if updated.version == policy.version:
            messages.info(request, f"Revision {number} is identical to the current manifest; nothing changed.")
        else:
            messages.success(request, f"Rolled back to revision {number}; this is now revision {updated.version}.")
        return redirect("runtimes:detail", name=policy.name)


class PolicyDeleteView(CapabilityRequiredMixin, View):
    """GET: confirm. POST: delete the policy and its history (not the cluster object)."""

    capability = POLICIES_EDIT

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = policy_or_404(name)
        form = VersionForm(initial={"version": policy.version})
        return render(request, "runtimes/delete.html", {"policy": policy, "form": form})

    def post(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = policy_or_404(name)
        form = VersionForm(request.POST)
        if not form.is_valid():
            messages.error(request, "The confirmation lost its version number; confirm again.")
            return redirect("runtimes:delete", name=policy.name)
        expected = form.cleaned_data["version"]
        try:
            policy_services.policy_delete(name=policy.name, expected_version=expected, actor=request.user)
        except PolicyNotFound:
            raise Http404(f"No policy named '{name}'.")
        except StaleVersion as exc:
            messages.error(request, exc.message)
            return redirect("runtimes:delete", name=policy.name)
        messages.success(request, f"Deleted policy {policy.name} and its history.")
        return redirect("runtimes:list")


# --------------------------------------------------------------------------------------------------- import


class PolicyImportView(CapabilityRequiredMixin, View):
    """Paste or upload YAML/JSON (one or many documents); all or nothing, with per-document errors."""

    capability = POLICIES_EDIT

    template_name = "runtimes/import.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return render(request, self.template_name, {"form": ImportForm()})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = ImportForm(request.POST, request.FILES)
        if not form.is_valid():
            return render(request, self.template_name, {"form": form}, status=400)
        try:
            result = policy_services.policies_import(
                text=form.cleaned_data["payload"],
                author=request.user,
                message=form.cleaned_data.get("message") or "Imported",
                mode=form.cleaned_data["mode"],
            )
        except ImportInvalid as exc:
            context = {"form": form, "error": exc.message, "documents": exc.documents}
            return render(request, self.template_name, context, status=400)
        context = {"form": ImportForm(), "result": result}
        total = len(result.created) + len(result.updated)
        if total == 1 and len(result.documents) == 1:
            messages.success(request, f"Imported {result.documents[0].name}.")
            return redirect("runtimes:detail", name=result.documents[0].name)
        return render(request, self.template_name, context)


# --------------------------------------------------------------------------------------------------- editor




