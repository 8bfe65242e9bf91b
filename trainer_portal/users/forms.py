"""The Users page's forms; they validate with the services' rules (one set of rules for page and API)."""

from __future__ import annotations

from django import forms

from trainer_portal import roles

from .errors import UserError
from .services import PASSWORD_MAX, ROLE_CHOICES, USERNAME_MAX, clean_username, parse_groups

ROLE_FIELD_CHOICES = [(value, roles.ROLE_LABELS[value]) for value in ROLE_CHOICES]
_GROUPS_HELP = ("Comma-separated, e.g. “team-a-ml, team-b-ml”; groups that do not exist yet are created. Namespace "
                "grants name groups.")


def _service_rule(rule, value):
    try:
        return rule(value)
    except UserError as exc:
        raise forms.ValidationError(exc.message) from None


class _GroupsMixin:
    def clean_groups(self) -> list[str]:
        return _service_rule(parse_groups, self.cleaned_data.get("groups") or "")


class UserCreateForm(_GroupsMixin, forms.Form):
    username = forms.CharField(max_length=USERNAME_MAX)
    password = forms.CharField(max_length=PASSWORD_MAX, widget=forms.PasswordInput(render_value=False),
                               strip=False, help_text="Checked by the deployment's password rules.")
    role = forms.ChoiceField(choices=ROLE_FIELD_CHOICES, initial=roles.DATA_SCIENTIST)
    groups = forms.CharField(required=False, max_length=4000, help_text=_GROUPS_HELP)

    def clean_username(self) -> str:
        return _service_rule(clean_username, self.cleaned_data["username"])


class UserUpdateForm(_GroupsMixin, forms.Form):
    role = forms.ChoiceField(choices=ROLE_FIELD_CHOICES)
    groups = forms.CharField(required=False, max_length=4000, help_text=_GROUPS_HELP)
    is_active = forms.BooleanField(required=False, label="Active (may sign in and use tokens)")


class PasswordResetForm(forms.Form):
    password = forms.CharField(label="New password", max_length=PASSWORD_MAX, strip=False,
                               widget=forms.PasswordInput(render_value=False),
                               help_text="The user's signed-in sessions end; their API tokens keep working.")
