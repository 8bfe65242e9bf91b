"""Security headers on pages, the API and the API docs; no inline script or style anywhere (the CSP forbids it)."""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders

from runtimes.domain.manifest import new_runtime

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
PERMISSIONS = ("accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), microphone=(), "
               "payment=(), usb=(), browsing-topics=()")
HEADERS = {
    "Content-Security-Policy": CSP,
    "Permissions-Policy": PERMISSIONS,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}
INLINE = [
    (re.compile(r"<script(?![^>]*\ssrc=)[^>]*>", re.I), "an inline <script>"),
    (re.compile(r"<style[\s>]", re.I), "a <style> element"),
    (re.compile(r"\sstyle\s*=", re.I), "a style= attribute"),
    (re.compile(r"\son[a-z]+\s*=\s*[\"']", re.I), "an inline event handler"),
    (re.compile(r"https?://(?!127\.0\.0\.1|testserver|localhost)[^\s\"'<>]*\.(?:js|css)\b", re.I),
     "an asset from another site"),
]


def _assert_no_inline_code(html: str, where: str) -> None:
    for pattern, what in INLINE:
        match = pattern.search(html)
        assert match is None, f"{where} has {what}: {html[max(0, match.start() - 80):match.end() + 80]!r}"


@pytest.fixture
def policy(alice):
    from runtimes.services.policies import policy_create

    return policy_create(manifest=new_runtime("headers-demo"), author=alice, message="first")


PAGES = [
    "/login/",
    "/runtimes/",
    "/runtimes/new/",
    "/runtimes/import/",
    "/runtimes/headers-demo/",
    "/runtimes/headers-demo/edit/",
    "/runtimes/headers-demo/history/",
    "/runtimes/headers-demo/delete/",
    "/preview/",
    "/jobs/",
    "/jobs/overview/",
    "/jobs/runtimes/headers-demo/jobs/",
    "/account/tokens/",
]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_sends_the_security_headers_and_has_no_inline_code(client, alice, policy, path):
    if path != "/login/":
        client.force_login(alice)

    response = client.get(path)

    assert response.status_code == 200, path
    for header, value in HEADERS.items():
        assert response[header] == value, (path, header)
    _assert_no_inline_code(response.content.decode(), path)


@pytest.mark.parametrize("path", ["/api/v1/runtimes/", "/api/v1/runtimes/headers-demo/", "/api/schema/"])
def test_the_api_sends_the_security_headers(client, bob, policy, path):
    client.force_login(bob)

    response = client.get(path, HTTP_ACCEPT="application/json" if "schema" not in path else "*/*")

    assert response.status_code == 200, path
    for header, value in HEADERS.items():
        assert response[header] == value, (path, header)


def test_an_error_page_sends_them_too(client, bob):
    client.force_login(bob)

    response = client.get("/runtimes/no-such-policy/")

    assert response.status_code == 404
    assert response["Content-Security-Policy"] == CSP
    assert response["Permissions-Policy"] == PERMISSIONS


def test_the_swagger_docs_are_self_hosted_and_start_without_inline_script(client, bob):
    client.force_login(bob)

    page = client.get("/api/docs/")
    script = client.get("/api/docs/?script=")

    assert page.status_code == 200
    html = page.content.decode()
    _assert_no_inline_code(html, "/api/docs/")
    assert "@latest" not in html and "cdn" not in html.lower()
    assets = re.findall(r'(?:src|href)="/static/([^"]+)"', html)
    assert {"drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js",
            "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css"} <= set(assets)
    assert all(finders.find(asset) for asset in assets), assets  # shipped with the portal: the docs work offline
    assert page["Content-Security-Policy"] == CSP
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in script.content.decode()
    assert '"validatorUrl": null' in script.content.decode() or "validatorUrl" in script.content.decode()


def test_the_redoc_page_is_self_hosted_and_relaxes_only_styles_and_its_worker(client, bob):
    client.force_login(bob)

    page = client.get("/api/redoc/")

    html = page.content.decode()
    assert page.status_code == 200
    assert "fonts.googleapis" not in html and "@latest" not in html
    assert "/static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js" in html
    assert finders.find("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js")
    _assert_no_inline_code(html, "/api/redoc/")
    assert page["Content-Security-Policy"] == CSP.replace(
        "style-src 'self'", "style-src 'self' 'unsafe-inline'") + "; worker-src blob:"


PRODUCTION_PROBE = """
import django, json
django.setup()
from django.test import Client
client = Client()
out = {}
for path in ("/login/", "/api/v1/runtimes/", "/api/schema/"):
    response = client.get(path, secure=True, HTTP_HOST="portal.example.com")
    out[path] = [response.status_code, dict(response.headers)]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_production_mode_sends_them_with_hsts_on_pages_and_api(tmp_path):
    env = {key: value for key, value in os.environ.items()
           if key not in ("DATABASE_URL", "DJANGO_DEBUG", "DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS")}
    env.update(TRAINER_PORTAL_MODE="production", DJANGO_SECRET_KEY=secrets.token_urlsafe(60),
               TRAINER_PORTAL_ENCRYPTION_KEY=base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
               DJANGO_ALLOWED_HOSTS="portal.example.com", DJANGO_SETTINGS_MODULE="trainer_portal.settings",
               DJANGO_STATIC_ROOT=str(tmp_path / "static"), DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    for command in (["manage.py", "collectstatic", "--noinput", "-v0"], ["manage.py", "migrate", "-v0"]):
        subprocess.run([sys.executable, *command], cwd=ROOT, env=env, check=True, capture_output=True, timeout=300)
    result = subprocess.run([sys.executable, "-c", PRODUCTION_PROBE], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr

    for path, (status, headers) in json.loads(result.stdout.splitlines()[-1]).items():
        assert status in (200, 302, 401, 403), (path, status)
        for header, value in HEADERS.items():
            assert headers[header] == value, (path, header)
        assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload", path
