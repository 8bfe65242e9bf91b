"""Every route × every role against the one role → capability table (``trainer_portal.roles``).

Walks the URL resolvers, fills each route's parameters with real sample objects (a policy, TrainJobs in a granted
and an ungranted namespace, a grant, a token, a user), reads the capability each view declares (the mixin's and the
decorator's attributes, the DRF permission class) and calls it as anonymous, "none", data scientist, viewer and
platform admin:

* a role without the capability gets 403 (anonymous: the login page for pages, 401/403 for the API);
* a role with it never gets 401/403 and never 500 (a missing sample answers 404, a page's form may answer 400);
* a data scientist gets 404 for a job of a namespace not granted to them, the viewer 200;
* an empty POST by the platform admin (who may write everywhere) is refused as bad input or done, never a 500
  (502/503/504 are a cluster's answer);
* every link a role is shown (the navigation and every page it can open) answers 2xx/3xx for that role, and the
  navigation shows exactly the sections the table grants.

A route whose view declares no capability fails the sweep unless it is listed in PUBLIC with the reason.
"""

from __future__ import annotations

import re
import uuid
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from runtimes.services import policies as policy_services
from tests.jobs.factories import grant, tracked_job
from tests.runtimes.test_services import runtime
from trainer_portal import roles
from trainer_portal.permissions import HasCapability
from trainer_portal.tokens.services import token_issue

pytestmark = pytest.mark.django_db

# Public on purpose: logging in needs no login; the probe serves container health checks; the token endpoint
# authenticates with the password in its body; Django's admin has its own staff login; the favicon is a static file
# (browsers ask for it on the login page too); the single sign-on flow (oidc/) starts before anyone is logged in;
# home only sends a signed-in user to the first section they may open; /metrics checks its own bearer token
# (tests/monitoring).
PUBLIC = re.compile(r"^(login/|logout/|oidc/|healthz|metrics|favicon\.ico|api/v1/auth/token/|admin/|$)")
PERSONAS = ("anonymous", roles.NONE, roles.DATA_SCIENTIST, roles.VIEWER, roles.PLATFORM_ADMIN)
SAMPLE_POLICY = "torch-gang"


def _routes(resolver: URLResolver | None = None, prefix: str = "") -> list[str]:
    """Return every route of the URL map as a pattern string (``runtimes/<str:name>/``), regex routes excluded."""
    resolver = resolver or get_resolver()
    routes: list[str] = []
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            routes.extend(_routes(pattern, route))
        elif isinstance(pattern, URLPattern):
            routes.append(route.lstrip("^").rstrip("$").replace("\\Z", ""))
    return sorted({r for r in routes if not PUBLIC.match(r) and "(?P" not in r})


ROUTES = _routes()


@pytest.fixture
def world(django_user_model):
    """One user per role, a policy, TrainJobs in team-a (granted to the data scientist) and team-b, a grant, a
    token per user; returns the personas and the sample path parameters."""
    users = {}
    for role in PERSONAS[1:]:
        user = django_user_model.objects.create_user(f"u-{role}", password="pw-long-enough-1")
        if role != roles.NONE:
            user.groups.add(Group.objects.get_or_create(name=role)[0])
        users[role] = user
    the_grant = grant("team-a-ml", "team-a")
    users[roles.DATA_SCIENTIST].groups.add(the_grant.group)
    policy_services.policy_create(manifest=runtime(), author=users[roles.PLATFORM_ADMIN], source="api")
    tracked_job("team-a", "job-a", runtime=SAMPLE_POLICY)
    tracked_job("team-b", "job-b", runtime=SAMPLE_POLICY)
    tokens = {role: token_issue(user=user, name="sweep").token for role, user in users.items()}
    return {"users": users, "grant": the_grant, "tokens": tokens}


