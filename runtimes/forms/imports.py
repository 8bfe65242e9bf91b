"""Import and confirmation forms (YAML upload, expected version, save message)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from runtimes.choices import ImportMode
from runtimes.forms.fields import WholeNumberField

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

    version = WholeNumberField(min_value=1, widget=forms.HiddenInput)


class SaveForm(forms.Form):
    """The non-field parts of an editor save: the YAML text (source of truth), base version and message."""

    yaml = forms.CharField(required=False, strip=False, widget=forms.Textarea, label="YAML")
    version = WholeNumberField(required=False, min_value=1, widget=forms.HiddenInput, label="Version")
    message = forms.CharField(required=False, max_length=500, label="Revision message")

    def problems(self) -> str:
        """Return the errors of an invalid save as one sentence per field ("Revision message: Ensure …")."""
        return " ".join(
            f"{self.fields[name].label}: {' '.join(errors)}" for name, errors in self.errors.items()
        )


