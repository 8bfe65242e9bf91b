"""Project-wide template helpers: relative times, diff colouring, dict look-ups, query strings, line numbers.

Only formatting lives here; nothing queries the database or changes data. App-specific tags live in each app
(`runtimes_ui` for policies).
"""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.timesince import timesince

register = template.Library()


@register.filter
def ago(value: datetime | None) -> str:
    """Return "5 minutes ago" (first unit only) for a past datetime, "just now" under a minute, "" for None."""
    if not value:
        return ""
    delta = timezone.now() - value
    if delta.total_seconds() < 60:
        return "just now"
    return timesince(value, depth=1) + " ago"


@register.filter
def diff_lines(text: str | None) -> list[dict[str, str]]:
    """Split unified-diff text into [{text, css}] so each line can be coloured (add, del, hunk, meta)."""
    lines = []
    for line in (text or "").splitlines():
        if line.startswith(("+++", "---")):
            css = "diff__line--meta"
        elif line.startswith("@@"):
            css = "diff__line--hunk"
        elif line.startswith("+"):
            css = "diff__line--add"
        elif line.startswith("-"):
            css = "diff__line--del"
        else:
            css = ""
        lines.append({"text": line, "css": css})
    return lines


@register.filter
def get_item(mapping: object, key: str) -> object:
    """Return mapping[key] (or None) so templates can look up dict values by a variable key."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.simple_tag(takes_context=True)
def query_with(context: template.Context, **changes: object) -> str:
    """Return the current query string with `changes` applied (None or "" removes a key), starting with "?"."""
    request = context.get("request")
    params = request.GET.copy() if request is not None else None
    if params is None:
        return ""
    for key, value in changes.items():
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = str(value)
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.filter
def line_numbers(text: str | None) -> str:
    """Return "1\\n2\\n…" with one number per line of `text` (at least one), for the YAML editor's gutter."""
    count = max(1, (text or "").count("\n") + (0 if (text or "").endswith("\n") else 1))
    return "\n".join(str(number) for number in range(1, count + 1))
