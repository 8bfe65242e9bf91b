"""Request parsers of the policy API: size-capped JSON, JSON merge patch and YAML text bodies."""

from __future__ import annotations

import codecs
import json
from typing import Any

from rest_framework import exceptions, status
from rest_framework.parsers import BaseParser, JSONParser

from runtimes.domain.manifest import MAX_MANIFEST_BYTES
from trainer_portal.errors import PortalError

YAML_MEDIA_TYPES = ("application/yaml", "text/yaml", "application/x-yaml", "text/x-yaml")


def _read_limited(stream, parser_context) -> bytes:
    """Return the request body, refusing (413) anything over MAX_MANIFEST_BYTES before reading it all."""
    request = (parser_context or {}).get("request")
    length = request.META.get("CONTENT_LENGTH") if request is not None else None
    if length and str(length).isdigit() and int(length) > MAX_MANIFEST_BYTES:
        raise _too_large(int(length))
    body = stream.read(MAX_MANIFEST_BYTES + 1) if stream is not None else b""
    if len(body) > MAX_MANIFEST_BYTES:
        raise _too_large(len(body))
    return body


def _too_large(size: int) -> PortalError:
    return PortalError(
        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        code="too_large",
        message=f"The request body is {size} bytes; the limit is {MAX_MANIFEST_BYTES} bytes (1 MiB). "
        "Split the input into smaller requests.",
    )


class LimitedJSONParser(JSONParser):
    """JSON, at most 1 MiB; syntax errors and absurd nesting become 400 (never 500)."""

    def parse(self, stream, media_type=None, parser_context=None):
        body = _read_limited(stream, parser_context)
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            text = codecs.decode(body, encoding)
            return json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - the document is nested too deeply.")
        except (ValueError, LookupError) as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}")


class MergePatchParser(LimitedJSONParser):
    """`application/merge-patch+json`: the body is the merge patch itself (RFC 7396)."""

    media_type = "application/merge-patch+json"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; use a number or a string")


class YamlTextParser(BaseParser):
    """YAML bodies (`application/yaml`, `text/yaml`): returned as text; the domain loader parses it safely."""

    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None) -> str:
        body = _read_limited(stream, parser_context)
        try:
            return body.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError(f"The body is not valid UTF-8 (byte offset {exc.start}); send UTF-8 text.")


def _yaml_parser(media: str) -> type[YamlTextParser]:
    return type(f"YamlParser_{media.replace('/', '_').replace('-', '_')}", (YamlTextParser,), {"media_type": media})


YAML_PARSERS = [_yaml_parser(media) for media in YAML_MEDIA_TYPES]




