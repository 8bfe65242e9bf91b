"""``{% live_stream_attr %}``: the attribute that lets a poller open a live stream instead (trainer_portal/live)."""

from __future__ import annotations

from django import template
from django.conf import settings
from django.utils.html import format_html

register = template.Library()


@register.simple_tag
def live_stream_attr() -> str:
    """Return ` data-live-stream="<stream path>"` when streams are on (TRAINER_PORTAL_LIVE_STREAM), else ""."""
    path = settings.TRAINER_PORTAL_LIVE_STREAM
    return format_html(' data-live-stream="{}"', path) if path else ""
