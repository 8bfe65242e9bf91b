"""The forms of the notifications page (validation of substance is in the services, which name the field)."""

from __future__ import annotations

from django import forms

from .choices import ChannelKind, EventKind, Scope


class ChannelForm(forms.Form):
    name = forms.CharField(max_length=100)
    kind = forms.ChoiceField(choices=ChannelKind.choices)
    target = forms.CharField(max_length=2000, required=False, label="E-mail address or webhook URL")
    chat_url = forms.CharField(max_length=2000, required=False, label="Chat URL (slack://…, msteams://…, mmost://…)",
                               widget=forms.PasswordInput(render_value=False))


class SubscriptionForm(forms.Form):
    channel = forms.TypedChoiceField(coerce=int, choices=())
    scope = forms.ChoiceField(choices=Scope.choices)
    value = forms.CharField(max_length=253, required=False, label="Namespace, runtime or queue")
    cluster = forms.CharField(max_length=63, required=False, label="Cluster (empty: every cluster)")
    kinds = forms.MultipleChoiceField(choices=EventKind.choices, widget=forms.CheckboxSelectMultiple)
    wait_minutes = forms.IntegerField(required=False, min_value=1, label="Waiting longer than (minutes)")

    def __init__(self, *args, channels=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["channel"].choices = [(channel.pk, channel.name) for channel in channels]
