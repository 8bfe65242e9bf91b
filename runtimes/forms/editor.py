"""HTML forms of the policy pages: list filters, the guided policy editor (form + two formsets), import, confirms.

The guided editor is a thin translation layer: `PolicyEditor` turns POST data into the domain's `PolicyFields`
(and back into initial data), validating only what a form can know on its own (numbers, key=value syntax, label-key
syntax of topology keys, known names). Every policy rule lives in the domain validator, whose problems the views
attach to the matching fields with `problem_field_name`.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from runtimes.domain.constants import (
    DEPENDS_ON_STATUSES,
    FRAMEWORK_LABEL,
)
from runtimes.domain.editing import (
    GroupFields,
    Level2Entry,
    PolicyFields,
    ReplicatedJobFields,
    fields_from_json,
    fields_to_json,
)
from runtimes.domain.labels import dns1123_subdomain_problems, label_value_problems
from runtimes.forms.fields import (
    ANCESTOR_CHOICES,
    BOOL_CHOICES,
    DISRUPTION_CHOICES,
    ML_POLICY_CHOICES,
    MPI_IMPLEMENTATION_CHOICES,
    POLICY_CHOICES,
    SCHEDULING_CHOICES,
    VOLCANO_MODE_CHOICES,
    TopologyKeyInput,
    WholeNumberField,
    bool_choice,
    choice_bool,
    clean_topology_key,
    composite_enabled,
    format_key_values,
    keep_unknown_choices,
    optional_int,
    parse_key_values,
)

# --------------------------------------------------------------------------------------------------- editor forms


class PolicyForm(forms.Form):
    """Metadata, ML policy and scheduling fields of the guided editor (the repeating parts are formsets)."""

    name = forms.CharField(
        max_length=253,
        help_text="DNS-1123 subdomain: lower-case letters, digits, '-' and '.'; cannot change after creation.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    framework = forms.CharField(
        required=False,
        max_length=63,
        help_text="Value of the trainer.kubeflow.org/framework label (torch, deepspeed, torchtune…).",
        widget=forms.TextInput(attrs={"list": "frameworks", "autocomplete": "off"}),
    )
    labels = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false", "placeholder": "team=ml-platform"}),
        help_text="Other labels, one key=value per line.",
    )
    annotations = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false", "placeholder": "example.com/owner=alice"}),
        help_text="One key=value per line.",
    )
    num_nodes = WholeNumberField(
        required=False, min_value=0, label="Default numNodes", help_text="Training nodes when a TrainJob sets none."
    )
    ml_policy = forms.ChoiceField(
        required=False, choices=ML_POLICY_CHOICES, label="ML policy", widget=forms.RadioSelect
    )
    mpi_num_proc_per_node = WholeNumberField(required=False, min_value=1, label="Processes per node")
    mpi_implementation = forms.ChoiceField(
        required=False, choices=MPI_IMPLEMENTATION_CHOICES, label="MPI implementation"
    )
    mpi_ssh_auth_mount_path = forms.CharField(required=False, max_length=4096, label="SSH auth mount path")
    mpi_run_launcher_as_node = forms.ChoiceField(
        required=False,
        choices=BOOL_CHOICES,
        label="Run launcher as a node",
        help_text="The launcher also trains (numNodes − 1 node pods).",
    )
    flux_num_proc_per_node = WholeNumberField(required=False, min_value=1, label="Processes per node")

    scheduling_mode = forms.ChoiceField(choices=SCHEDULING_CHOICES, widget=forms.RadioSelect, label="Scheduling")
    l1_policy = forms.ChoiceField(choices=POLICY_CHOICES, required=False, label="Policy")
    l1_topology_key = forms.CharField(required=False, max_length=316, label="Topology key", widget=TopologyKeyInput())
    l1_disruption_mode = forms.ChoiceField(choices=DISRUPTION_CHOICES, required=False, label="Disruption mode")
    coscheduling_timeout_seconds = WholeNumberField(
        required=False, min_value=0, label="Schedule timeout (seconds)", help_text="Default 60."
    )
    volcano_mode = forms.ChoiceField(required=False, choices=VOLCANO_MODE_CHOICES, label="Network topology mode")
    volcano_highest_tier_allowed = WholeNumberField(
        required=False, min_value=0, label="Highest tier allowed", help_text="Default 1."
    )
    # The fields as rendered (JSON), so a save can tell which form fields the user changed (see merge_fields).
    fields_base = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, creating: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.creating = creating
        current_mode = self.data.get("scheduling_mode") if self.is_bound else self.initial.get("scheduling_mode")
        if not composite_enabled() and current_mode != "composite":
            # Combining levels needs the TrainJobCompositePodGroup gate; offer it only where it is on (or in use).
            self.fields["scheduling_mode"].choices = [c for c in SCHEDULING_CHOICES if c[0] != "composite"]
        keep_unknown_choices(self)
        if creating:
            # Blank is allowed here so a no-JS user may type the name in the YAML instead; the validator then
            # reports a missing metadata.name at this field.
            self.fields["name"].required = False
        else:
            # The name of a saved policy is its identity: shown, never posted back as something to change.
            self.fields["name"].disabled = True
            self.fields["name"].help_text = "The name of a saved policy cannot change."

    def clean_name(self) -> str:
        name = (self.cleaned_data.get("name") or "").strip()
        if not name and self.creating:
            return ""
        problems = dns1123_subdomain_problems(name)
        if problems:
            raise ValidationError(f"'{name}' is not a valid name: " + "; ".join(problems))
        return name

    def clean_framework(self) -> str:
        value = (self.cleaned_data.get("framework") or "").strip()
        problems = label_value_problems(value)
        if problems:
            raise ValidationError("Not a valid label value: " + "; ".join(problems))
        return value

    def clean_labels(self) -> dict[str, str]:
        return parse_key_values(self.cleaned_data.get("labels") or "", what="labels", check_values=True)

    def clean_annotations(self) -> dict[str, str]:
        return parse_key_values(self.cleaned_data.get("annotations") or "", what="annotations", check_values=False)

    def clean_l1_topology_key(self) -> str:
        return clean_topology_key(self.cleaned_data.get("l1_topology_key", ""))


def _clean_depends_on(text: str) -> list[tuple[str, str]]:
    result: list[tuple[str, str]] = []
    for item in re.split(r"[,\n]", text or ""):
        item = item.strip()
        if not item:
            continue
        name, sep, status = (part.strip() for part in item.partition(":"))
        if not sep or not name:
            raise ValidationError(f"'{item}': write name:Status, e.g. node:Ready or dataset-initializer:Complete")
        if status not in DEPENDS_ON_STATUSES:
            raise ValidationError(f"'{item}': status must be one of {', '.join(DEPENDS_ON_STATUSES)}")
        result.append((name, status))
    return result


class ReplicatedJobForm(forms.Form):
    """One `spec.template.spec.replicatedJobs[]` item: the fields the editor models (the rest is preserved)."""

    name = forms.CharField(max_length=63, widget=forms.TextInput(attrs={"spellcheck": "false"}))
    replicas = WholeNumberField(required=False, min_value=0, initial=1)
    ancestor_step = forms.ChoiceField(required=False, choices=ANCESTOR_CHOICES, label="Ancestor step")
    depends_on = forms.CharField(
        required=False,
        label="Depends on",
        widget=forms.TextInput(attrs={"placeholder": "node:Ready", "spellcheck": "false"}),
        help_text="name:Ready or name:Complete, comma-separated.",
    )
    container_name = forms.CharField(required=False, max_length=63, label="Container")
    image = forms.CharField(required=False, max_length=500, widget=forms.TextInput(attrs={"spellcheck": "false"}))
    resources = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false", "placeholder": "nvidia.com/gpu=8"}),
        help_text="Main container's limits (its requests if it has only requests), one per line: nvidia.com/gpu=8.",
    )
    original_name = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        keep_unknown_choices(self)

    def clean_name(self) -> str:
        return (self.cleaned_data.get("name") or "").strip()

    def clean_depends_on(self) -> list[tuple[str, str]]:
        return _clean_depends_on(self.cleaned_data.get("depends_on") or "")

    def clean_resources(self) -> dict[str, str]:
        result: dict[str, str] = {}
        for number, raw in enumerate((self.cleaned_data.get("resources") or "").splitlines(), start=1):
            line = raw.strip()
            if not line:
                continue
            key, sep, value = (part.strip() for part in line.partition("="))
            if not sep or not key or not value:
                raise ValidationError(f"line {number}: write resource=quantity, e.g. nvidia.com/gpu=8 or memory=64Gi")
            result[key] = value
        return result


class Level2EntryForm(forms.Form):
    """One `spec.scheduling.replicatedJobs[]` entry (level 2) with an optional per-Job group (level 3)."""

    targets = forms.CharField(
        label="Target ReplicatedJobs",
        widget=forms.TextInput(attrs={"placeholder": "launcher, node", "spellcheck": "false"}),
        help_text="Comma-separated ReplicatedJob names.",
    )
    policy = forms.ChoiceField(choices=POLICY_CHOICES, required=False)
    topology_key = forms.CharField(required=False, max_length=316, label="Topology key", widget=TopologyKeyInput())
    disruption_mode = forms.ChoiceField(choices=DISRUPTION_CHOICES, required=False, label="Disruption mode")
    per_job = forms.BooleanField(
        required=False,
        label="Level 3: one group per Job replica",
        help_text="Each Job of the (single) target gets its own group, e.g. one rack per replica.",
    )
    job_policy = forms.ChoiceField(choices=POLICY_CHOICES, required=False, label="Policy")
    job_topology_key = forms.CharField(
        required=False, max_length=316, label="Topology key", widget=TopologyKeyInput()
    )
    job_disruption_mode = forms.ChoiceField(choices=DISRUPTION_CHOICES, required=False, label="Disruption mode")

    def clean_targets(self) -> list[str]:
        names = [name.strip() for name in (self.cleaned_data.get("targets") or "").split(",") if name.strip()]
        if not names:
            raise ValidationError("Name at least one ReplicatedJob.")
        return list(dict.fromkeys(names))

    def clean_topology_key(self) -> str:
        return clean_topology_key(self.cleaned_data.get("topology_key", ""))

    def clean_job_topology_key(self) -> str:
        return clean_topology_key(self.cleaned_data.get("job_topology_key", ""))


class _BaseFormSet(forms.BaseFormSet):
    """Blank extra rows are skipped; rows ticked for deletion are dropped."""

    def kept_forms(self) -> list[forms.Form]:
        return [
            form
            for form in self.forms
            if form.has_changed() and not (self.can_delete and self._should_delete_form(form))
        ]


ReplicatedJobFormSet = forms.formset_factory(
    ReplicatedJobForm, formset=_BaseFormSet, extra=0, can_delete=True, max_num=50, validate_max=True
)
Level2FormSet = forms.formset_factory(
    Level2EntryForm, formset=_BaseFormSet, extra=0, can_delete=True, max_num=8, validate_max=True
)


# --------------------------------------------------------------------------------------------------- editor














def _group_initial(group: GroupFields | None, prefix: str) -> dict[str, Any]:
    group = group or GroupFields()
    return {
        f"{prefix}policy": group.policy,
        f"{prefix}topology_key": group.topology_key,
        f"{prefix}disruption_mode": group.disruption_mode,
    }


def _group_from(data: dict[str, Any], prefix: str) -> GroupFields:
    return GroupFields(
        policy=data.get(f"{prefix}policy") or "gang",
        topology_key=data.get(f"{prefix}topology_key") or "",
        disruption_mode=data.get(f"{prefix}disruption_mode") or "",
    )


class PolicyEditor:
    """The guided editor: `PolicyForm` + `ReplicatedJobFormSet` ("rjobs") + `Level2FormSet` ("l2").

    Build it from POST data (`PolicyEditor(data=request.POST, creating=…)`) or from domain fields
    (`PolicyEditor.from_fields(fields, creating=…)`); `to_fields()` returns the `PolicyFields` once `is_valid()`.
    """

    RJOBS_PREFIX = "rjobs"
    L2_PREFIX = "l2"

    def __init__(
        self,
        *,
        data: Any = None,
        initial: dict[str, Any] | None = None,
        rjobs_initial: list[dict[str, Any]] | None = None,
        l2_initial: list[dict[str, Any]] | None = None,
        creating: bool = False,
        fixed_name: str = "",
    ) -> None:
        self.creating = creating
        self.fixed_name = fixed_name
        initial = dict(initial or {})
        if fixed_name:
            initial["name"] = fixed_name
        self.form = PolicyForm(data=data, initial=initial, creating=creating)
        self.rjobs = ReplicatedJobFormSet(data=data, initial=rjobs_initial, prefix=self.RJOBS_PREFIX)
        self.level2 = Level2FormSet(data=data, initial=l2_initial, prefix=self.L2_PREFIX)

    @classmethod
    def from_fields(cls, fields: PolicyFields, *, creating: bool = False, fixed_name: str = "") -> PolicyEditor:
        """Return an unbound editor showing `fields` (and their digest, to detect later edits)."""
        mode = fields.scheduling_mode
        if mode == "level2" and fields.level1 is not None:
            mode = "composite"
        labels = {k: v for k, v in fields.labels.items() if k != FRAMEWORK_LABEL}
        initial = {
            "name": fields.name,
            "framework": fields.framework,
            "labels": format_key_values(labels),
            "annotations": format_key_values(fields.annotations),
            "num_nodes": fields.num_nodes,
            "ml_policy": fields.ml_policy,
            "mpi_num_proc_per_node": optional_int(fields.mpi_num_proc_per_node),
            "mpi_implementation": fields.mpi_implementation,
            "mpi_ssh_auth_mount_path": fields.mpi_ssh_auth_mount_path,
            "mpi_run_launcher_as_node": bool_choice(fields.mpi_run_launcher_as_node),
            "flux_num_proc_per_node": fields.flux_num_proc_per_node,
            "scheduling_mode": mode,
            **_group_initial(fields.level1, "l1_"),
            "coscheduling_timeout_seconds": fields.coscheduling_timeout_seconds,
            "volcano_mode": fields.volcano_mode,
            "volcano_highest_tier_allowed": fields.volcano_highest_tier_allowed,
            "fields_base": fields_to_json(fields),
        }
        rjobs = [
            {
                "name": job.name,
                "replicas": job.replicas,
                "ancestor_step": job.ancestor_step,
                "depends_on": ", ".join(f"{name}:{status}" for name, status in job.depends_on),
                "container_name": job.container_name,
                "image": job.image,
                "resources": format_key_values(job.resources),
                "original_name": job.original_name or job.name,
            }
            for job in fields.replicated_jobs
        ]
        entries = [
            {
                "targets": ", ".join(entry.targets),
                **_group_initial(entry.group, ""),
                "per_job": entry.job is not None,
                **_group_initial(entry.job, "job_"),
            }
            for entry in fields.level2
        ]
        return cls(initial=initial, rjobs_initial=rjobs, l2_initial=entries, creating=creating, fixed_name=fixed_name)

    @property
    def forms(self) -> list[Any]:
        return [self.form, self.rjobs, self.level2]

    def is_valid(self) -> bool:
        """Return True when the form and both formsets are valid (all are validated, so all errors show)."""
        results = [self.form.is_valid(), self.rjobs.is_valid(), self.level2.is_valid()]
        return all(results)

    def has_errors(self) -> bool:
        """Return True when a bound part of the editor has validation errors."""
        return bool(self.form.errors or self.rjobs.total_error_count() or self.level2.total_error_count())

    @property
    def posted_base(self) -> PolicyFields | None:
        """Return the fields the form was rendered with (from the hidden `fields_base`), or None when unknown."""
        return fields_from_json(self.form.data.get("fields_base") or "") if self.form.is_bound else None

    def to_fields(self) -> PolicyFields:
        """Return the `PolicyFields` the user entered. Call only after is_valid() returned True."""
        data = self.form.cleaned_data
        mode = data["scheduling_mode"]
        composite = composite_enabled() or mode == "composite"
        labels = dict(data["labels"])
        framework = data["framework"]
        level1 = _group_from(data, "l1_") if mode in ("level1", "composite") else None
        level2: list[Level2Entry] = []
        if mode in ("level2", "composite"):
            for form in self.level2.kept_forms():
                entry = form.cleaned_data
                per_job = bool(entry.get("per_job"))
                level2.append(
                    Level2Entry(
                        targets=entry["targets"],
                        # Without composite groups an entry with a level-3 job carries no level-2 fields: the
                        # form hides them while "Level 3" is ticked, and they come back when it is unticked.
                        group=GroupFields() if per_job and not composite else _group_from(entry, ""),
                        job=_group_from(entry, "job_") if per_job else None,
                    )
                )
        jobs = [
            ReplicatedJobFields(
                name=form.cleaned_data["name"],
                replicas=form.cleaned_data["replicas"] if form.cleaned_data["replicas"] is not None else 1,
                ancestor_step=form.cleaned_data["ancestor_step"] or "",
                depends_on=form.cleaned_data["depends_on"],
                image=form.cleaned_data["image"] or "",
                container_name=form.cleaned_data["container_name"] or "",
                resources=form.cleaned_data["resources"],
                original_name=form.cleaned_data.get("original_name") or "",
            )
            for form in self.rjobs.kept_forms()
        ]
        return PolicyFields(
            name=self.fixed_name or data["name"],
            framework=framework,
            labels=labels,
            annotations=data["annotations"],
            num_nodes=data["num_nodes"],
            ml_policy=data["ml_policy"] or "",
            mpi_num_proc_per_node=data["mpi_num_proc_per_node"],
            mpi_implementation=data["mpi_implementation"] or "",
            mpi_ssh_auth_mount_path=data["mpi_ssh_auth_mount_path"] or "",
            mpi_run_launcher_as_node=choice_bool(data["mpi_run_launcher_as_node"] or ""),
            flux_num_proc_per_node=data["flux_num_proc_per_node"],
            replicated_jobs=jobs,
            scheduling_mode="level2" if mode == "composite" else mode,
            level1=level1,
            level2=level2,
            coscheduling_timeout_seconds=data["coscheduling_timeout_seconds"],
            volcano_mode=data["volcano_mode"] or "",
            volcano_highest_tier_allowed=data["volcano_highest_tier_allowed"],
        )


# --------------------------------------------------------------------------------------------------- problems → fields

_RJOB = r"^spec\.template\.spec\.replicatedJobs\[(\d+)\]"
_POD = _RJOB + r"\.template\.spec\.template\.spec\.containers"
_ENTRY = r"^spec\.scheduling\.replicatedJobs\[(\d+)\]"
# First match wins: specific paths before their parents.
_PROBLEM_FIELDS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(pattern), name)
    for pattern, name in (
        (r"^metadata\.name", "name"),
        (r"^metadata\.labels\W*trainer\.kubeflow\.org/framework", "framework"),
        (r"^metadata\.labels", "labels"),
        (r"^metadata\.annotations", "annotations"),
        (r"^spec\.mlPolicy\.numNodes", "num_nodes"),
        (r"^spec\.mlPolicy\.mpi\.numProcPerNode", "mpi_num_proc_per_node"),
        (r"^spec\.mlPolicy\.mpi\.mpiImplementation", "mpi_implementation"),
        (r"^spec\.mlPolicy\.mpi\.sshAuthMountPath", "mpi_ssh_auth_mount_path"),
        (r"^spec\.mlPolicy\.mpi\.runLauncherAsNode", "mpi_run_launcher_as_node"),
        (r"^spec\.mlPolicy\.flux", "flux_num_proc_per_node"),
        (r"^spec\.mlPolicy", "ml_policy"),
        (r"^spec\.podGroupPolicy\.coscheduling", "coscheduling_timeout_seconds"),
        (r"^spec\.podGroupPolicy\.volcano\.networkTopology\.highestTierAllowed", "volcano_highest_tier_allowed"),
        (r"^spec\.podGroupPolicy\.volcano", "volcano_mode"),
        (r"^spec\.podGroupPolicy", "scheduling_mode"),
        (_ENTRY + r"\.job\.schedulingConstraints", "l2-{0}-job_topology_key"),
        (_ENTRY + r"\.job\.disruptionMode", "l2-{0}-job_disruption_mode"),
        (_ENTRY + r"\.job", "l2-{0}-job_policy"),
        (_ENTRY + r"\.targetReplicatedJobs", "l2-{0}-targets"),
        (_ENTRY + r"\.schedulingConstraints", "l2-{0}-topology_key"),
        (_ENTRY + r"\.disruptionMode", "l2-{0}-disruption_mode"),
        (_ENTRY, "l2-{0}-policy"),
        (r"^spec\.scheduling\.schedulingConstraints", "l1_topology_key"),
        (r"^spec\.scheduling\.disruptionMode", "l1_disruption_mode"),
        (r"^spec\.scheduling\.schedulingPolicy", "l1_policy"),
        (r"^spec\.scheduling", "scheduling_mode"),
        (_RJOB + r"\.name", "rjobs-{0}-name"),
        (_RJOB + r"\.replicas", "rjobs-{0}-replicas"),
        (_RJOB + r"\.dependsOn", "rjobs-{0}-depends_on"),
        (_RJOB + r"\.template\.metadata\.labels", "rjobs-{0}-ancestor_step"),
        (_POD + r".*\.resources", "rjobs-{0}-resources"),
        (_POD + r".*\.image", "rjobs-{0}-image"),
        (_POD, "rjobs-{0}-container_name"),
    )
]


def problem_field_name(path: str) -> str | None:
    """Return the editor's HTML field name a problem at `path` belongs to (e.g. "rjobs-1-name"), or None."""
    for pattern, name in _PROBLEM_FIELDS:
        match = pattern.match(path or "")
        if match:
            return name.format(*match.groups())
    return None


def problems_by_field(problems: list[dict[str, Any]]) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """Split problems into ({html field name: [problem]}, [problems no field shows])."""
    by_field: dict[str, list[dict[str, Any]]] = {}
    unmatched: list[dict[str, Any]] = []
    for problem in problems:
        name = problem_field_name(problem.get("path") or "")
        if name is None:
            unmatched.append(problem)
        else:
            by_field.setdefault(name, []).append(problem)
    return by_field, unmatched




