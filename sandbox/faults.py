"""Fault injection for tests: the next N requests matching a method and a path regex misbehave.

Actions: `status` (answer 500/503/429/409/410/504/403 with a metav1.Status; a `Retry-After` header only when
`retry_after` is given, because urllib3 — and so the kubernetes client — silently retries 429/503 carrying it),
`hang` (sleep `seconds`, then 504),
`drop` (close the connection without a response), `cut-watch` (end a matching watch stream after
`after_events` events). Paths under /sandbox/ are never affected.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

ACTIONS = ("status", "hang", "drop", "cut-watch")
STATUS_REASONS = {403: "Forbidden", 409: "Conflict", 410: "Expired", 429: "TooManyRequests", 500: "InternalError",
                  503: "ServiceUnavailable", 504: "Timeout"}


class FaultSpecError(ValueError):
    """A fault specification with a missing or bad field."""


@dataclass
class Fault:
    """One injected fault rule."""

    method: str
    path: re.Pattern[str]
    count: int
    action: str
    status: int = 500
    seconds: float = 5.0
    after_events: int = 0
    message: str = ""
    retry_after: int | None = None

    def describe(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path.pattern, "count": self.count, "action": self.action,
                "status": self.status, "seconds": self.seconds, "after_events": self.after_events,
                "retry_after": self.retry_after}


def parse_fault(spec: Any) -> Fault:
    """Returns a Fault from its JSON spec. Raises FaultSpecError naming the bad field and the fix."""
    if not isinstance(spec, dict):
        raise FaultSpecError("the fault must be a JSON object like "
                             '{"method": "GET", "path": "/api/v1/pods", "count": 1, "action": "status", "status": 503}')
    action = spec.get("action", "status")
    if action not in ACTIONS:
        raise FaultSpecError(f"action: unsupported value {action!r}; use one of {', '.join(ACTIONS)}")
    method = str(spec.get("method", "*")).upper()
    try:
        path = re.compile(str(spec.get("path", ".*")))
    except re.error as exc:
        raise FaultSpecError(f"path: not a valid regular expression ({exc})")
    count = spec.get("count", 1)
    if not isinstance(count, int) or count < 1:
        raise FaultSpecError("count: must be an integer >= 1")
    status = spec.get("status", 500)
    if action == "status" and status not in STATUS_REASONS:
        raise FaultSpecError(f"status: unsupported value {status!r}; use one of {sorted(STATUS_REASONS)}")
    seconds = spec.get("seconds", 5.0)
    if not isinstance(seconds, int | float) or seconds < 0:
        raise FaultSpecError("seconds: must be a number >= 0")
    after = spec.get("after_events", 0)
    if not isinstance(after, int) or after < 0:
        raise FaultSpecError("after_events: must be an integer >= 0")
    retry_after = spec.get("retry_after")
    if retry_after is not None and (not isinstance(retry_after, int) or retry_after < 0):
        raise FaultSpecError("retry_after: must be an integer number of seconds >= 0 (or omitted)")
    return Fault(method, path, count, action, int(status), float(seconds), after, str(spec.get("message", "")),
                 retry_after)


class Faults:
    """The active fault rules (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[Fault] = []

    def add(self, spec: Any) -> Fault:
        """Adds a rule from its JSON spec; returns it. Raises FaultSpecError."""
        fault = parse_fault(spec)
        with self._lock:
            self._rules.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return [f.describe() for f in self._rules]

    def take(self, method: str, path: str, is_watch: bool) -> Fault | None:
        """Returns (and uses up one count of) the first rule matching this request, or None.

        `cut-watch` rules only match watch requests.
        """
        if not self._rules or path.startswith("/sandbox/"):
            return None
        with self._lock:
            for fault in self._rules:
                if fault.method not in ("*", method) or not fault.path.search(path):
                    continue
                if fault.action == "cut-watch" and not is_watch:
                    continue
                fault.count -= 1
                if fault.count <= 0:
                    self._rules.remove(fault)
                return fault
        return None
