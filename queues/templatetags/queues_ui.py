"""Template filters of the queue pages."""

from __future__ import annotations

from django import template

register = template.Library()

_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


@register.filter
def qty(value, resource: str = "") -> str:
    """Return a quantity for people: memory in Ki/Mi/Gi/Ti, counts without a needless ".0"; "∞" for None."""
    if value is None or value == "":
        return "∞"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if resource == "memory" or resource.endswith("memory"):
        for suffix, size in _BINARY:
            if abs(number) >= size:
                return f"{number / size:g}{suffix}"
    return f"{number:g}"


@register.filter
def one_based(value) -> str:
    """Return a 0-based position as 1-based text ("?" when unknown)."""
    return "?" if value is None else str(int(value) + 1)
