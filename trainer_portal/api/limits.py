"""Refuse oversized API request bodies before anything reads them: 413 with the API's error body.

Checked on the declared Content-Length, so the answer is the same whatever else is wrong with the request (its
media type, its method): a client learns first that it must send less. Bodies without a length are bounded by the
parsers (`trainer_portal.api.parsers`).
"""

from __future__ import annotations

from django.http import JsonResponse

from .exceptions import error_body
from .parsers import MAX_BODY_BYTES, too_large

API_PREFIX = "/api/"


class ApiBodyLimitMiddleware:
    """Answer 413 to any /api/ request whose Content-Length is over MAX_BODY_BYTES."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(API_PREFIX):
            length = request.META.get("CONTENT_LENGTH") or ""
            if length.isdigit() and int(length) > MAX_BODY_BYTES:
                error = too_large(int(length))
                body = error_body(status=error.status, code=error.code, message=error.message, fields=error.fields)
                return JsonResponse(body, status=error.status)
        return self.get_response(request)
