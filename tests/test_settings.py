"""Settings: production mode passes `manage.py check --deploy`; the embedded defaults need no external service."""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Variables that would leak the caller's configuration into the child process.
ENV_TO_DROP = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "DJANGO_DEBUG",
    "DJANGO_SECRET_KEY",
    "DJANGO_ALLOWED_HOSTS",
    "TRAINER_PORTAL_MODE",
    "DJANGO_SECURE_SSL_REDIRECT",
    "DJANGO_SECURE_HSTS_SECONDS",
)


def run_python(args: list[str], **env: str) -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items() if key not in ENV_TO_DROP}
    clean["DJANGO_SETTINGS_MODULE"] = "trainer_portal.settings"
    clean.update(env)
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120, check=False
    )


def test_production_settings_pass_the_deploy_checks():
    result = run_python(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        TRAINER_PORTAL_MODE="production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(60),
        DJANGO_ALLOWED_HOSTS="portal.example.com",
        TRAINER_PORTAL_ENCRYPTION_KEY=base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_mode_refuses_to_start_without_a_secret_key():
    result = run_python(["manage.py", "check"], TRAINER_PORTAL_MODE="production")

    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_embedded_defaults_use_sqlite_and_debug():
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.DEBUG, s.CELERY_BROKER_URL.split(':')[0])"
    )

    result = run_python(["-c", code])

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", "True", "atomicfs"]


@pytest.mark.parametrize("mode", ["staging", "Production", "dev"])
def test_an_unknown_mode_is_refused(mode):
    result = run_python(["manage.py", "check"], TRAINER_PORTAL_MODE=mode)

    assert result.returncode != 0
    assert "TRAINER_PORTAL_MODE" in result.stderr