def _fill(route: str, world: dict, persona: str, *, namespace: str = "team-a") -> str:
    """Return ``route`` with its parameters filled with the sample objects (a persona's own token and user)."""
    owner = world["users"].get(persona) or world["users"][roles.PLATFORM_ADMIN]
    token = world["tokens"].get(persona) or world["tokens"][roles.PLATFORM_ADMIN]
    samples = {"name": SAMPLE_POLICY, "namespace": namespace, "number": "1", "pk": str(world["grant"].pk),
               "token_id": str(token.pk), "user_id": str(owner.pk), "batch_id": uuid.uuid4().hex,
               "job_id": uuid.uuid4().hex}
    if "<str:namespace>/<str:name>" in route:
        samples["name"] = "job-a" if namespace == "team-a" else "job-b"

    def value(match: re.Match) -> str:
        converter, param = match.group(1) or "str", match.group(2)
        return samples.get(param, "1" if converter == "int" else "some-name")

    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", value, route)


def _declared(path: str, method: str) -> str | None:
    """Return the capability the view of ``path`` declares for ``method``, or None when it declares none."""
    func = resolve(path).func
    view_class = getattr(func, "view_class", None)
    safe = method.upper() in ("GET", "HEAD", "OPTIONS")
    if view_class is not None and issubclass(view_class, APIView):
        initkwargs = getattr(func, "view_initkwargs", None) or {}
        classes = initkwargs.get("permission_classes") or view_class.permission_classes
        declared = [c for c in (classes or api_settings.DEFAULT_PERMISSION_CLASSES)
                    if isinstance(c, type) and issubclass(c, HasCapability) and c.read_capability]
        if len(declared) != 1:
            return None
        return declared[0].read_capability if safe else declared[0].write_capability
    holder = view_class or func
    read = getattr(holder, "capability", None) or None
    write = getattr(holder, "write_capability", None)
    return read if safe else (write or read)


def _client(world: dict, persona: str) -> Client:
    client = Client()
    if persona != "anonymous":
        client.force_login(world["users"][persona])
    return client


def _allowed(persona: str, capability: str) -> bool:
    return persona != "anonymous" and capability in roles.ROLE_CAPABILITIES[persona]


def test_the_sweep_covers_the_portals_pages_and_api():
    assert len(ROUTES) > 50
    for expected in ("runtimes/", "runtimes/<str:name>/edit/", "preview/", "cluster/", "api/v1/runtimes/",
                     "api/v1/runtimes/<str:name>/sync/", "api/v1/preview/", "api/schema/", "api/v1/trainjobs/",
                     "jobs/", "jobs/grants/", "jobs/<str:namespace>/<str:name>/", "account/tokens/",
                     "api/v1/auth/tokens/", "api/v1/users/", "users/", "users/<int:user_id>/",
                     "users/<int:user_id>/password/"):
        assert expected in ROUTES, expected


@pytest.mark.parametrize("route", ROUTES)
def test_every_route_declares_a_capability_of_the_table(route, world):
    path = _fill(route, world, roles.PLATFORM_ADMIN)
    for method in ("get", "post"):
        assert _declared(path, method) in roles.CAPABILITIES, (route, method)


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("route", ROUTES)
def test_every_route_answers_what_the_table_says(route, persona, world):
    client = _client(world, persona)
    path = _fill(route, world, persona)
    api = path.startswith("/api/")
    for method in ("get", "post"):
        capability = _declared(path, method)
        if method == "post" and _allowed(persona, capability):
            continue  # writes by a role that may write change data: the apps' own tests cover them
        response = getattr(client, method)(path)
        status = response.status_code
        where = (method, path, persona, capability, status)
        if status == 405:  # the route does not serve this method at all (refused before any data is read)
            continue
        if _allowed(persona, capability):
            assert status not in (401, 403), where
            assert status < 500, where
            if status in (301, 302, 303):
                assert not response["Location"].startswith("/login/"), where
        elif persona == "anonymous" and not api:
            assert status == 302 and response["Location"].startswith("/login/"), where
        elif persona == "anonymous":
            assert status in (401, 403), where
        else:
            assert status == 403, where


