"""The policy list's filter form."""

from __future__ import annotations

from typing import Any

from django import forms

from runtimes.choices import ClusterState, SyncState
from runtimes.domain.status import SYNC_STATUSES
from runtimes.forms.fields import ORDERING_CHOICES, SCHEDULING_MODE_FILTER_CHOICES

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
    sync_status = forms.ChoiceField(required=False, choices=[("", "Any sync status"), *SYNC_STATUSES.items()])
    cluster_status = forms.ChoiceField(required=False, choices=[("", "Any cluster status"), *ClusterState.choices])
    ordering = forms.ChoiceField(required=False, choices=ORDERING_CHOICES)

    def __init__(self, *args: Any, frameworks: list[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["framework"].choices = [("", "Any framework"), *[(f, f) for f in frameworks]]

    @staticmethod
    def default_filters() -> dict[str, str]:
        """Return the selector keyword arguments of an unfiltered list sorted by name."""
        return {
            "search": "", "framework": "", "scheduling_mode": "", "sync_state": "", "sync_status": "",
            "cluster_status": "", "ordering": "name",
        }

    def filters(self) -> dict[str, str]:
        """Return the selector keyword arguments for the valid filters (an invalid one falls back to "any")."""
        self.is_valid()
        data = self.cleaned_data
        return {
            "search": (data.get("q") or "").strip(),
            "framework": data.get("framework") or "",
            "scheduling_mode": data.get("mode") or "",
            "sync_state": data.get("sync") or "",
            "sync_status": data.get("sync_status") or "",
            "cluster_status": data.get("cluster_status") or "",
            "ordering": data.get("ordering") or "name",
        }




