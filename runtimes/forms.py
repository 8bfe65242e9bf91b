"""HTML forms of the policy pages: list filters, the guided policy editor (form + two formsets), import, confirms.

The guided editor is a thin translation layer: `PolicyEditor` turns POST data into the domain's `PolicyFields`
(and back into initial data), validating only what a form can know on its own (numbers, key=value syntax, label-key
syntax of topology keys, known names). Every policy rule lives in the domain validator, whose problems the views
attach to the matching fields with `problem_field_name`.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from .choices import ImportMode, SyncState
from .domain.constants import (
    ANCESTOR_STEPS,
    DEPENDS_ON_STATUSES,
    TOPOLOGY_RACK,
    TOPOLOGY_ZONE,
)
from .domain.editing import GroupFields, Level2Entry, PolicyFields, ReplicatedJobFields
from .domain.labels import dns1123_subdomain_problems, label_key_problems, label_value_problems

ML_POLICY_CHOICES = [
    ("torch", "PyTorch (torch)"),
    ("mpi", "MPI (DeepSpeed, Horovod…)"),
    ("jax", "JAX"),
    ("xgboost", "XGBoost"),
    ("flux", "Flux"),
    ("", "None"),
]
# The form's scheduling choice; "composite" is stored in PolicyFields as level2 entries plus level-1 fields.
SCHEDULING_CHOICES = [
    ("none", "None"),
    ("level1", "Level 1 — one gang for the whole TrainJob"),
    ("level2", "Level 2 — groups of ReplicatedJobs (+ optional level 3 per Job)"),
    ("composite", "Composite — level 1 around level-2 groups (gang of gangs)"),
    ("coscheduling", "Legacy coscheduling (podGroupPolicy)"),
    ("volcano", "Legacy Volcano (podGroupPolicy)"),
]
POLICY_CHOICES = [("gang", "Gang"), ("basic", "Basic")]
DISRUPTION_CHOICES = [("", "Default"), ("single", "Single pod"), ("all", "All pods of the group")]
ANCESTOR_CHOICES = [("", "— none —"), *[(step, step) for step in ANCESTOR_STEPS]]
BOOL_CHOICES = [("", "Default"), ("true", "Yes"), ("false", "No")]
VOLCANO_MODE_CHOICES = [("", "Default (hard)"), ("hard", "hard"), ("soft", "soft")]
MPI_IMPLEMENTATION_CHOICES = [("", "Default (OpenMPI)"), ("OpenMPI", "OpenMPI")]

SCHEDULING_MODE_FILTER_CHOICES = [
    ("", "Any scheduling"),
    ("none", "None"),
    ("level1", "Level 1"),
    ("level2", "Level 2"),
    ("level3", "Level 3"),
    ("mixed", "Levels 2 + 3"),
    ("composite", "Composite"),
    ("coscheduling", "Legacy coscheduling"),
    ("volcano", "Legacy Volcano"),
]
ORDERING_CHOICES = [
    ("name", "Name A→Z"),
    ("-name", "Name Z→A"),
    ("-updated_at", "Recently changed"),
    ("updated_at", "Least recently changed"),
    ("framework", "Framework"),
    ("sync_state", "Sync state"),
]


def topology_key_choices() -> list[str]:
    """Return the topology keys the editor suggests: zone, rack and this site's network-block key."""
    keys = [TOPOLOGY_ZONE, TOPOLOGY_RACK, settings.TOPOLOGY_BLOCK_KEY]
    return list(dict.fromkeys(key for key in keys if key))


def composite_enabled() -> bool:
    """Return True when this site runs Trainer with the TrainJobCompositePodGroup gate (settings flag)."""
    return bool(getattr(settings, "SCHEDULING_COMPOSITE_ENABLED", False))


# --------------------------------------------------------------------------------------------------- list filters