@pytest.mark.parametrize("route", [r for r in ROUTES if "<str:namespace>/<str:name>" in r])
def test_a_namespace_not_granted_answers_404_to_a_data_scientist(route, world):
    other = _fill(route, world, roles.DATA_SCIENTIST, namespace="team-b")
    own = _fill(route, world, roles.DATA_SCIENTIST, namespace="team-a")

    assert _client(world, roles.DATA_SCIENTIST).get(other).status_code == 404
    assert _client(world, roles.DATA_SCIENTIST).get(own).status_code == 200
    assert _client(world, roles.VIEWER).get(other).status_code == 200


class _Links(HTMLParser):
    """Collects ``<a href>`` targets, and separately those inside ``<nav aria-label="Main">`` and the user box."""

    def __init__(self):
        super().__init__()
        self.links: set[str] = set()
        self.nav: set[str] = set()
        self._in_nav = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("nav", "div") and (attrs.get("aria-label") == "Main" or attrs.get("class") == "userbox"):
            self._in_nav = 1
        elif self._in_nav and tag in ("nav", "div"):
            self._in_nav += 1
        if tag == "a" and attrs.get("href"):
            self.links.add(attrs["href"])
            if self._in_nav:
                self.nav.add(attrs["href"])

    def handle_endtag(self, tag):
        if self._in_nav and tag in ("nav", "div"):
            self._in_nav -= 1


def _internal(href: str) -> str | None:
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path.startswith("/") or parts.path.startswith("/static/"):
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "")


# The navigation's sections and the capability each needs.
NAV = {"/runtimes/": roles.POLICIES_VIEW, "/preview/": roles.PREVIEW_RUN, "/jobs/": roles.JOBS_VIEW,
       "/cluster/": roles.CLUSTER_VIEW, "/users/": roles.USERS_MANAGE, "/api/docs/": roles.API_DOCS,
       "/account/tokens/": roles.TOKENS_OWN}


@pytest.mark.parametrize("persona", PERSONAS[1:])
def test_every_link_a_role_is_shown_opens(persona, world):
    client = _client(world, persona)
    home = client.get("/", follow=True)
    assert home.status_code == 200
    pages = {"/"}
    for route in ROUTES:
        path = _fill(route, world, persona)
        if _allowed(persona, _declared(path, "get")) and not path.startswith("/api/"):
            pages.add(path)
    links: set[str] = set()
    nav: set[str] | None = None
    for page in sorted(pages):
        response = client.get(page, follow=True)
        if response.status_code != 200 or not response["Content-Type"].startswith("text/html"):
            continue
        parser = _Links()
        parser.feed(response.content.decode())
        links |= {link for link in map(_internal, parser.links) if link}
        if nav is None:
            nav = {link for link in map(_internal, parser.nav) if link}
    assert nav is not None
    held = roles.ROLE_CAPABILITIES[persona]
    assert {link for link in nav if link in NAV} == {link for link, cap in NAV.items() if cap in held}, persona
    assert not any(link.startswith("/admin/") for link in links), persona
    broken = {}
    for link in sorted(links):
        status = client.get(link).status_code
        if not 200 <= status < 400:
            broken[link] = status
    assert not broken, (persona, broken)


def test_a_role_without_capabilities_lands_on_a_page_that_says_so(world):
    response = _client(world, roles.NONE).get("/")

    assert response.status_code == 200
    assert b"no portal role" in response.content


@pytest.mark.parametrize("persona, target", [(roles.DATA_SCIENTIST, "/jobs/"), (roles.VIEWER, "/runtimes/"),
                                            (roles.PLATFORM_ADMIN, "/runtimes/")])
def test_home_sends_each_role_to_its_first_section(persona, target, world):
    response = _client(world, persona).get("/")

    assert response.status_code == 302 and response["Location"] == target


@pytest.mark.parametrize("route", ROUTES)
def test_an_empty_write_by_a_role_that_may_write_is_never_a_500(route, world, settings):
    # A POST without a body (or a form) from the platform admin: refused as bad input, or done; never a 500.
    client = _client(world, roles.PLATFORM_ADMIN)
    path = _fill(route, world, roles.PLATFORM_ADMIN)

    response = client.post(path)

    assert response.status_code < 500 or response.status_code in (502, 503, 504), (path, response.status_code)
