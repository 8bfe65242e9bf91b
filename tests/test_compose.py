"""docker-compose.yml cannot run here (no Docker engine): check that it parses and that what it runs exists."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import pytest
import yaml
from django.core.management import get_commands
from django.urls import resolve

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _services() -> dict:
    return COMPOSE["services"]


def test_it_defines_the_services_with_healthchecks_for_every_long_running_one():
    services = _services()
    assert {"postgres", "redis", "web", "worker", "beat", "cluster-watch"} <= set(services)
    for name in ("postgres", "redis", "web", "worker", "beat", "cluster-watch"):
        assert services[name]["healthcheck"]["test"], name


@pytest.mark.parametrize("service", ["worker", "beat", "cluster-watch"])
def test_background_healthchecks_run_the_liveness_command(service):
    test = _services()[service]["healthcheck"]["test"]
    assert test[:4] == ["CMD", "python", "manage.py", "process_alive"]
    assert test[4] == service
    assert "process_alive" in get_commands()


@pytest.mark.parametrize("service", ["web", "worker", "beat", "migrate", "cluster-watch"])
def test_portal_services_run_read_only_without_capabilities_and_with_limits(service):
    spec = _services()[service]
    assert spec["read_only"] is True
    assert "/tmp" in spec["tmpfs"]
    assert spec["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in spec["security_opt"]
    assert spec["deploy"]["resources"]["limits"]["memory"]


def test_no_default_database_password():
    text = (ROOT / "docker-compose.yml").read_text()
    assert ":-portal}" not in text
    assert "${POSTGRES_PASSWORD:?" in _services()["postgres"]["environment"]["POSTGRES_PASSWORD"]


def test_it_keeps_data_in_named_volumes():
    assert {"postgres-data", "redis-data"} <= set(COMPOSE["volumes"])
    assert "postgres-data:/var/lib/postgresql/data" in _services()["postgres"]["volumes"]


@pytest.mark.parametrize("service", ["web", "worker", "beat", "migrate", "cluster-watch"])
def test_it_runs_the_portal_image_with_production_settings(service):
    spec = _services()[service]
    assert spec["build"] == "."
    assert spec["environment"]["TRAINER_PORTAL_MODE"] == "production"
    assert spec["environment"]["CELERY_BROKER_URL"].startswith("redis://redis:")
    assert spec["env_file"] == ".env"


def test_the_web_command_points_at_an_importable_wsgi_application():
    command = _services()["web"]["command"]
    assert command[0] == "gunicorn"
    module_name, attribute = command[1].split(":")
    assert callable(getattr(importlib.import_module(module_name), attribute))
    assert shutil.which("gunicorn", path=str(Path(__import__("sys").executable).parent))


@pytest.mark.parametrize("service", ["worker", "beat"])
def test_the_celery_commands_name_the_project_app(service):
    command = _services()[service]["command"]
    assert command[:3] == ["celery", "-A", "trainer_portal"]
    assert command[3] in {"worker", "beat"}
    from trainer_portal.celery import app

    assert app.main == "trainer_portal"


def test_the_migrate_command_exists():
    assert _services()["migrate"]["command"][:3] == ["python", "manage.py", "migrate"]
    assert "migrate" in get_commands()


def test_the_web_healthcheck_url_is_routed():
    test = " ".join(_services()["web"]["healthcheck"]["test"])
    assert "/healthz" in test
    assert resolve("/healthz").url_name == "healthz"


def test_the_env_example_lists_every_variable_compose_reads_from_env():
    example = (ROOT / ".env.example").read_text()
    for variable in ("DJANGO_SECRET_KEY", "TRAINER_PORTAL_ENCRYPTION_KEY", "POSTGRES_PASSWORD", "DJANGO_ALLOWED_HOSTS"):
        assert f"{variable}=" in example


def test_the_dockerfile_installs_the_pinned_runtime_requirements_only():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install -r requirements.txt" in dockerfile
    assert "requirements-dev" not in dockerfile
    assert "collectstatic" in dockerfile
    assert "USER 10001" in dockerfile
    runtime = {line.split("==")[0].lower() for line in (ROOT / "requirements.txt").read_text().splitlines()
               if "==" in line}
    for tool in ("pytest", "playwright", "schemathesis", "ruff", "import-linter", "hypothesis", "pytest-django"):
        assert tool not in runtime, f"{tool} is a development tool, not a runtime dependency"
    assert {"django", "celery", "kubernetes", "gunicorn", "psycopg"} <= runtime
    assert "-r requirements.txt" in (ROOT / "requirements-dev.txt").read_text()


def test_the_image_leaves_out_tests_sandbox_and_local_state():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {"tests", "sandbox", "benchmarks", ".venv", ".git", "var", "db.sqlite3*", ".env"} <= ignored


def test_the_cluster_watcher_runs_an_existing_command_and_no_volume_is_shared_between_services():
    command = _services()["cluster-watch"]["command"]
    assert command[:3] == ["python", "manage.py", "cluster_watch"]
    assert "cluster_watch" in get_commands()
    assert "topology_watch" not in get_commands()
    # State lives in the database: web replicas and the watcher share no folder.
    assert "portal-var" not in COMPOSE["volumes"]
    for service in ("web", "cluster-watch"):
        assert not any("/app/var" in volume for volume in _services()[service]["volumes"])
