"""One rule for whole numbers that people type and programs send: ASCII digits only, and not too many of them.

Shared by the REST API and the HTML forms (the preview, the impact page, revision pickers), so the same text is
accepted or refused everywhere. Python's own ``int()`` and ``str.isdigit()`` are too lenient for input: they accept
Arabic-Indic and full-width digits, and ``isdigit()`` also superscripts that ``int()`` then rejects.
"""

from __future__ import annotations

import re

MAX_DIGITS = 15
_WHOLE_NUMBER = re.compile(rf"[+-]?[0-9]{{1,{MAX_DIGITS}}}", re.ASCII)


def parse_whole_number(value: object) -> int | None:
    """Return `value` as an int, or None when it is not a whole number.

    Accepted: a JSON integer (not a boolean), or text of at most 15 ASCII digits with an optional sign (surrounding
    whitespace ignored). Refused: floats (even ``2.0``), booleans, ``"+-5"``, ``"²"``, ``"٣"``, ``"1e3"``, ``""``
    and longer digit strings. Range checks are the caller's.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if _WHOLE_NUMBER.fullmatch(text):
            return int(text)
    return None


def shown(value: object, limit: int = 40) -> str:
    """Return `value` as a short text for an error message (long input is cut, with its length)."""
    if value is None or value == "":
        return "nothing"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"
