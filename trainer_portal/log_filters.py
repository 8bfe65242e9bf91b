"""Logging filters of the project (referenced by name from ``settings.LOGGING``)."""

from __future__ import annotations

import logging


class ForbiddenWithoutTraceback(logging.Filter):
    """Log a 403 as one line: a refused request is an expected outcome, not an error with a traceback.

    Django logs ``PermissionDenied`` on ``django.request`` with the exception attached; this keeps the line
    ("Forbidden (Permission denied): /path") and drops the traceback. Other records pass unchanged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Return True (every record is kept); strip the exception of 403 records."""
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True
