"""The form of the clusters page (platform admins): add or change a cluster.

The form only shapes the input; every rule is checked by ``registry_services`` (the API's rules), whose refusals
name the API field, mapped back to the form's field here.
"""

from __future__ import annotations

from typing import Any

from django import forms

from .models import ConnectionKind

# API field → form field, for the service's refusals.
FORM_FIELD = {"name": "name", "displayName": "display_name", "connection": "connection", "inCluster": "connection",
              "kubeconfig": "kubeconfig", "context": "context", "secretRef": "secret_ref",
              "blockLabelKey": "block_label_key", "isDefault": "is_default", "enabled": "enabled",
              "version": None}


class ClusterForm(forms.Form):
    """Add (``creating``) or change a cluster. On a change an empty kubeconfig keeps the stored one."""

    name = forms.CharField(max_length=63, help_text="A DNS label (e.g. gpu-west); it never changes.")
    display_name = forms.CharField(max_length=100, required=False, label="Display name")
    connection = forms.ChoiceField(choices=ConnectionKind.choices, initial=ConnectionKind.KUBECONFIG,
                                   label="How to connect")
    kubeconfig = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false",
                                                                            "autocomplete": "off"}),
                                 help_text="Paste the kubeconfig file. It is stored encrypted and never shown again.")
    context = forms.CharField(max_length=253, required=False,
                              help_text="Kubeconfig context; empty = the file's current context.")
    secret_ref = forms.CharField(max_length=400, required=False, label="Secret",
                                 help_text="namespace/name[/key] of a Secret holding a kubeconfig (read through the "
                                           "default cluster's connection).")
    block_label_key = forms.CharField(max_length=317, required=False, label="Network block label key",
                                      help_text="Node label of a network block on this cluster; empty = the portal's "
                                                "default.")
    is_default = forms.BooleanField(required=False, label="Default cluster",
                                    help_text="Pages and API paths that name no cluster mean this one.")
    enabled = forms.BooleanField(required=False, initial=True,
                                 help_text="A disabled cluster is neither watched nor synced to.")
    version = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, creating: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.creating = creating
        if not creating:
            self.fields["name"].disabled = True
            self.fields["kubeconfig"].help_text = ("Paste a new kubeconfig to replace the stored one; leave empty to "
                                                   "keep it. It is never shown.")

    def api_data(self) -> dict[str, Any]:
        """Return the cleaned input in the API's shape (call after ``is_valid``)."""
        data = self.cleaned_data
        body: dict[str, Any] = {
            "displayName": data["display_name"], "connection": data["connection"], "context": data["context"],
            "blockLabelKey": data["block_label_key"], "isDefault": data["is_default"], "enabled": data["enabled"],
        }
        if self.creating:
            body["name"] = data["name"]
        if data["connection"] == ConnectionKind.KUBECONFIG and data["kubeconfig"].strip():
            body["kubeconfig"] = data["kubeconfig"]
        if data["connection"] == ConnectionKind.SECRET:
            body["secretRef"] = data["secret_ref"]
        if data["connection"] not in (ConnectionKind.KUBECONFIG, ConnectionKind.SECRET):
            body.pop("context")
        if not self.creating and not data["is_default"]:
            body.pop("isDefault")  # un-defaulting happens by making another cluster the default
        return body

    def add_service_error(self, exc: Any) -> None:
        """Show a ``ClusterError`` next to the field it names (or above the form)."""
        paths = [item.get("path") for item in exc.fields] or [None]
        for path in paths:
            target = FORM_FIELD.get(path) if path else None
            message = next((i["message"] for i in exc.fields if i.get("path") == path), exc.message) if path else \
                exc.message
            self.add_error(target if target in self.fields else None, message)
