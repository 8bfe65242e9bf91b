"""The probes the manifests and compose use: /readyz follows the database, process_alive follows the process's file."""

from __future__ import annotations

import os
import time

import pytest
from django.core.management import CommandError, call_command

from trainer_portal import liveness


@pytest.fixture
def alive_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINER_PORTAL_ALIVE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.django_db
def test_readyz_answers_from_the_database_without_a_login_or_an_allowed_host(client, settings):
    settings.ALLOWED_HOSTS = ["portal.example.com"]
    response = client.get("/readyz", HTTP_HOST="10.0.0.7:8000")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


def test_readyz_is_503_when_the_database_cannot_answer(client, django_db_blocker):
    """A real connection failure: the connection is pointed at a database that is not there, then restored."""
    from django.db import connection

    saved = dict(connection.settings_dict)
    with django_db_blocker.unblock():
        connection.close()
        if connection.vendor == "sqlite":
            connection.settings_dict["NAME"] = "/nonexistent-folder/portal.sqlite3"
        else:
            connection.settings_dict.update(HOST="127.0.0.1", PORT="1")
        try:
            response = client.get("/readyz")
        finally:
            connection.close()
            connection.settings_dict.clear()
            connection.settings_dict.update(saved)
    assert response.status_code == 503
    assert response.json()["database"] == "unreachable"
    assert response["Retry-After"]


def test_process_alive_fails_before_the_first_sign_of_life(alive_dir):
    with pytest.raises(CommandError, match="no sign of life"):
        call_command("process_alive", "cluster-watch", "--max-age", "60")


def test_process_alive_follows_the_age_of_the_last_touch(alive_dir, capsys):
    liveness.touch("worker")
    call_command("process_alive", "worker", "--max-age", "60")
    assert "alive" in capsys.readouterr().out
    past = time.time() - 120
    os.utime(liveness.alive_path("worker"), (past, past))
    with pytest.raises(CommandError, match="wedged"):
        call_command("process_alive", "worker", "--max-age", "60")


def test_a_worker_heartbeat_touches_the_file_even_when_the_database_is_down(alive_dir):
    from trainer_portal.health.signals import _record

    _record("worker", "host-1")  # no database access allowed here: the heartbeat row fails, the file must not
    assert liveness.age_seconds("worker") is not None


def test_a_watch_with_neither_progress_nor_attempts_is_wedged():
    """The watcher's liveness: a quiet or failing cluster keeps counting (alive); a stuck watch thread does not."""
    from types import SimpleNamespace

    from trainer_portal.cluster.informers import InformerHub
    from trainer_portal.kube.watch import WatchStats

    stats = WatchStats()
    kind = type("Kind", (), {"label": "pods"})()
    hub = SimpleNamespace(watchers={kind: SimpleNamespace(stats=stats)}, _liveness_marks={})
    start = stats.last_progress
    assert InformerHub.wedged_watches(hub, now=start + 1) == []
    assert InformerHub.wedged_watches(hub, now=start + 100) == []
    assert InformerHub.wedged_watches(hub, now=start + 200) == ["pods"]
    stats.errors += 1  # a failing cluster: the watch keeps trying, so the process is not restarted
    assert InformerHub.wedged_watches(hub, now=start + 201) == []
