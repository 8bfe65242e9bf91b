"""The "new API token" form; the API validates with the same bounds."""

from __future__ import annotations

from django import forms
from django.conf import settings

NAME_MAX = 100


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX, help_text="What the token is for, e.g. “CI pipeline”.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Bounds come from settings, read when the form is built (tests and deployments change them).
        self.fields["days"] = forms.IntegerField(
            label="Valid for (days)", min_value=1, max_value=settings.API_TOKEN_MAX_DAYS,
            initial=settings.API_TOKEN_LIFETIME_DAYS,
        )
