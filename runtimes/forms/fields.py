"""Choice lists, widgets and small parse helpers shared by the policy forms."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from runtimes.domain.constants import (
    ANCESTOR_STEPS,
    COMPOSITE_RELEASE_LABEL,
    TOPOLOGY_RACK,
    TOPOLOGY_ZONE,
)
from runtimes.domain.labels import label_key_problems, label_value_problems
from runtimes.domain.numbers import parse_whole_number

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
    ("composite", f"Composite — level 1 around level-2 groups (gang of gangs; {COMPOSITE_RELEASE_LABEL})"),
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
    ("composite", "Composite (Alpha 2)"),
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


def optional_int(value: int | None) -> int | None:
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
        if not value.isprintable():
            continue  # NUL or another control character: the field refuses it (never saved, never echoed as a choice)
        if value not in {str(key) for key, _ in field.choices}:
            field.choices = [*field.choices, (value, f"{value} (not a known value)")]


def bool_choice(value: bool | None) -> str:
    return "" if value is None else ("true" if value else "false")


def choice_bool(value: str) -> bool | None:
    return None if value == "" else value == "true"


INT32_MAX = 2**31 - 1


class WholeNumberField(forms.IntegerField):
    """An IntegerField held to the portal's one number rule (`runtimes.domain.numbers`): ASCII digits only, and at
    most int32 (the bound of the CRD's integer fields and of revision numbers) unless a smaller maximum is given."""

    def __init__(self, *args: Any, max_value: int | None = INT32_MAX, **kwargs: Any) -> None:
        super().__init__(*args, max_value=max_value, **kwargs)

    def to_python(self, value: Any) -> int | None:
        if value in self.empty_values:
            return None
        number = parse_whole_number(value)
        if number is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return number