class PolicyFilterForm(forms.Form):
    """GET filters of the policy list. Unknown values are ignored rather than shown as errors."""

    q = forms.CharField(
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "Name, framework or scheduling…"}),
    )
    framework = forms.ChoiceField(required=False, choices=[("", "Any framework")])
    mode = forms.ChoiceField(required=False, choices=SCHEDULING_MODE_FILTER_CHOICES)
    sync = forms.ChoiceField(required=False, choices=[("", "Any state"), *SyncState.choices])
    ordering = forms.ChoiceField(required=False, choices=ORDERING_CHOICES)

    def __init__(self, *args: Any, frameworks: list[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["framework"].choices = [("", "Any framework"), *[(f, f) for f in frameworks]]

    @staticmethod
    def default_filters() -> dict[str, str]:
        """Return the selector keyword arguments of an unfiltered list sorted by name."""
        return {"search": "", "framework": "", "scheduling_mode": "", "sync_state": "", "ordering": "name"}

    def filters(self) -> dict[str, str]:
        """Return the selector keyword arguments for the valid filters (an invalid one falls back to "any")."""
        self.is_valid()
        data = self.cleaned_data
        return {
            "search": (data.get("q") or "").strip(),
            "framework": data.get("framework") or "",
            "scheduling_mode": data.get("mode") or "",
            "sync_state": data.get("sync") or "",
            "ordering": data.get("ordering") or "name",
        }


# --------------------------------------------------------------------------------------------------- helpers


def parse_key_values(text: str, *, what: str, check_values: bool) -> dict[str, str]:
    """Return the `key=value` lines of `text` as a dict (blank lines and `#` comments skipped).

    Raises ValidationError naming the line when a line has no "=", a key is invalid, a key repeats, or (with
    `check_values`) a value is not a valid label value.
    """
    result: dict[str, str] = {}
    errors: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            errors.append(f"line {number}: write {what} as key=value (e.g. team=ml-platform)")
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        problems = [f"key {p}" for p in label_key_problems(key)]
        if check_values:
            problems += [f"value {p}" for p in label_value_problems(value)]
        if key in result:
            problems.append(f"key '{key}' appears twice; keep one line")
        if problems:
            errors.append(f"line {number} ({key or 'empty key'}): " + "; ".join(problems))
            continue
        result[key] = value
    if errors:
        raise ValidationError(errors)
    return result


def format_key_values(mapping: dict[str, str]) -> str:
    """Return a dict as `key=value` lines, the format parse_key_values reads."""
    return "\n".join(f"{key}={value}" for key, value in mapping.items())


def clean_topology_key(value: str) -> str:
    """Return the stripped topology key; raise ValidationError when it is not a valid node-label key."""
    value = (value or "").strip()
    if value:
        problems = label_key_problems(value)
        if problems:
            raise ValidationError(
                "Not a valid node-label key: " + "; ".join(problems) + f". Pick a suggestion (e.g. {TOPOLOGY_RACK})."
            )
    return value


class TopologyKeyInput(forms.TextInput):
    """A text input with a <datalist> of suggested keys: choose zone/rack/block or type any node-label key."""

    datalist_id = "topology-keys"

    def __init__(self, attrs: dict | None = None) -> None:
        base = {"list": self.datalist_id, "placeholder": "none, or pick or type a key", "autocomplete": "off"}
        super().__init__({**base, **(attrs or {})})


def _optional_int(value: int | None) -> int | None:
    return value if value is not None else None


def keep_unknown_choices(form: forms.Form) -> None:
    """Add the current value of each choice field to its choices when it is not one of them.

    A manifest may hold a value the form does not offer (e.g. mpiImplementation "Intel"); showing it, marked, keeps
    the form valid and lets the domain validator explain the problem instead of the form rejecting it silently.
    """
    for name, field in form.fields.items():
        if not isinstance(field, forms.ChoiceField) or isinstance(field, forms.MultipleChoiceField):
            continue
        if form.is_bound:
            value = form.data.get(form.add_prefix(name))
        else:
            value = form.initial.get(name, field.initial)
        if value is None or isinstance(value, bool):
            continue
        value = str(value)
        if value not in {str(key) for key, _ in field.choices}:
            field.choices = [*field.choices, (value, f"{value} (not a known value)")]


def _bool_choice(value: bool | None) -> str:
    return "" if value is None else ("true" if value else "false")


def _choice_bool(value: str) -> bool | None:
    return None if value == "" else value == "true"


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
    num_nodes = forms.IntegerField(
        required=False, min_value=0, label="Default numNodes", help_text="Training nodes when a TrainJob sets none."
    )
    ml_policy = forms.ChoiceField(
        required=False, choices=ML_POLICY_CHOICES, label="ML policy", widget=forms.RadioSelect
    )
    mpi_num_proc_per_node = forms.IntegerField(required=False, min_value=1, label="Processes per node")
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
    flux_num_proc_per_node = forms.IntegerField(required=False, min_value=1, label="Processes per node")

    scheduling_mode = forms.ChoiceField(choices=SCHEDULING_CHOICES, widget=forms.RadioSelect, label="Scheduling")
    l1_policy = forms.ChoiceField(choices=POLICY_CHOICES, required=False, label="Policy")
    l1_topology_key = forms.CharField(required=False, max_length=316, label="Topology key", widget=TopologyKeyInput())
    l1_disruption_mode = forms.ChoiceField(choices=DISRUPTION_CHOICES, required=False, label="Disruption mode")
    coscheduling_timeout_seconds = forms.IntegerField(
        required=False, min_value=0, label="Schedule timeout (seconds)", help_text="Default 60."
    )
    volcano_mode = forms.ChoiceField(required=False, choices=VOLCANO_MODE_CHOICES, label="Network topology mode")
    volcano_highest_tier_allowed = forms.IntegerField(
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
    replicas = forms.IntegerField(required=False, min_value=0, initial=1)
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
        help_text="Each Job of the (single) target gets its own group, e.g. one rack per replica. Leave the level-2 "
        "fields above at their defaults unless composite groups are enabled.",
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


def fields_digest(fields: PolicyFields) -> str:
    """Return a stable fingerprint of `fields` (equal fields, equal digest)."""
    payload = json.dumps(dataclasses.asdict(fields), sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def fields_to_json(fields: PolicyFields) -> str:
    """Return `fields` as compact JSON (the hidden `fields_base` value); fields_from_json reads it back."""
    return json.dumps(dataclasses.asdict(fields), separators=(",", ":"), sort_keys=True)


def _group_from_json(data: Any) -> GroupFields | None:
    if not isinstance(data, dict):
        return None
    return GroupFields(
        policy=data.get("policy", "gang"),
        topology_key=data.get("topology_key", ""),
        disruption_mode=data.get("disruption_mode", ""),
    )


def fields_from_json(text: str) -> PolicyFields | None:
    """Return the PolicyFields encoded by fields_to_json, or None when `text` is empty or not such JSON."""
    try:
        data = json.loads(text) if text else None
        if not isinstance(data, dict):
            return None
        jobs = [
            ReplicatedJobFields(**{**job, "depends_on": [tuple(pair) for pair in job.get("depends_on", [])]})
            for job in data.pop("replicated_jobs", [])
        ]
        entries = [
            Level2Entry(
                targets=list(entry["targets"]),
                group=_group_from_json(entry.get("group")) or GroupFields(),
                job=_group_from_json(entry.get("job")),
            )
            for entry in data.pop("level2", [])
        ]
        level1 = _group_from_json(data.pop("level1", None))
        return PolicyFields(**data, replicated_jobs=jobs, level2=entries, level1=level1)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


# Attributes that only make sense together: when the user changed one of them in the form, the form's values of
# the whole group win over the YAML's.
FIELD_GROUPS: tuple[tuple[str, ...], ...] = (
    ("name",),
    ("framework",),
    ("labels",),
    ("annotations",),
    ("num_nodes",),
    (
        "ml_policy",
        "mpi_num_proc_per_node",
        "mpi_implementation",
        "mpi_ssh_auth_mount_path",
        "mpi_run_launcher_as_node",
        "flux_num_proc_per_node",
    ),
    ("replicated_jobs",),
    (
        "scheduling_mode",
        "level1",
        "level2",
        "coscheduling_timeout_seconds",
        "volcano_mode",
        "volcano_highest_tier_allowed",
    ),
)


def merge_fields(*, base: PolicyFields | None, form: PolicyFields, yaml: PolicyFields) -> PolicyFields:
    """Return the fields to save when both the form and the YAML may have been edited (a three-way merge).

    `base` is what the form showed when rendered. Each group of form fields the user changed (form ≠ base) is taken
    from the form; every other group comes from the YAML. Without a base, the whole form wins.
    """
    if base is None:
        return form
    merged = copy.deepcopy(yaml)
    for group in FIELD_GROUPS:
        if any(getattr(form, name) != getattr(base, name) for name in group):
            for name in group:
                setattr(merged, name, copy.deepcopy(getattr(form, name)))
    return merged


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
        labels = {k: v for k, v in fields.labels.items() if k != "trainer.kubeflow.org/framework"}
        initial = {
            "name": fields.name,
            "framework": fields.framework,
            "labels": format_key_values(labels),
            "annotations": format_key_values(fields.annotations),
            "num_nodes": fields.num_nodes,
            "ml_policy": fields.ml_policy,
            "mpi_num_proc_per_node": _optional_int(fields.mpi_num_proc_per_node),
            "mpi_implementation": fields.mpi_implementation,
            "mpi_ssh_auth_mount_path": fields.mpi_ssh_auth_mount_path,
            "mpi_run_launcher_as_node": _bool_choice(fields.mpi_run_launcher_as_node),
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
        labels = dict(data["labels"])
        framework = data["framework"]
        level1 = _group_from(data, "l1_") if mode in ("level1", "composite") else None
        level2: list[Level2Entry] = []
        if mode in ("level2", "composite"):
            for form in self.level2.kept_forms():
                entry = form.cleaned_data
                level2.append(
                    Level2Entry(
                        targets=entry["targets"],
                        group=_group_from(entry, ""),
                        job=_group_from(entry, "job_") if entry.get("per_job") else None,
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
            mpi_run_launcher_as_node=_choice_bool(data["mpi_run_launcher_as_node"] or ""),
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


# --------------------------------------------------------------------------------------------------- import & confirms


class ImportForm(forms.Form):
    """Paste or upload one or many ClusterTrainingRuntimes (YAML, multi-document, or JSON)."""

    text = forms.CharField(
        required=False,
        label="Paste YAML or JSON",
        widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false", "class": "mono"}),
        strip=False,
    )
    file = forms.FileField(required=False, label="…or upload a file", help_text=".yaml, .yml or .json, up to 1 MiB.")
    mode = forms.ChoiceField(choices=ImportMode.choices, initial=ImportMode.CREATE_ONLY, widget=forms.RadioSelect)
    message = forms.CharField(required=False, max_length=500, label="Message", initial="Imported")

    MAX_BYTES = 1024 * 1024

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        upload = data.get("file")
        if upload is not None:
            if upload.size > self.MAX_BYTES:
                raise ValidationError(f"The file is {upload.size} bytes; the limit is 1 MiB. Split it into parts.")
            data["payload"] = upload.read()
        elif (data.get("text") or "").strip():
            data["payload"] = data["text"]
        else:
            raise ValidationError("Paste YAML/JSON or choose a file to import.")
        return data


class VersionForm(forms.Form):
    """The optimistic-concurrency token posted by confirm pages (rollback, delete)."""

    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)


class SaveForm(forms.Form):
    """The non-field parts of an editor save: the YAML text (source of truth), base version and message."""

    yaml = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    version = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)
    message = forms.CharField(required=False, max_length=500)
