"""Chat services through apprise (Slack, Microsoft Teams, Mattermost, Discord, …): the channel's secret is the
apprise URL (``slack://…``, ``msteams://…``, ``mmost://…``), restricted to ``NOTIFICATIONS_APPRISE_SCHEMES``."""

from __future__ import annotations

from urllib.parse import urlsplit

import apprise
from django.conf import settings

from .base import Message, TransportError


def url_problem(url: str) -> str:
    """Return why ``url`` cannot be a chat channel ("" when it can): a scheme outside the allowed chat services,
    or a URL apprise cannot read."""
    scheme = urlsplit(url).scheme.lower()
    allowed = tuple(s.strip() for s in settings.NOTIFICATIONS_APPRISE_SCHEMES if s.strip())
    if scheme not in allowed:
        return f"use one of the chat services {', '.join(allowed)} (an apprise URL such as slack://…)"
    if apprise.Apprise.instantiate(url) is None:
        return "apprise cannot read this URL; see the apprise documentation of the service"
    return ""


def send(*, target: str, secret: str, message: Message) -> None:
    """Post ``message`` to the chat URL ``secret``. Raises TransportError (permanent when the URL is unusable)."""
    problem = url_problem(secret)
    if problem:
        raise TransportError(problem, permanent=True)
    notifier = apprise.Apprise()
    notifier.add(secret)
    if not notifier.notify(title=message.title, body=message.body):
        raise TransportError("the chat service did not accept the message (see the worker log)")
