"""Concurrent writes on SQLite through a real server process: no "database is locked" 500s, no lost update.

The embedded stack serves every request from one threaded server over one SQLite file. Deferred transactions
that read and then write could not upgrade their lock while another writer held it and failed at once with
"database is locked" (a 500). Pairs of same-version writes are sent at the same moment, several pairs at a time.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from runtimes.domain.manifest import new_runtime

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
POLICIES = 6
ROUNDS = 8  # pairs per policy; the policies' pairs run at the same time

SETUP = """
from django.contrib.auth.models import Group, User
from trainer_portal.tokens.services import token_issue
user = User.objects.create_user("alice", password="alice-password-1")
user.groups.add(Group.objects.get(name="platform-admin"))
print(token_issue(user=user, name="race").key)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, tmp_path: Path) -> None:
        self.port = _free_port()
        self.env = {
            **os.environ,
            "TRAINER_PORTAL_MODE": "embedded",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "TRAINER_PORTAL_VAR_DIR": str(tmp_path / "var"),
            "LOG_LEVEL": "ERROR",
        }
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "-v0"], env=self.env, check=True, cwd=ROOT)
        self.token = subprocess.run([*manage, "shell", "-c", SETUP], env=self.env, check=True, cwd=ROOT,
                                    capture_output=True, text=True).stdout.split()[-1]
        self.log = (tmp_path / "server.log").open("wb")
        self.process = subprocess.Popen([*manage, "runserver", f"127.0.0.1:{self.port}", "--noreload"],
                                        env=self.env, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while self.request("GET", "/healthz")[0] != 200:
            assert time.monotonic() < deadline and self.process.poll() is None, "the server did not start"
            time.sleep(0.2)

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method, headers={
            "Authorization": f"Token {self.token}", "Content-Type": "application/json", "Accept": "application/json",
        })
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw or b"{}")
            except ValueError:
                return error.code, {"raw": raw[:300].decode(errors="replace")}
        except OSError:
            return 0, {}

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(20)
        self.log.close()


@pytest.fixture
def server(tmp_path):
    running = Server(tmp_path)
    yield running
    running.stop()


def _pair(server: Server, name: str, version: int, round_: int, statuses: list[int], bodies: list[dict]) -> None:
    barrier = threading.Barrier(2)

    def write(nodes: int) -> None:
        barrier.wait()
        status, body = server.request("PUT", f"/api/v1/runtimes/{name}/", {
            "manifest": new_runtime(name, num_nodes=nodes), "version": version, "message": f"round {round_}",
        })
        statuses.append(status)
        if status >= 500 or status == 0:
            bodies.append(body)

    threads = [threading.Thread(target=write, args=(2 + 2 * round_ + side,)) for side in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_it_answers_same_version_write_pairs_with_one_200_and_one_409_and_loses_no_update(server):
    names = [f"race-{index}" for index in range(POLICIES)]
    created = [server.request("POST", "/api/v1/runtimes/", {"manifest": new_runtime(name), "message": "new"})[0]
               for name in names]
    assert created == [201] * POLICIES
    statuses: list[int] = []
    failures: list[dict] = []
    for round_ in range(ROUNDS):
        versions = {name: server.request("GET", f"/api/v1/runtimes/{name}/")[1]["version"] for name in names}
        round_statuses: list[int] = []
        threads = [threading.Thread(target=_pair, args=(server, name, versions[name], round_, round_statuses,
                                                        failures)) for name in names]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        statuses += round_statuses

    counts = Counter(statuses)
    assert failures == [], f"{counts}: {failures[:3]}"
    assert counts == {200: POLICIES * ROUNDS, 409: POLICIES * ROUNDS}, counts
    # No lost update: every accepted write made a revision.
    for name in names:
        assert server.request("GET", f"/api/v1/runtimes/{name}/")[1]["version"] == 1 + ROUNDS


@pytest.fixture
def impatient_server(tmp_path, monkeypatch):
    # A half-second busy timeout, so a held write lock outlasts it quickly.
    monkeypatch.setenv("DATABASE_SQLITE_TIMEOUT", "0.5")
    running = Server(tmp_path)
    yield running, tmp_path / "db.sqlite3"
    running.stop()


def test_a_database_that_stays_locked_answers_503_with_retry_after_for_the_api_and_the_pages(impatient_server):
    server, database = impatient_server
    name = "locked"
    assert server.request("POST", "/api/v1/runtimes/", {"manifest": new_runtime(name), "message": "new"})[0] == 201
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another writer that does not let go
    try:
        request = urllib.request.Request(
            f"http://127.0.0.1:{server.port}/api/v1/runtimes/{name}/", method="PUT",
            data=json.dumps({"manifest": new_runtime(name, num_nodes=3), "version": 1}).encode(),
            headers={"Authorization": f"Token {server.token}", "Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as api:
            urllib.request.urlopen(request, timeout=30)
        # A page: logging in writes the session and last_login while the lock is held.
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        form = opener.open(f"http://127.0.0.1:{server.port}/login/", timeout=30).read().decode()
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
        with pytest.raises(urllib.error.HTTPError) as page:
            opener.open(urllib.request.Request(
                f"http://127.0.0.1:{server.port}/login/", method="POST",
                data=urllib.parse.urlencode({"username": "alice", "password": "alice-password-1",
                                             "csrfmiddlewaretoken": csrf}).encode(),
                headers={"Referer": f"http://127.0.0.1:{server.port}/login/"},
            ), timeout=30)
    finally:
        holder.execute("ROLLBACK")
        holder.close()

    assert api.value.code == 503
    assert api.value.headers["Retry-After"] == "2"
    assert json.loads(api.value.read())["error"]["code"] == "unavailable"
    assert page.value.code == 503
    assert page.value.headers["Retry-After"] == "2"
    assert "The portal is busy" in page.value.read().decode()
    assert server.request("GET", f"/api/v1/runtimes/{name}/")[1]["version"] == 1  # nothing changed
