"""Forms of the TrainJob pages: the list filters (GET) and a namespace grant (POST, platform admins)."""

from __future__ import annotations

from django import forms
from django.contrib.auth.models import Group
from django.core.validators import RegexValidator

from trainer_portal import roles
from trainer_portal.cluster.models import Cluster

from .choices import AdmissionState, SchedulingLevel
from .selectors import SORTS

SORT_LABELS = {
    "-submitted": "Newest first", "submitted": "Oldest first", "name": "Name A→Z", "-name": "Name Z→A",
    "namespace": "Namespace A→Z", "-namespace": "Namespace Z→A", "since": "Longest in state",
    "-since": "Latest change", "size": "Smallest first", "-size": "Largest first", "state": "State A→Z",
    "-state": "State Z→A",
}
DNS_LABEL = RegexValidator(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
                           "a namespace is a DNS label: lower-case letters, digits and '-', at most 63 characters, "
                           "starting and ending with a letter or digit")


def _blank(label: str, values: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [("", label), *values]


class JobFilterForm(forms.Form):
    """The list's filters. Choices of namespace, runtime and queue are the values the user can see."""

    cluster = forms.ChoiceField(required=False, label="Cluster")
    q = forms.CharField(required=False, max_length=200, label="Search",
                        widget=forms.TextInput(attrs={"type": "search", "placeholder": "name, namespace, creator…"}))
    namespace = forms.ChoiceField(required=False, label="Namespace")
    state = forms.ChoiceField(required=False, label="State")
    runtime = forms.ChoiceField(required=False, label="Runtime")
    level = forms.ChoiceField(required=False, label="Level")
    queue = forms.ChoiceField(required=False, label="Queue")
    sort = forms.ChoiceField(required=False, label="Sort by",
                             choices=[(key, SORT_LABELS.get(key, key)) for key in SORTS])

    FILTERS = ("cluster", "namespace", "state", "runtime", "level", "queue", "q")

    def __init__(self, data, *, namespaces: list[str], runtimes: list[str], queues: list[str],
                 clusters: list[tuple[str, str]] = ()) -> None:
        super().__init__(data)
        self.fields["cluster"].choices = _blank("All clusters", list(clusters))
        self.fields["namespace"].choices = _blank("All namespaces", [(n, n) for n in namespaces])
        self.fields["state"].choices = _blank("All states", list(AdmissionState.choices))
        self.fields["runtime"].choices = _blank("All runtimes", [(r, r) for r in runtimes])
        self.fields["level"].choices = _blank("All levels", list(SchedulingLevel.choices))
        self.fields["queue"].choices = _blank("All queues", [(q, q) for q in queues])

    def filters(self) -> dict[str, str]:
        """Return the valid, non-empty filters (call after ``is_valid``)."""
        data = getattr(self, "cleaned_data", {})
        return {name: data[name] for name in self.FILTERS if data.get(name)}


class NamespaceGrantForm(forms.Form):
    """Grant a group's members (data scientists) the TrainJobs of one namespace (stored by the grant service)."""

    group = forms.ModelChoiceField(queryset=Group.objects.none(), empty_label="Choose a group",
                                   help_text="Members of this group who hold the data-scientist role see the "
                                             "namespace's jobs.")
    namespace = forms.CharField(max_length=63, validators=[DNS_LABEL], help_text="The Kubernetes namespace, e.g. "
                                                                                  "team-a.")
    cluster = forms.ChoiceField(required=False, label="Cluster",
                                help_text="The namespace on this cluster only, or on every cluster (also the ones "
                                          "added later).")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # The role groups grant roles, not namespaces: granting "viewer" a namespace would mean nothing.
        self.fields["group"].queryset = Group.objects.exclude(
            name__in=(roles.PLATFORM_ADMIN, roles.VIEWER, roles.DATA_SCIENTIST)).order_by("name")
        self.fields["cluster"].choices = _blank("Every cluster", [(c.name, c.label) for c in Cluster.objects.all()])

    def clean_namespace(self) -> str:
        """Return the namespace without surrounding blanks."""
        return self.cleaned_data["namespace"].strip()
