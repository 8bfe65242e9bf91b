"""JSON rendering for every API response."""

from __future__ import annotations

import copy

from rest_framework.renderers import JSONRenderer


class SafeJSONRenderer(JSONRenderer):
    """JSONRenderer that cannot fail on unpaired surrogates.

    A `"\\ud800"` escape in a request decodes to a lone surrogate, which error messages and field paths may echo;
    UTF-8 cannot encode it, so such responses fall back to ASCII escapes (still valid JSON) instead of a 500.
    """

    def render(self, data, accepted_media_type=None, renderer_context=None):
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            ascii_only = copy.copy(self)
            ascii_only.ensure_ascii = True
            return JSONRenderer.render(ascii_only, data, accepted_media_type, renderer_context)
