"""The guided policy editor pages (new/edit) and the htmx YAML ⇄ form round-trip endpoints."""

from __future__ import annotations

import contextlib
import re
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View

from runtimes import selectors
from runtimes.choices import RevisionSource
from runtimes.domain.editing import (
    PolicyFields,
    apply_fields,
    fields_digest,
    fields_from_manifest,
    fields_to_json,
    merge_fields,
)
from runtimes.domain.manifest import ManifestError, dump_yaml, load_runtime, new_runtime
from runtimes.domain.policy import add_basic_entry
from runtimes.errors import (
    PolicyInvalid,
    PolicyNameTaken,
    RevisionNotFound,
    StaleVersion,
)
from runtimes.forms.editor import PolicyEditor, problems_by_field
from runtimes.forms.fields import composite_enabled, topology_key_choices
from runtimes.forms.imports import SaveForm
from runtimes.models import RuntimePolicy
from runtimes.services import policies as policy_services
from runtimes.views.policies import policy_or_404, revision_number
from trainer_portal.cluster.snapshots import live_snapshot
from trainer_portal.permissions import CapabilityRequiredMixin
from trainer_portal.roles import POLICIES_EDIT

PAGE_SIZE = 50
EDITOR_TEMPLATE = "runtimes/editor.html"
FRAMEWORK_SUGGESTIONS = ("torch", "deepspeed", "torchtune", "mpi", "jax", "xgboost", "flux", "mlx")


# The editor's one-click fix for `scheduling.untargeted_replicated_job` (decision D3).
FIX_UNTARGETED = "fix-untargeted"


def _report_dicts(manifest: dict) -> list[dict[str, Any]]:
    # The settings and the last cluster check (composite, topology gate, disruptionMode form) apply, as on save.
    return policy_services.policy_validate(manifest=manifest).as_dicts()


def _yaml_filename(name: str) -> str:
    safe = "".join(ch for ch in name if ch.isalnum() or ch in "-.") or "runtime"
    return f"{safe}.yaml"


# --------------------------------------------------------------------------------------------------- reading


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
        "editor_url": reverse("runtimes:edit", kwargs={"name": policy.name}) if policy else reverse("runtimes:new"),
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
        more = " …" if item.get("distinct", len(item["values"])) > 4 else ""
        distinct = item.get("distinct", len(item["values"]))
        nodes = f"{item['nodes']:,} node{'s' * (item['nodes'] != 1)}"
        suggestions[item["key"]] = f"{nodes}, {distinct:,} value{'s' * (distinct != 1)}: {values}{more}"
    return [{"key": key, "label": label} for key, label in suggestions.items()]


def _merge(editor: PolicyEditor, manifest: dict | None) -> tuple[dict, bool]:
    """Return (the manifest to save, whether form changes were applied to it).

    The YAML is the source of truth; the form fields the user changed since the form was rendered are merged into
    it (`merge_fields`). So a no-JS user may edit either side or both, and a JS user whose form changes are already
    in the YAML gets nothing applied twice. What the form writes follows the cluster: a disruptionMode is written
    in the form the cluster's CRD embeds, as the last cluster check found (decision D9).
    """
    fields = editor.to_fields()
    if manifest is None:
        return selectors.manifest_in_cluster_form(apply_fields(None, fields)), True
    in_yaml = fields_from_manifest(manifest)
    merged = merge_fields(base=editor.posted_base, form=fields, yaml=in_yaml)
    if _same_fields(merged, in_yaml):
        return manifest, False
    return selectors.manifest_in_cluster_form(apply_fields(manifest, merged)), True


def _shown(text: str) -> str:
    """Return posted `text` fit to show again in a form: NUL (which no field accepts) as U+FFFD."""
    return text.replace("\x00", "\ufffd")


def _same_fields(a: PolicyFields, b: PolicyFields) -> bool:
    return fields_digest(a) == fields_digest(b)


