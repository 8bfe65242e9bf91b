"""Real portal processes for tests: a migrated SQLite file database they share, ``manage.py`` commands and web
servers (``runserver --noreload``) on free ports, each with its own ``TRAINER_PORTAL_VAR_DIR``."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_TEMPLATE: dict[str, Path] = {}


def portal_env(database: Path, var_dir: Path, **extra: str) -> dict[str, str]:
    """Return the environment of a portal process on the SQLite file ``database`` with its own ``var_dir``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "trainer_portal.settings",
           "DATABASE_URL": f"sqlite:///{database}", "TRAINER_PORTAL_VAR_DIR": str(var_dir), "LOG_LEVEL": "WARNING",
           **extra}
    env.pop("DJANGO_CACHE_URL", None)
    return env


def migrated_database(directory: Path) -> Path:
    """Return a freshly migrated SQLite database file in ``directory`` (copied from one migrated per session)."""
    template = _TEMPLATE.get("db")
    if template is None:
        folder = Path(tempfile.mkdtemp(prefix="portal-db-"))
        template = folder / "template.sqlite3"
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, check=True,
                       env=portal_env(template, folder / "var"), capture_output=True, timeout=300)
        _TEMPLATE["db"] = template
    target = directory / "portal.sqlite3"
    shutil.copyfile(template, target)
    return target


def manage(database: Path, var_dir: Path, *args: str, timeout: float = 120, **extra: str):
    """Run ``manage.py ARGS`` on ``database`` and return the CompletedProcess (check=False)."""
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=portal_env(database, var_dir, **extra),
                          capture_output=True, text=True, timeout=timeout)


def query(database: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Return the rows of ``sql`` on the SQLite file (read straight from the file, as a third process would)."""
    connection = sqlite3.connect(database, timeout=20)
    try:
        return connection.execute(sql, params).fetchall()
    finally:
        connection.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def web_server(database: Path, var_dir: Path, **extra: str):
    """Run ``manage.py runserver --noreload`` on a free port; yield its base URL; stop it on the way out."""
    for folder in ("broker", "broker-control"):  # the file broker publishes into folders the worker made
        (var_dir / folder).mkdir(parents=True, exist_ok=True)
    port = free_port()
    process = subprocess.Popen([sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
                               cwd=ROOT, env=portal_env(database, var_dir, **extra), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"runserver exited: {process.stderr.read()}")
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=2).close()
                break
            except urllib.error.HTTPError:
                break  # it answers
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("runserver did not answer in 60 s") from None
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
