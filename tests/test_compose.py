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


def test_it_defines_the_five_services_with_healthchecks_for_the_long_running_ones():
    services = _services()
    assert {"postgres", "redis", "web", "worker", "beat"} <= set(services)
    for name in ("postgres", "redis", "web", "worker"):
        assert services[name]["healthcheck"]["test"], name


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


def test_the_dockerfile_installs_the_pinned_requirements():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install -r requirements.txt" in dockerfile
    assert "collectstatic" in dockerfile


def test_the_cluster_watcher_runs_an_existing_command_and_shares_the_snapshot_volume():
    command = _services()["cluster-watch"]["command"]
    assert command[:3] == ["python", "manage.py", "cluster_watch"]
    assert "cluster_watch" in get_commands()
    assert "topology_watch" not in get_commands()
    for service in ("web", "cluster-watch"):
        assert "portal-var:/app/var" in _services()[service]["volumes"]