class _EditorView(CapabilityRequiredMixin, View):
    """Shared GET/POST of the new and edit pages."""

    capability = POLICIES_EDIT

    def get_policy(self, name: str | None) -> RuntimePolicy | None:
        return policy_or_404(name) if name else None

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
        move = MOVE_ACTION.match(action)
        if move:
            return self._move_rjob(request, policy, int(move["index"]), move["direction"])
        if action == FIX_UNTARGETED:
            return self._fix_untargeted(request, policy)
        save = SaveForm(request.POST)
        save_valid = save.is_valid()
        # An invalid field shows again what the user sent (with a visible stand-in for NUL), never an empty pane.
        yaml_text = save.cleaned_data.get("yaml", _shown(request.POST.get("yaml", "")))
        version = save.cleaned_data.get("version")
        if version is None and policy is not None:
            version = revision_number(request.POST.get("version"))
        message = (save.cleaned_data.get("message") or _shown(request.POST.get("message", ""))).strip()
        fixed_name = policy.name if policy else ""
        editor = PolicyEditor(data=request.POST, creating=policy is None, fixed_name=fixed_name)

        def again(status: int = 200, **extra: Any) -> HttpResponse:
            context = _editor_context(
                editor=editor,
                yaml_text=yaml_text,
                policy=policy,
                version=version,
                message=message,
                form_edited=request.POST.get("form_edited") == "1",
                **extra,
            )
            return render(request, EDITOR_TEMPLATE, context, status=status)

        if not save_valid:
            # Saving without the YAML pane or the message the user typed would store a manifest they did not send.
            editor.is_valid()
            return again(status=400, form_error=f"{save.problems()} Nothing was saved.")
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
        # With JavaScript the form's edits are already in the posted YAML (nothing left to apply): the page's
        # form_edited flag, set by the form → YAML sync, says they came from the form.
        form_used = form_applied or request.POST.get("form_edited") == "1"
        source = RevisionSource.FORM if form_used else RevisionSource.YAML
        try:
            if policy is None:
                saved = policy_services.policy_create(
                    manifest=manifest, author=request.user, message=message or "Created", source=source
                )
            else:
                saved = policy_services.policy_update(
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
        version = revision_number(data.get("version"))
        context = _editor_context(
            editor=editor,
            yaml_text=data.get("yaml", ""),
            policy=policy,
            version=version,
            message=data.get("message", ""),
            form_edited=data.get("form_edited") == "1",
            quiet_errors=True,
        )
        template = f"{EDITOR_TEMPLATE}#form-fields" if request.htmx else EDITOR_TEMPLATE
        return render(request, template, context)

    def _move_rjob(
        self, request: HttpRequest, policy: RuntimePolicy | None, index: int, direction: str
    ) -> HttpResponse:
        """The ↑/↓ buttons of a ReplicatedJob: swap it with its neighbour and show the YAML in the new order.

        Nothing is saved. With valid input the form is applied to the posted YAML, so form and YAML agree again
        (the order of spec.template.spec.replicatedJobs is the form's); otherwise only the rows move.
        """
        data = _swap_rows(
            request.POST.copy(), PolicyEditor.RJOBS_PREFIX, index, index + (1 if direction == "down" else -1)
        )
        fixed_name = policy.name if policy else ""
        editor = PolicyEditor(data=data, creating=policy is None, fixed_name=fixed_name)
        yaml_text = data.get("yaml", "")
        extra: dict[str, Any] = {"quiet_errors": True}
        try:
            manifest = load_runtime(yaml_text) if yaml_text.strip() else None
        except ManifestError:
            manifest, valid = None, False
        else:
            valid = editor.is_valid()
        if valid:
            merged, _ = _merge(editor, manifest)
            yaml_text = dump_yaml(merged)
            editor = PolicyEditor.from_fields(
                fields_from_manifest(merged), creating=policy is None, fixed_name=fixed_name
            )
            extra = {"problems": _report_dicts(merged), "form_edited": True, "yaml_moved": bool(request.htmx)}
        context = _editor_context(
            editor=editor,
            yaml_text=yaml_text,
            policy=policy,
            version=revision_number(data.get("version")),
            message=data.get("message", ""),
            **extra,
        )
        if request.htmx:
            return render(request, f"{EDITOR_TEMPLATE}#move-response", context)
        return render(request, EDITOR_TEMPLATE, context)


MOVE_ACTION = re.compile(r"^move-rjob-(?P<index>\d{1,3})-(?P<direction>up|down)$")


def _swap_rows(data: QueryDict, prefix: str, first: int, second: int) -> QueryDict:
    """Return `data` with formset rows `first` and `second` exchanged (both must exist, else unchanged)."""
    try:
        total = int(data.get(f"{prefix}-TOTAL_FORMS", "0"))
    except ValueError:
        return data
    if not (0 <= first < total and 0 <= second < total):
        return data
    one, two = f"{prefix}-{first}-", f"{prefix}-{second}-"
    rows = {key: data.getlist(key) for key in list(data.keys()) if key.startswith((one, two))}
    for key in rows:
        data.pop(key)
    for key, values in rows.items():
        swapped = two + key[len(one) :] if key.startswith(one) else one + key[len(two) :]
        data.setlist(swapped, values)
    return data


class PolicyCreateView(_EditorView):
    """New policy: the guided form and YAML editor, starting from a single-node torch skeleton."""


class PolicyEditView(_EditorView):
    """Edit a policy; a hidden version field makes concurrent saves conflict instead of overwrite."""


# --------------------------------------------------------------------------------------------------- htmx sync


def _editor_from_post(request: HttpRequest) -> tuple[PolicyEditor, RuntimePolicy | None]:
    name = request.POST.get("_policy", "")
    policy = policy_or_404(name) if name else None
    editor = PolicyEditor(data=request.POST, creating=policy is None, fixed_name=policy.name if policy else "")
    return editor, policy


def _status_only(request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
    # Only the out-of-band status/problems update: the pane the user is typing in stays as it is.
    response = render(request, f"{EDITOR_TEMPLATE}#sync-status-oob", context)
    response["HX-Reswap"] = "none"
    return response


class RenderYamlView(CapabilityRequiredMixin, View):
    """htmx: form → YAML. Applies the posted form to the posted YAML (unmodelled fields kept); returns the pane."""

    capability = POLICIES_EDIT

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
        form_edited = applied or request.POST.get("form_edited") == "1"
        problems = _report_dicts(result)
        context = _editor_context(
            editor=editor,
            yaml_text=new_text,
            policy=policy,
            version=None,
            problems=problems,
            oob=True,
            form_edited=form_edited,
            # The form now matches the YAML: make that the base the next merge compares against.
            fields_base_json=fields_to_json(fields_from_manifest(result)),
        )
        return render(request, f"{EDITOR_TEMPLATE}#yaml-sync-response", context)


class ParseYamlView(CapabilityRequiredMixin, View):
    """htmx: YAML → form. Valid YAML returns the refilled form; invalid YAML only reports where it is wrong."""

    capability = POLICIES_EDIT

    def post(self, request: HttpRequest) -> HttpResponse:
        name = request.POST.get("_policy", "")
        policy = policy_or_404(name) if name else None
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
