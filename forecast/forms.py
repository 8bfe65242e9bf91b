"""The what-if form of the forecast pages (the API takes the same candidate as JSON)."""

from __future__ import annotations

from django import forms

LEVEL_CHOICES = [("", "— keep —"), ("zone", "zone"), ("block", "block"), ("rack", "rack"), ("host", "host"),
                 ("none", "no constraint")]


class WhatIfForm(forms.Form):
    """One candidate change of a policy (a runtime's topology level) and/or of the nodes (add or cordon in a
    domain), simulated over the last `days` days."""

    title = forms.CharField(required=False, max_length=200)
    runtime = forms.CharField(required=False, max_length=253, help_text="The policy (runtime) to change.")
    level = forms.ChoiceField(required=False, choices=LEVEL_CHOICES, help_text="Its gangs' required topology level.")
    domain = forms.RegexField(required=False, regex=r"^[^/\s]+(/[^/\s]+){0,2}$", max_length=200,
                              help_text="zone, zone/block or zone/block/rack",
                              error_messages={"invalid": "Name a zone, zone/block or zone/block/rack."})
    change = forms.ChoiceField(required=False, choices=[("add", "add nodes"), ("cordon", "cordon nodes")])
    count = forms.IntegerField(required=False, min_value=0, max_value=10_000, initial=8)
    gpus_per_node = forms.IntegerField(required=False, min_value=0, max_value=64, initial=8)
    days = forms.IntegerField(min_value=1, max_value=90, initial=7)
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, initial=0)

    def clean(self) -> dict:
        data = super().clean()
        if data.get("level") and not data.get("runtime"):
            self.add_error("runtime", "Name the policy whose topology level changes.")
        if data.get("runtime") and not data.get("level"):
            self.add_error("level", "Pick the level to simulate.")
        if not data.get("level") and not data.get("domain") and not self.errors:
            raise forms.ValidationError("Name at least one change: a policy's level, or nodes in a domain.")
        return data

    def candidate(self) -> dict:
        """Return the API's candidate object for the cleaned form."""
        data = self.cleaned_data
        candidate: dict = {"topology": [], "nodes": [], "strictFifo": []}
        if data.get("runtime") and data.get("level"):
            candidate["topology"].append({"runtime": data["runtime"], "topologyLevel": data["level"]})
        if data.get("domain"):
            candidate["nodes"].append({"domain": data["domain"], "change": data.get("change") or "add",
                                       "count": data.get("count") or 0,
                                       "gpusPerNode": data.get("gpus_per_node") if data.get("gpus_per_node")
                                       is not None else 8})
        return candidate
