"""Make a tracked record storable whatever the cluster sent: no NUL, no invalid code points, bounded sizes, right types.

The Kubernetes API server stores what clients send; one object with a NUL byte in an annotation, a lone surrogate
(``"\\ud800"`` from a JSON escape), a megabyte message or a string where a number belongs must not stop the tracker
from writing every other row. PostgreSQL refuses NUL in text and jsonb, ``json.dumps`` emits ``NaN`` that jsonb
refuses, and a CharField longer than its column fails the whole INSERT. :func:`sanitize_record` repairs a record in
place before it is written and says how many values it changed, so the tracker can count them.

Pure: no Django; the column limits come from the caller.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from typing import Any

REPLACEMENT = "\ufffd"
# Longest string kept inside the JSON columns (pods, events, conditions…): a page shows far less.
MAX_JSON_STRING = 4096
# Deepest nesting kept inside the JSON columns; deeper values become their (truncated) text.
MAX_JSON_DEPTH = 16
# Longest unbounded text column (the state message).
MAX_TEXT = 32_768
# PositiveIntegerField's range on every database the portal supports.
MAX_INT = 2_147_483_647

_RECORD_INTS = ("num_nodes", "gpus_per_node")
# The record's JSON columns (what ``sanitize_record`` can hand back as storable JSON text).
JSON_FIELDS = ("resources_per_node", "pod_groups", "workload", "pods", "events", "kueue")
_RECORD_JSON = frozenset(JSON_FIELDS)
_RECORD_DICTS = ("resources_per_node", "workload", "kueue")
_RECORD_DATES = ("since", "submitted_at")
# A JSON text with a run this long between quotes may hold a string longer than MAX_JSON_STRING.
_LONG_RUN = re.compile(f'[^"]{{{MAX_JSON_STRING + 1}}}')


def clean_text(value: Any, limit: int | None = None) -> tuple[str, bool]:
    """Return ``(text, changed)``: ``value`` as a string without NUL, with every lone surrogate replaced by U+FFFD
    and cut to ``limit`` characters. Non-strings become their ``str()`` (None becomes "")."""
    changed = False
    if not isinstance(value, str):
        value = "" if value is None else str(value)
        changed = True
    if "\x00" in value:
        value = value.replace("\x00", "")
        changed = True
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates: round-trip through UTF-16 with replacement (U+FFFD per bad code unit).
            value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
            changed = True
    if limit is not None and len(value) > limit:
        value = value[:limit]
        changed = True
    return value, changed


class _Counter:
    __slots__ = ("changes",)

    def __init__(self) -> None:
        self.changes = 0


def clean_json(value: Any, counter: _Counter | None = None, depth: int = 0) -> Any:
    """Return ``value`` as storable JSON: clean strings (and keys), finite numbers, only JSON types, bounded
    depth. ``counter.changes`` grows by one per repaired value."""
    counter = counter or _Counter()
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        counter.changes += 1
        return None
    if isinstance(value, str):
        text, changed = clean_text(value, MAX_JSON_STRING)
        counter.changes += changed
        return text
    if depth >= MAX_JSON_DEPTH:
        counter.changes += 1
        return clean_text(value, MAX_JSON_STRING)[0]
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            text, changed = clean_text(key, MAX_JSON_STRING)
            counter.changes += changed
            result[text] = clean_json(item, counter, depth + 1)
        return result
    if isinstance(value, list | tuple):
        return [clean_json(item, counter, depth + 1) for item in value]
    counter.changes += 1
    return clean_text(value, MAX_JSON_STRING)[0]


def json_text(value: Any) -> str:
    """Return the canonical JSON text of ``value``: keys sorted, no spaces, non-ASCII kept as it is (so equal values
    give equal texts, whatever their dicts' key order).

    Raises TypeError (a non-JSON type), ValueError (NaN or infinity, a circular reference) or RecursionError.
    """
    return _CANONICAL.encode(value)


_CANONICAL = json.JSONEncoder(ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":"))


def json_text_is_clean(text: str) -> bool:
    """Return True when ``text`` (from :func:`json_text`) is certainly storable as it is: no NUL, no lone surrogate,
    no string that might exceed ``MAX_JSON_STRING``.

    False means "look closer" (a run between quotes long enough to hold an over-long string, an escaped backslash
    before ``u0000``), not necessarily "dirty".
    """
    if "\\u0000" in text or (len(text) > MAX_JSON_STRING and _LONG_RUN.search(text)):
        return False
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return False
    return True


def _clean_json_text(value: Any) -> str | None:
    """Return the canonical text of ``value`` when it is certainly storable as it is (the fast path: one C-speed
    encoding), else None ("look closer": a NUL, a lone surrogate, NaN, a non-JSON type, a possibly over-long
    string)."""
    try:
        text = json_text(value)
    except (TypeError, ValueError, RecursionError):
        return None
    return text if json_text_is_clean(text) else None


def _clean_int(value: Any) -> tuple[int, bool]:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT:
        return value, False
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return 0, True
    return min(max(number, 0), MAX_INT), True


def sanitize_record(record: Any, limits: dict[str, int], json_texts: dict[str, str] | None = None) -> int:
    """Repair ``record`` (a ``records.JobRecord``) in place; return how many values were changed (0: untouched).

    ``limits`` maps a string field to its column's maximum length (fields not in it are cut at ``MAX_TEXT``). When
    ``json_texts`` is given, it receives the canonical JSON text (:func:`json_text`) of each field of
    ``JSON_FIELDS`` as repaired: the writer stores and hashes that text instead of encoding the values again.
    """
    changes = 0
    texts = {} if json_texts is None else json_texts
    for name, value in vars(record).items():
        if name in _RECORD_JSON:
            expected = dict if name in _RECORD_DICTS else list
            # One C-speed encoding per column; the common, clean value is walked no further.
            text = _clean_json_text(value) if isinstance(value, expected) else None
            if text is not None:
                texts[name] = text
                continue
            counter = _Counter()
            cleaned = clean_json(value, counter)
            if not isinstance(cleaned, expected):
                cleaned = expected()
                counter.changes += 1
            if counter.changes:
                setattr(record, name, cleaned)
                changes += counter.changes
            texts[name] = json_text(cleaned)
        elif name in _RECORD_INTS:
            number, changed = _clean_int(value)
            if changed:
                setattr(record, name, number)
                changes += 1
        elif name in _RECORD_DATES:
            if value is not None and not isinstance(value, dt.datetime):
                setattr(record, name, None)
                changes += 1
        else:
            text, changed = clean_text(value, limits.get(name, MAX_TEXT))
            if changed:
                setattr(record, name, text)
                changes += 1
    return changes
