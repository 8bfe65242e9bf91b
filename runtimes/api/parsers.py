"""Request parsers of the policy API: bounded JSON, JSON merge patch and YAML text bodies (1 MiB at most)."""

from __future__ import annotations

from rest_framework.parsers import BaseParser

from trainer_portal.api.parsers import BoundedJSONParser, malformed, read_limited

YAML_MEDIA_TYPES = ("application/yaml", "text/yaml", "application/x-yaml", "text/x-yaml")


class LimitedJSONParser(BoundedJSONParser):
    """JSON bodies of the policy API (bounded in size and depth, see `trainer_portal.api.parsers`)."""


class MergePatchParser(LimitedJSONParser):
    """`application/merge-patch+json`: the body is the merge patch itself (RFC 7396)."""

    media_type = "application/merge-patch+json"


class YamlTextParser(BaseParser):
    """YAML bodies (`application/yaml`, `text/yaml`): returned as text; the domain loader parses it safely."""

    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None) -> str:
        body = read_limited(stream, parser_context)
        try:
            return body.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise malformed(f"The body is not valid UTF-8 (byte offset {exc.start}); send UTF-8 text.") from None


def _yaml_parser(media: str) -> type[YamlTextParser]:
    return type(f"YamlParser_{media.replace('/', '_').replace('-', '_')}", (YamlTextParser,), {"media_type": media})


YAML_PARSERS = [_yaml_parser(media) for media in YAML_MEDIA_TYPES]




