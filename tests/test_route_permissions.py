"""Every page and endpoint checks who is asking: an authorisation sweep over the whole URL map.

Walks every route the project serves, fills its path parameters, and calls it with GET and POST as an anonymous
user and as charlie (logged in, no portal role). Nothing may answer 2xx or 5xx; anonymous users are sent to the
login page (HTML) or get 401/403 (API), charlie gets 403. The few public routes are listed with the reason.
"""

from __future__ import annotations

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db

# Public on purpose: logging in needs no login; the probe serves container health checks; the token endpoint
# authenticates with the password in its body; Django's admin has its own staff login; the favicon is a static file
# (browsers ask for it on the login page too); the single sign-on flow (oidc/) starts before anyone is logged in.
PUBLIC = re.compile(r"^(login/|logout/|oidc/|healthz|favicon\.ico|api/v1/auth/token/|admin/)")


def _routes(resolver: URLResolver | None = None, prefix: str = "") -> list[str]:
    """Return every concrete route of the URL map, with path converters filled in."""
    resolver = resolver or get_resolver()
    routes: list[str] = []
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            routes.extend(_routes(pattern, route))
        elif isinstance(pattern, URLPattern):
            route = re.sub(r"<int:\w+>", "1", route)
            route = re.sub(r"<(?:str:)?\w+>", "some-name", route)
            routes.append(route.lstrip("^").rstrip("$").replace("\\Z", ""))
    return sorted({r for r in routes if not PUBLIC.match(r) and "(?P" not in r})


ROUTES = _routes()


def test_the_sweep_covers_the_portals_pages_and_api():
    assert len(ROUTES) > 40
    for expected in ("runtimes/", "runtimes/some-name/edit/", "preview/", "cluster/", "api/v1/runtimes/",
                     "api/v1/runtimes/some-name/sync/", "api/v1/preview/", "api/schema/",
                     "api/v1/trainjobs/", "api/v1/trainjobs/summary/", "api/v1/trainjobs/some-name/some-name/",
                     "jobs/", "jobs/live/", "jobs/overview/", "jobs/grants/", "jobs/grants/1/delete/",
                     "jobs/runtimes/some-name/jobs/", "jobs/some-name/some-name/", "jobs/some-name/some-name/live/"):
        assert expected in ROUTES


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("method", ["get", "post"])
def test_anonymous_users_are_refused(client, route, method):
    response = getattr(client, method)("/" + route)

    if response.status_code == 302:
        assert response["Location"].startswith("/login/"), response["Location"]
    else:
        assert response.status_code in (401, 403, 405), (route, response.status_code)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("method", ["get", "post"])
def test_users_without_a_role_are_refused(client, charlie, route, method):
    client.force_login(charlie)

    response = getattr(client, method)("/" + route)

    if route == "" and response.status_code == 302:  # the home page only redirects to the (checked) policy list
        assert response["Location"] == "/runtimes/"
    else:
        assert response.status_code in (403, 405), (route, response.status_code)
