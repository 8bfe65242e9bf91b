"""Request middleware of the project: the Permissions-Policy header, the health probe, and 503 + Retry-After
(not a 500) when the database cannot answer."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 2
MESSAGE = "The database is busy or unavailable; nothing was changed. Retry in a few seconds."


def database_unavailable_response(request: HttpRequest, exc: Exception) -> HttpResponse:
    """Return the 503 for ``exc`` (JSON in the API's error shape under /api/, an HTML page elsewhere)."""
    logger.warning("database unavailable for %s %s: %s", request.method, request.path, exc)
    if request.path.startswith("/api/"):
        body = {"error": {"code": "unavailable", "message": MESSAGE, "fields": [], "status": 503}}
        response: HttpResponse = JsonResponse(body, status=503)
    else:
        html = render_to_string("503.html", {"retry_after": RETRY_AFTER_SECONDS})
        response = HttpResponse(html, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseUnavailableMiddleware:
    """Turn an ``OperationalError`` escaping a view (locked SQLite, PostgreSQL gone) into a 503 with Retry-After.

    SQLite waits up to its busy timeout for the write lock first (settings), so this is the rare remainder.
    """

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, OperationalError):
            return database_unavailable_response(request, exception)
        return None


class PermissionsPolicyMiddleware:
    """Add ``Permissions-Policy: settings.PERMISSIONS_POLICY`` to every response that has none."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.PERMISSIONS_POLICY and "Permissions-Policy" not in response:
            response["Permissions-Policy"] = settings.PERMISSIONS_POLICY
        return response


class HealthCheckMiddleware:
    """Answer ``GET /healthz`` (liveness), ``GET /readyz`` (readiness: the database answers) and ``GET /metrics``
    (Prometheus, bearer token) before the Host header is validated.

    The container health check runs inside the container and calls ``http://127.0.0.1:8000/healthz``, a host name
    production does not allow; the probe must pass without widening ``ALLOWED_HOSTS`` or turning DEBUG on.
    """

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in ("GET", "HEAD"):
            if request.path_info == "/healthz":
                return JsonResponse({"status": "ok"})
            if request.path_info == "/readyz":
                return _readiness()
            if request.path_info == "/metrics":
                # Prometheus scrapes the pod's address, which is no allowed host; the view checks its own token.
                # Reached through the URL map: shared infrastructure imports no module that reads the apps.
                from django.urls import resolve

                return resolve("/metrics").func(request)
        return self.get_response(request)


def _readiness() -> HttpResponse:
    """Return 200 when the database answers ``SELECT 1``, else 503: a replica that cannot read takes no traffic.

    ``/healthz`` (liveness) deliberately does not look at the database: an outage must not restart every web pod.
    """
    from django.db import DatabaseError, connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        logger.warning("readiness: database unavailable: %s", exc)
        response = JsonResponse({"status": "unavailable", "database": "unreachable"}, status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    return JsonResponse({"status": "ok", "database": "ok"})
