"""HTML pages for runtime policies: list, detail, guided editor (form ⇄ YAML), import, history, export.

Views stay thin: they read through `runtimes.selectors`, write through `runtimes.services`, and turn the domain's
problems into inline messages. Every page needs a portal role (`ViewerRequiredMixin`); every page or endpoint that
can change something needs the platform-admin role (`PlatformAdminRequiredMixin`), GET included, so a viewer gets
403 on edit URLs rather than a form they cannot submit.

The editor works without JavaScript: the save POST carries both the form and the YAML text; the YAML is the source
of truth and the form is merged into it only when the user changed the form (see `_merge`). With htmx, the form
re-renders the YAML on every change (`RenderYamlView`) and valid YAML refills the form (`ParseYamlView`).
"""

from __future__ import annotations

import contextlib
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views import View

from trainer_portal.cluster.snapshots import live_snapshot
from trainer_portal.permissions import PlatformAdminRequiredMixin, ViewerRequiredMixin

from . import selectors, services
from .choices import RevisionSource
from .domain.editing import PolicyFields, apply_fields, fields_from_manifest
from .domain.manifest import ManifestError, dump_many, dump_yaml, load_runtime, new_runtime
from .domain.policy import add_basic_entry, validate_runtime
from .errors import ImportInvalid, PolicyInvalid, PolicyNameTaken, PolicyNotFound, RevisionNotFound, StaleVersion
from .forms import (
    ImportForm,
    PolicyEditor,
    PolicyFilterForm,
    SaveForm,
    VersionForm,
    composite_enabled,
    fields_digest,
    fields_to_json,
    merge_fields,
    problems_by_field,
    topology_key_choices,
)
from .models import RuntimePolicy

PAGE_SIZE = 50
EDITOR_TEMPLATE = "runtimes/editor.html"
FRAMEWORK_SUGGESTIONS = ("torch", "deepspeed", "torchtune", "mpi", "jax", "xgboost", "flux", "mlx")


def _policy_or_404(name: str) -> RuntimePolicy:
    try:
        return selectors.policy_get(name=name)
    except PolicyNotFound:
        raise Http404(f"No policy named '{name}'.")


# The editor's one-click fix for `scheduling.untargeted_replicated_job` (decision D3).
FIX_UNTARGETED = "fix-untargeted"


def _report_dicts(manifest: dict) -> list[dict[str, Any]]:
    return validate_runtime(manifest).as_dicts()


def _yaml_filename(name: str) -> str:
    safe = "".join(ch for ch in name if ch.isalnum() or ch in "-.") or "runtime"
    return f"{safe}.yaml"


# --------------------------------------------------------------------------------------------------- reading


class PolicyListView(ViewerRequiredMixin, View):
    """The policy table with search, filters and sorting (GET parameters); htmx swaps just the results."""

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


class PolicyDetailView(ViewerRequiredMixin, View):
    """Summary, warnings, YAML (copy/download), recent revisions and the preview-panel mount point."""

    RECENT_REVISIONS = 10

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = _policy_or_404(name)
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


class PolicyExportView(ViewerRequiredMixin, View):
    """The policy's YAML as a download, ready for `kubectl apply --server-side -f` (`?inline=1` shows it)."""

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = _policy_or_404(name)
        response = HttpResponse(dump_yaml(policy.manifest), content_type="application/yaml; charset=utf-8")
        if not request.GET.get("inline"):
            response["Content-Disposition"] = f'attachment; filename="{_yaml_filename(policy.name)}"'
        return response


class PolicyExportAllView(ViewerRequiredMixin, View):
    """Every policy (or the filtered list) as one multi-document YAML download."""

    def get(self, request: HttpRequest) -> HttpResponse:
        filters = PolicyFilterForm(request.GET or None, frameworks=selectors.policy_frameworks())
        criteria = filters.filters() if filters.is_bound else PolicyFilterForm.default_filters()
        manifests = [policy.manifest for policy in selectors.policy_list(**criteria)]
        response = HttpResponse(dump_many(manifests), content_type="application/yaml; charset=utf-8")
        stamp = timezone.now().strftime("%Y%m%d-%H%M")
        response["Content-Disposition"] = f'attachment; filename="clustertrainingruntimes-{stamp}.yaml"'
        return response


