"""Composite (gang-of-gangs) is Alpha 2, after Trainer v2.4.0: wherever the form offers it, it says so."""

from __future__ import annotations

from runtimes.domain.editing import fields_from_manifest
from runtimes.forms.editor import PolicyEditor
from runtimes.forms.fields import SCHEDULING_MODE_FILTER_CHOICES
from tests.ui import torch_manifest


def test_the_editor_labels_composite_alpha_2(settings):
    settings.SCHEDULING_COMPOSITE_ENABLED = True
    editor = PolicyEditor.from_fields(fields_from_manifest(torch_manifest()))
    labels = dict(editor.form.fields["scheduling_mode"].choices)
    assert labels["composite"].endswith("(gang of gangs; Alpha 2, not in Trainer v2.4.0)")


def test_the_list_filter_labels_composite_alpha_2():
    assert dict(SCHEDULING_MODE_FILTER_CHOICES)["composite"] == "Composite (Alpha 2)"
