"""A real OpenID provider (oidc-provider, run with node) for the single sign-on tests.

``make test`` installs it (``npm ci`` in tests/sso); the provider listens on a free loopback port and knows one
client, whose redirect URIs point at the test's live server.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

# The browser fixtures (Debian chromium through Playwright) are shared with tests/browser.
from tests.browser.conftest import _portal_roles, browser, chromium_executable, page  # noqa: F401

HERE = Path(__file__).resolve().parent
CLIENT_ID = "trainer-portal"
CLIENT_SECRET = "test-only-client-secret-of-the-sso-tests"
ACCOUNTS = {
    "ada": {"groups": ["ml-platform", "team-a"]},
    "dora": {"groups": ["team-a", "researchers"]},
    "vik": {"groups": ["observers"]},
    "nobody": {"groups": ["marketing"]},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def oidc_provider(live_server, tmp_path):
    """Start the provider for ``live_server``; yield its issuer URL; stop it after the test."""
    node = shutil.which("node")
    if not node or not (HERE / "node_modules" / "oidc-provider").exists():
        message = "node and tests/sso/node_modules (make test installs them with npm ci) are needed"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    port = _free_port()
    client = {
        "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
        "redirect_uris": [f"{live_server.url}/oidc/callback/"],
        "post_logout_redirect_uris": [f"{live_server.url}/login/"],
    }
    env = {**os.environ, "OIDC_PORT": str(port), "OIDC_CLIENT": json.dumps(client),
           "OIDC_ACCOUNTS": json.dumps(ACCOUNTS), "NODE_NO_WARNINGS": "1"}
    log = (tmp_path / "provider.log").open("w+")
    process = subprocess.Popen([node, str(HERE / "provider.mjs")], cwd=HERE, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    issuer = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            log.seek(0)
            if f"ready {issuer}" in log.read():
                break
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"the OpenID provider did not start:\n{log.read()}")
            time.sleep(0.1)
        yield issuer
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


@pytest.fixture
def sso(settings, oidc_provider):
    """Turn single sign-on on for the live server, against the test provider; return the settings object."""
    from trainer_portal.sso import config, discovery

    discovery.forget()
    settings.TRAINER_PORTAL_SSO = config.SsoSettings(
        issuer=oidc_provider, client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
        admin_groups=frozenset({"ml-platform"}), viewer_groups=frozenset({"observers"}),
        data_scientist_groups=frozenset({"researchers"}), provider_name="Test IdP", session_seconds=900,
    )
    settings.SECURE_CSP = {**settings.SECURE_CSP,
                           "form-action": [*settings.SECURE_CSP["form-action"], *settings.TRAINER_PORTAL_SSO.origins()]}
    yield settings.TRAINER_PORTAL_SSO
    discovery.forget()