class PolicyHistoryView(ViewerRequiredMixin, View):
    """Every revision with who/when/why, a picker to diff any two, and rollback buttons for admins."""

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = _policy_or_404(name)
        revisions = list(selectors.revision_list(policy=policy))
        return render(request, "runtimes/history.html", {"policy": policy, "revisions": revisions})


def _revision_number(value: str | None) -> int | None:
    try:
        number = int(value or "")
    except ValueError:
        return None
    return number if number > 0 else None


class PolicyDiffView(ViewerRequiredMixin, View):
    """Unified YAML diff between two revisions (`?from=&to=`; defaults: previous → current)."""

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = _policy_or_404(name)
        to_number = _revision_number(request.GET.get("to")) or policy.version
        from_number = _revision_number(request.GET.get("from")) or max(to_number - 1, 1)
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


class PolicyRollbackView(PlatformAdminRequiredMixin, View):
    """GET: what rolling back to revision N would change. POST: do it (a new revision), with optimistic locking."""

    def _context(self, policy: RuntimePolicy, number: int) -> dict[str, Any]:
        try:
            revision = selectors.revision_get(policy=policy, number=number)
            text, _changes = selectors.revision_diff(policy=policy, from_number=policy.version, to_number=number)
        except RevisionNotFound as exc:
            raise Http404(exc.message)
        form = VersionForm(initial={"version": policy.version})
        return {"policy": policy, "revision": revision, "diff": text, "form": form}

    def get(self, request: HttpRequest, name: str, number: int) -> HttpResponse:
        policy = _policy_or_404(name)
        return render(request, "runtimes/rollback.html", self._context(policy, number))

    def post(self, request: HttpRequest, name: str, number: int) -> HttpResponse:
        policy = _policy_or_404(name)
        form = VersionForm(request.POST)
        if not form.is_valid():
            messages.error(request, "The confirmation lost its version number; review the changes and confirm again.")
            return redirect("runtimes:rollback", name=policy.name, number=number)
        expected = form.cleaned_data["version"]
        try:
            updated = services.policy_rollback(
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


class PolicyDeleteView(PlatformAdminRequiredMixin, View):
    """GET: confirm. POST: delete the policy and its history (not the cluster object)."""

    def get(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = _policy_or_404(name)
        form = VersionForm(initial={"version": policy.version})
        return render(request, "runtimes/delete.html", {"policy": policy, "form": form})

    def post(self, request: HttpRequest, name: str) -> HttpResponse:
        policy = _policy_or_404(name)
        form = VersionForm(request.POST)
        if not form.is_valid():
            messages.error(request, "The confirmation lost its version number; confirm again.")
            return redirect("runtimes:delete", name=policy.name)
        expected = form.cleaned_data["version"]
        try:
            services.policy_delete(name=policy.name, expected_version=expected, actor=request.user)
        except PolicyNotFound:
            raise Http404(f"No policy named '{name}'.")
        except StaleVersion as exc:
            messages.error(request, exc.message)
            return redirect("runtimes:delete", name=policy.name)
        messages.success(request, f"Deleted policy {policy.name} and its history.")
        return redirect("runtimes:list")


# --------------------------------------------------------------------------------------------------- import


class PolicyImportView(PlatformAdminRequiredMixin, View):
    """Paste or upload YAML/JSON (one or many documents); all or nothing, with per-document errors."""

    template_name = "runtimes/import.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return render(request, self.template_name, {"form": ImportForm()})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = ImportForm(request.POST, request.FILES)
        if not form.is_valid():
            return render(request, self.template_name, {"form": form}, status=400)
        try:
            result = services.policies_import(
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


def _editor_context(
    *,
    editor: PolicyEditor,
    yaml_text: str,
    policy: RuntimePolicy | None,
    version: int | None,
    message: str = "",
    problems: list[dict[str, Any]] | None = None,
    yaml_error: ManifestError | None = None,
    checked: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    problems = problems or []
    field_problems, other_problems = problems_by_field(problems)
    return {
        "editor": editor,
        "form": editor.form,
        "rjobs": editor.rjobs,
        "level2": editor.level2,
        "yaml_text": yaml_text,
        "yaml_error": yaml_error,
        "policy": policy,
        "creating": policy is None,
        "version": version,
        "message": message,
        "problems": problems,
        "checked": checked,
        "error_count": sum(1 for p in problems if p.get("severity", "error") == "error"),
        "warning_count": sum(1 for p in problems if p.get("severity") == "warning"),
        "field_problems": field_problems,
        "other_problems": other_problems,
        "topology_keys": topology_key_suggestions(),
        "framework_suggestions": FRAMEWORK_SUGGESTIONS,
        "composite_enabled": composite_enabled(),
        **extra,
    }


def topology_key_suggestions() -> list[dict[str, str]]:
    """Return the topology-key picker's options: zone, rack and the block key, then every label key actually on
    the cluster's nodes with its value counts (from the worker's live snapshot, when there is one)."""
    suggestions = dict.fromkeys(topology_key_choices(), "")
    live = live_snapshot()
    for item in live.label_keys() if live is not None else ():
        values = ", ".join(f"{v['value']} ({v['count']})" for v in item["values"][:4])
        more = " …" if len(item["values"]) > 4 else ""
        suggestions[item["key"]] = f"{item['nodes']} nodes, {len(item['values'])} values: {values}{more}"
    return [{"key": key, "label": label} for key, label in suggestions.items()]


def _merge(editor: PolicyEditor, manifest: dict | None) -> tuple[dict, bool]:
    """Return (the manifest to save, whether form changes were applied to it).

    The YAML is the source of truth; the form fields the user changed since the form was rendered are merged into
    it (`merge_fields`). So a no-JS user may edit either side or both, and a JS user whose form changes are already
    in the YAML gets nothing applied twice.
    """
    fields = editor.to_fields()
    if manifest is None:
        return apply_fields(None, fields), True
    in_yaml = fields_from_manifest(manifest)
    merged = merge_fields(base=editor.posted_base, form=fields, yaml=in_yaml)
    if _same_fields(merged, in_yaml):
        return manifest, False
    return apply_fields(manifest, merged), True


def _same_fields(a: PolicyFields, b: PolicyFields) -> bool:
    return fields_digest(a) == fields_digest(b)


class _EditorView(PlatformAdminRequiredMixin, View):
    """Shared GET/POST of the new and edit pages."""

    def get_policy(self, name: str | None) -> RuntimePolicy | None:
        return _policy_or_404(name) if name else None

    def get(self, request: HttpRequest, name: str | None = None) -> HttpResponse:
        policy = self.get_policy(name)
        manifest = policy.manifest if policy else new_runtime("")
        fields = fields_from_manifest(manifest)
        editor = PolicyEditor.from_fields(fields, creating=policy is None, fixed_name=policy.name if policy else "")
        context = _editor_context(
            editor=editor,
            yaml_text=dump_yaml(manifest),
            policy=policy,
            version=policy.version if policy else None,
            problems=_report_dicts(manifest) if policy else [],
            checked=policy is not None,
        )
        return render(request, EDITOR_TEMPLATE, context)

    def post(self, request: HttpRequest, name: str | None = None) -> HttpResponse:
        policy = self.get_policy(name)
        action = request.POST.get("_action", "")
        if action in {"add-rjob", "add-l2"}:
            return self._add_row(request, policy, action)
        if action == FIX_UNTARGETED:
            return self._fix_untargeted(request, policy)
        save = SaveForm(request.POST)
        save.is_valid()
        yaml_text = save.cleaned_data.get("yaml", "")
        version = save.cleaned_data.get("version")
        message = (save.cleaned_data.get("message") or "").strip()
        fixed_name = policy.name if policy else ""
        editor = PolicyEditor(data=request.POST, creating=policy is None, fixed_name=fixed_name)

        def again(status: int = 200, **extra: Any) -> HttpResponse:
            context = _editor_context(
                editor=editor, yaml_text=yaml_text, policy=policy, version=version, message=message, **extra
            )
            return render(request, EDITOR_TEMPLATE, context, status=status)

        if policy is not None and version is None:
            # Without the version the page was loaded at, a save could silently overwrite someone else's.
            editor.is_valid()
            return again(status=400, form_error="The form lost its version number; reload the page and try again.")
        manifest: dict | None = None
        if yaml_text.strip():
            try:
                manifest = load_runtime(yaml_text)
            except ManifestError as exc:
                editor.is_valid()
                return again(yaml_error=exc)
        if not editor.is_valid():
            return again(form_error="Some fields need attention; nothing was saved.")
        manifest, form_applied = _merge(editor, manifest)
        # From here on the page shows the merged result: YAML and form agree again (and the form's base moves on).
        yaml_text = dump_yaml(manifest)
        editor = PolicyEditor.from_fields(
            fields_from_manifest(manifest), creating=policy is None, fixed_name=fixed_name
        )
        source = RevisionSource.FORM if form_applied else RevisionSource.YAML
        try:
            if policy is None:
                saved = services.policy_create(
                    manifest=manifest, author=request.user, message=message or "Created", source=source
                )
            else:
                saved = services.policy_update(
                    name=policy.name,
                    manifest=manifest,
                    expected_version=version,
                    author=request.user,
                    message=message,
                    source=source,
                )
        except PolicyInvalid as exc:
            return again(problems=exc.problems, form_error="The policy has errors; nothing was saved.")
        except PolicyNameTaken as exc:
            taken = {"path": "metadata.name", "message": exc.message, "severity": "error", "code": exc.code}
            return again(problems=[taken, *_report_dicts(manifest)], form_error=exc.message)
        except StaleVersion as exc:
            diff_text = ""
            with contextlib.suppress(RevisionNotFound):
                diff_text, _ = selectors.revision_diff(
                    policy=policy, from_number=exc.expected_version, to_number=exc.current_version
                )
            # Keep the user's input; the new base version makes a second Save a deliberate overwrite.
            version = exc.current_version
            conflict = {"message": exc.message, "diff": diff_text}
            return again(status=409, conflict=conflict, problems=_report_dicts(manifest))
        if policy is not None and saved.version == policy.version:
            messages.info(request, "No changes to save.")
        else:
            verb = "Created" if policy is None else "Saved"
            messages.success(request, f"{verb} {saved.name} (revision {saved.version}).")
        return redirect("runtimes:detail", name=saved.name)

    def _fix_untargeted(self, request: HttpRequest, policy: RuntimePolicy | None) -> HttpResponse:
        """One-click fix: give every untargeted ReplicatedJob a basic scheduling entry and re-render the editor
        with the result (nothing is saved; Save keeps it)."""
        save = SaveForm(request.POST)
        save.is_valid()
        yaml_text = save.cleaned_data.get("yaml", "")
        version = save.cleaned_data.get("version")
        message = (save.cleaned_data.get("message") or "").strip()
        fixed_name = policy.name if policy else ""
        editor = PolicyEditor(data=request.POST, creating=policy is None, fixed_name=fixed_name)

        def show(**extra: Any) -> HttpResponse:
            context = _editor_context(
                editor=editor, yaml_text=yaml_text, policy=policy, version=version, message=message, **extra
            )
            return render(request, EDITOR_TEMPLATE, context)

        manifest: dict | None = None
        if yaml_text.strip():
            try:
                manifest = load_runtime(yaml_text)
            except ManifestError as exc:
                editor.is_valid()
                return show(yaml_error=exc)
        if not editor.is_valid():
            return show(form_error="Some fields need attention; fix them first.")
        manifest, _ = _merge(editor, manifest)
        try:
            manifest = add_basic_entry(manifest)
        except ValueError as exc:
            return show(problems=_report_dicts(manifest), form_error=f"Nothing to fix: {exc}.")
        yaml_text = dump_yaml(manifest)
        editor = PolicyEditor.from_fields(
            fields_from_manifest(manifest), creating=policy is None, fixed_name=fixed_name
        )
        return show(problems=_report_dicts(manifest))

    def _add_row(self, request: HttpRequest, policy: RuntimePolicy | None, action: str) -> HttpResponse:
        """No-JS "Add" buttons: re-render the posted editor with one more blank row (nothing is saved)."""
        data: QueryDict = request.POST.copy()
        prefix = PolicyEditor.RJOBS_PREFIX if action == "add-rjob" else PolicyEditor.L2_PREFIX
        total_key = f"{prefix}-TOTAL_FORMS"
        try:
            data[total_key] = str(int(data.get(total_key, "0")) + 1)
        except ValueError:
            data[total_key] = "1"
        if action == "add-l2" and data.get("scheduling_mode") not in {"level2", "composite"}:
            data["scheduling_mode"] = "level2"
        editor = PolicyEditor(data=data, creating=policy is None, fixed_name=policy.name if policy else "")
        version = _revision_number(data.get("version"))
        context = _editor_context(
            editor=editor,
            yaml_text=data.get("yaml", ""),
            policy=policy,
            version=version,
            message=data.get("message", ""),
            quiet_errors=True,
        )
        template = f"{EDITOR_TEMPLATE}#form-fields" if request.htmx else EDITOR_TEMPLATE
        return render(request, template, context)


class PolicyCreateView(_EditorView):
    """New policy: the guided form and YAML editor, starting from a single-node torch skeleton."""


class PolicyEditView(_EditorView):
    """Edit a policy; a hidden version field makes concurrent saves conflict instead of overwrite."""


# --------------------------------------------------------------------------------------------------- htmx sync


def _editor_from_post(request: HttpRequest) -> tuple[PolicyEditor, RuntimePolicy | None]:
    name = request.POST.get("_policy", "")
    policy = _policy_or_404(name) if name else None
    editor = PolicyEditor(data=request.POST, creating=policy is None, fixed_name=policy.name if policy else "")
    return editor, policy


def _status_only(request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
    # Only the out-of-band status/problems update: the pane the user is typing in stays as it is.
    response = render(request, f"{EDITOR_TEMPLATE}#sync-status-oob", context)
    response["HX-Reswap"] = "none"
    return response


class RenderYamlView(PlatformAdminRequiredMixin, View):
    """htmx: form → YAML. Applies the posted form to the posted YAML (unmodelled fields kept); returns the pane."""

    def post(self, request: HttpRequest) -> HttpResponse:
        editor, policy = _editor_from_post(request)
        yaml_text = request.POST.get("yaml", "")
        base = {"editor": editor, "policy": policy, "creating": policy is None}
        try:
            manifest = load_runtime(yaml_text) if yaml_text.strip() else None
        except ManifestError as exc:
            return _status_only(
                request,
                {**base, "yaml_error": exc, "sync_note": "Fix the YAML first; the form change is not in it yet."},
            )
        if not editor.is_valid():
            errors = _editor_error_lines(editor)
            return _status_only(request, {**base, "sync_error": "The form has errors: " + "; ".join(errors)})
        result, applied = _merge(editor, manifest)
        new_text = dump_yaml(result) if applied or manifest is None else yaml_text
        problems = _report_dicts(result)
        context = _editor_context(
            editor=editor,
            yaml_text=new_text,
            policy=policy,
            version=None,
            problems=problems,
            oob=True,
            # The form now matches the YAML: make that the base the next merge compares against.
            fields_base_json=fields_to_json(fields_from_manifest(result)),
        )
        return render(request, f"{EDITOR_TEMPLATE}#yaml-sync-response", context)


class ParseYamlView(PlatformAdminRequiredMixin, View):
    """htmx: YAML → form. Valid YAML returns the refilled form; invalid YAML only reports where it is wrong."""

    def post(self, request: HttpRequest) -> HttpResponse:
        name = request.POST.get("_policy", "")
        policy = _policy_or_404(name) if name else None
        yaml_text = request.POST.get("yaml", "")
        try:
            manifest = load_runtime(yaml_text)
        except ManifestError as exc:
            return _status_only(request, {"yaml_error": exc, "policy": policy, "creating": policy is None})
        fields = fields_from_manifest(manifest)
        editor = PolicyEditor.from_fields(fields, creating=policy is None, fixed_name=policy.name if policy else "")
        context = _editor_context(
            editor=editor,
            yaml_text=yaml_text,
            policy=policy,
            version=None,
            problems=_report_dicts(manifest),
            oob=True,
        )
        return render(request, f"{EDITOR_TEMPLATE}#form-sync-response", context)


def _editor_error_lines(editor: PolicyEditor) -> list[str]:
    lines: list[str] = []
    for field, errors in editor.form.errors.items():
        label = editor.form.fields[field].label or field if field in editor.form.fields else "form"
        lines.extend(f"{label}: {error}" for error in errors)
    for title, formset in (("ReplicatedJob", editor.rjobs), ("Group", editor.level2)):
        for index, errors in enumerate(formset.errors):
            for field, messages_ in errors.items():
                lines.extend(f"{title} {index + 1} {field}: {message}" for message in messages_)
        lines.extend(str(error) for error in formset.non_form_errors())
    return lines[:5]

