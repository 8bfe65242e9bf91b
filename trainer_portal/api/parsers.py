"""Bounded request parsing for every API view: JSON of at most 1 MiB and at most 100 levels deep.

The limits are the portal's contract with API clients (a manifest is far below both); anything over them is refused
before it reaches a serializer, a merge patch or the policy checker, none of which then needs its own guard:
413 for a body that is too large, 400 naming the body (path "") for one that is malformed or nested too deeply.
"""

from __future__ import annotations

import codecs
import json
from typing import Any

from rest_framework import status
from rest_framework.parsers import JSONParser

from trainer_portal.errors import PortalError, field

MAX_BODY_BYTES = 1024 * 1024
MAX_DEPTH = 128  # above the manifest's own limit (100), so a deep manifest is reported at its path


def too_large(size: int) -> PortalError:
    """Return the 413 error for a body of `size` bytes."""
    message = (
        f"The request body is {size:,} bytes; the limit is {MAX_BODY_BYTES:,} bytes (1 MiB). "
        "Split the input into smaller requests."
    )
    return PortalError(
        message, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, code="too_large",
        fields=[field("", message, "too_large")],
    )


def malformed(message: str) -> PortalError:
    """Return the 400 error for a body that cannot be parsed; `message` says what is wrong and how to fix it."""
    return PortalError(message, status=status.HTTP_400_BAD_REQUEST, code="parse_error",
                       fields=[field("", message, "parse_error")])


def read_limited(stream, parser_context) -> bytes:
    """Return the request body, refusing (413) anything over MAX_BODY_BYTES before reading it all."""
    request = (parser_context or {}).get("request")
    length = request.META.get("CONTENT_LENGTH") if request is not None else None
    if length and str(length).isdigit() and int(length) > MAX_BODY_BYTES:
        raise too_large(int(length))
    body = stream.read(MAX_BODY_BYTES + 1) if stream is not None else b""
    if len(body) > MAX_BODY_BYTES:
        raise too_large(len(body))
    return body


def depth_problem(document: Any, limit: int = MAX_DEPTH) -> str | None:
    """Return the path at which `document` nests deeper than `limit` levels, or None when it does not.

    Iterative, so that it is safe on any document the JSON parser accepted.
    """
    stack: list[tuple[Any, int, str]] = [(document, 0, "")]
    while stack:
        node, depth, path = stack.pop()
        if depth > limit:
            return path
        if isinstance(node, dict):
            stack.extend((value, depth + 1, f"{path}.{key}" if path else str(key)) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((value, depth + 1, f"{path}[{index}]") for index, value in enumerate(node))
    return None


def parse_bounded_json(body: bytes, encoding: str = "utf-8") -> Any:
    """Return the JSON document in `body`; raises PortalError (400) when it is not JSON or nests too deeply."""
    try:
        text = codecs.decode(body, encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise malformed(f"The body is not valid {encoding} text ({exc}); send UTF-8 JSON.") from None
    if not text.strip():
        raise malformed("The body is empty; send a JSON object.")
    try:
        document = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise malformed(f"The JSON document is nested more than {MAX_DEPTH} levels deep.") from None
    except ValueError as exc:
        raise malformed(f"The body is not valid JSON: {exc}.") from None
    path = depth_problem(document)
    if path is not None:
        # Named by the top-level field it is under (the full path is as long as the nesting).
        top = path.split(".")[0].split("[")[0] if isinstance(document, dict) else ""
        where = path if len(path) <= 80 else path[:80] + "…"
        message = f"The JSON document is nested more than {MAX_DEPTH} levels deep (at {where or 'the top'})."
        raise PortalError(message, status=status.HTTP_400_BAD_REQUEST, code="parse_error",
                          fields=[field(top, message, "too_deep")])
    return document


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; use a number or a string")


class BoundedJSONParser(JSONParser):
    """JSON of at most MAX_BODY_BYTES and MAX_DEPTH levels; anything else is a 400 or 413, never a 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        body = read_limited(stream, parser_context)
        return parse_bounded_json(body, (parser_context or {}).get("encoding") or "utf-8")
