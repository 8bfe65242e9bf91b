"""Production mode: refuses weak secrets and DEBUG; gunicorn's container health check passes; only the TLS proxy
is believed about https; the demo admin is a platform admin, not a superuser."""

from __future__ import annotations

import base64
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from trainer_portal.roles import is_platform_admin

ROOT = Path(__file__).resolve().parent.parent
STRONG = secrets.token_urlsafe(60)
FERNET_KEY = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
DROP = ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_DEBUG", "DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS",
        "TRAINER_PORTAL_ENCRYPTION_KEY",
        "TRAINER_PORTAL_MODE", "DJANGO_BEHIND_TLS_PROXY", "DJANGO_CACHE_URL", "DJANGO_SETTINGS_MODULE")


def _env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in DROP}
    env.update(DJANGO_SETTINGS_MODULE="trainer_portal.settings", TRAINER_PORTAL_MODE="production",
               DJANGO_ALLOWED_HOSTS="portal.example.com", DJANGO_SECRET_KEY=STRONG,
               TRAINER_PORTAL_ENCRYPTION_KEY=FERNET_KEY)
    env.update(extra)
    return env


def _check(**extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=_env(**extra), capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize("key", [
    "change-me-to-50-random-characters",
    "django-insecure-" + "k" * 50,
    "short-but-random-Xy7",
    "a" * 64,
    "build-only-not-secret",
    "embedded-insecure-key-do-not-use-in-production-" + "x" * 16,
])
def test_production_refuses_a_weak_or_public_secret_key(key):
    result = _check(DJANGO_SECRET_KEY=key)

    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is refused in production mode" in result.stderr


@pytest.mark.parametrize("password", ["portal", "change-me", "postgres"])
def test_production_refuses_a_published_default_database_password(password):
    result = _check(DATABASE_URL=f"postgres://portal:{password}@db.example.com:5432/portal")

    assert result.returncode != 0
    assert "DATABASE_URL is refused in production mode" in result.stderr


def test_production_refuses_debug():
    result = _check(DJANGO_DEBUG="1")

    assert result.returncode != 0
    assert "DJANGO_DEBUG must be off in production mode" in result.stderr


@pytest.mark.parametrize("key", ["", "change-me", "too-short-" + "x" * 20, FERNET_KEY + ",not-a-key"],
                         ids=["empty", "placeholder", "too-short", "valid-then-invalid"])  # stable ids (pytest-xdist)
def test_production_refuses_a_missing_or_malformed_encryption_key(key):
    result = _check(TRAINER_PORTAL_ENCRYPTION_KEY=key)

    assert result.returncode != 0
    assert "TRAINER_PORTAL_ENCRYPTION_KEY is refused in production mode" in result.stderr


def test_production_accepts_rotated_encryption_keys():
    rotated = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
    assert _check(TRAINER_PORTAL_ENCRYPTION_KEY=f"{rotated},{FERNET_KEY}").returncode == 0


def test_production_accepts_a_strong_key():
    result = _check()

    assert result.returncode == 0, result.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def gunicorn(tmp_path):
    """The compose `web` command in production mode, on a free port."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    web = compose["services"]["web"]
    port = _free_port()
    command = [part.replace("0.0.0.0:8000", f"127.0.0.1:{port}") for part in web["command"]]
    command[0] = str(Path(sys.executable).parent / command[0])
    env = _env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", DJANGO_STATIC_ROOT=str(tmp_path / "static"),
               DJANGO_BEHIND_TLS_PROXY=web["environment"]["DJANGO_BEHIND_TLS_PROXY"])
    log = (tmp_path / "gunicorn.log").open("wb")
    process = subprocess.Popen([*command[:-4], "--workers", "1"], cwd=ROOT, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "gunicorn.log").read_text()
            time.sleep(0.2)
    yield port, web
    process.terminate()
    process.wait(20)
    log.close()


def _status(url: str, headers: dict | None = None) -> tuple[int, str]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(urllib.request.Request(url, headers=headers or {}),
                                                          timeout=10) as response:
            return response.status, response.headers.get("Location", "")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Location", "")


@pytest.mark.slow
def test_the_compose_web_health_check_passes_in_production_mode(gunicorn):
    port, web = gunicorn
    test = web["healthcheck"]["test"]
    assert test[0] == "CMD"
    probe = [arg.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for arg in test[1:]]
    probe[0] = sys.executable

    # As compose does (retries: 5): the first request may meet a worker still loading the application.
    for _attempt in range(web["healthcheck"].get("retries", 1)):
        result = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
        if result.returncode == 0:
            break

    assert result.returncode == 0, result.stderr
    # The probe is the only thing that bypasses the checks: other paths on that host are still refused.
    assert _status(f"http://127.0.0.1:{port}/login/")[0] == 400


@pytest.mark.slow
def test_https_is_believed_from_the_proxy_header_only_when_behind_the_proxy(gunicorn):
    port, _ = gunicorn
    host = {"Host": "portal.example.com"}

    plain = _status(f"http://127.0.0.1:{port}/api/v1/runtimes/", host)
    proxied = _status(f"http://127.0.0.1:{port}/api/v1/runtimes/", {**host, "X-Forwarded-Proto": "https"})

    assert plain == (301, "https://portal.example.com/api/v1/runtimes/")
    assert proxied[0] == 401  # served (and asked who is calling), not redirected


def test_without_the_proxy_a_client_cannot_claim_https():
    code = ("import django; django.setup(); from django.test import Client; "
            "r = Client().get('/login/', HTTP_HOST='portal.example.com', HTTP_X_FORWARDED_PROTO='https'); "
            "print(r.status_code)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True,
                            timeout=120, check=False)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "301"


@pytest.mark.django_db
def test_the_demo_admin_is_a_platform_admin_and_not_a_superuser(settings, tmp_path, django_user_model):
    settings.VAR_DIR = tmp_path

    call_command("portal_demo_setup", stdout=open(os.devnull, "w"))  # noqa: SIM115

    admin = django_user_model.objects.get(username="admin")
    assert (admin.is_superuser, admin.is_staff) == (False, False)
    assert is_platform_admin(admin)


def test_the_compose_file_puts_a_tls_proxy_in_front_and_publishes_no_gunicorn_port():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]

    assert "ports" not in services["web"]
    assert sorted(services["proxy"]["ports"]) == ["443:443", "80:80"]
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in services["proxy"]["volumes"]
    assert "reverse_proxy web:8000" in (ROOT / "deploy" / "Caddyfile").read_text()
    assert services["web"]["environment"]["DJANGO_BEHIND_TLS_PROXY"] == "1"
    assert "DJANGO_BEHIND_TLS_PROXY" not in services["worker"]["environment"]
