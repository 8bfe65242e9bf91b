"""`make run` as a real process tree: scripts/run-embedded → supervisor → sandbox, worker (+ beat), watcher, web.

Each test starts the whole embedded stack in a private folder on free ports, in a process group of its own, and
signals it the way a terminal (Ctrl-C) or a service manager (SIGTERM to the group) would.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sqlite3
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from trainer_portal.supervisor import backoff

pytestmark = [pytest.mark.slow, pytest.mark.worker]

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _descendants(pid: int) -> set[int]:
    """Return the pids of every live descendant of ``pid`` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Stack:
    def __init__(self, tmp_path: Path) -> None:
        self.var = tmp_path / "var"
        self.database = tmp_path / "db.sqlite3"
        self.port = _free_port()
        self.output = tmp_path / "stack.out"
        env = {
            **os.environ,
            "TRAINER_PORTAL_VAR_DIR": str(self.var),
            "DATABASE_URL": f"sqlite:///{self.database}",
            "PORT": str(self.port),
            "SANDBOX_PORT": "0",
            "SANDBOX_GENERATOR": "0",
        }
        for name in ("CELERY_BROKER_URL", "TRAINER_PORTAL_KUBECONFIG", "KUBECONFIG", "DJANGO_SETTINGS_MODULE"):
            env.pop(name, None)
        with self.output.open("wb") as out:
            self.process = subprocess.Popen([str(ROOT / "scripts" / "run-embedded")], cwd=ROOT, env=env,
                                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def wait_for(self, predicate, what: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.process.poll() is not None:
                raise AssertionError(f"the stack exited ({self.process.returncode}) before {what}:\n{self.text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}:\n{self.text()}")
            time.sleep(0.2)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def pids(self, name: str) -> list[int]:
        return [int(pid) for pid in re.findall(rf"started {re.escape(name)} \(pid (\d+)\)", self.text())]

    def worker_ready_count(self) -> int:
        log = self.var / "log" / "worker.log"
        return log.read_text(errors="replace").count(" ready.") if log.exists() else 0

    def heartbeats(self) -> dict[str, tuple[str, int | None]]:
        """Return {process: (last_seen, queue_depth)} as the stack's processes wrote them ({} if unreadable now)."""
        try:
            with contextlib.closing(sqlite3.connect(self.database, timeout=10)) as db:
                rows = db.execute("SELECT process, last_seen, queue_depth FROM health_heartbeat").fetchall()
        except sqlite3.OperationalError:
            return {}  # a WAL checkpoint of the writers can make one read fail; the caller polls again
        return {process: (last_seen, depth) for process, last_seen, depth in rows}

    def kill(self) -> None:
        if self.process.poll() is None:
            for pid in _descendants(self.process.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@pytest.fixture
def stack(tmp_path):
    running = Stack(tmp_path)
    yield running
    running.kill()


def _up(stack: Stack) -> set[int]:
    stack.wait_for(stack.healthy, "the web server answering")
    stack.wait_for(lambda: stack.worker_ready_count() >= 1, "the worker being ready")
    tree = _descendants(stack.process.pid)
    assert len(tree) >= 5, tree  # sandbox, worker + pool, watcher, web
    return tree


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_it_stops_the_whole_tree_cleanly_when_its_process_group_is_signalled(stack, signum):
    tree = _up(stack)

    os.killpg(stack.process.pid, signum)
    stack.process.wait(45)  # the worker used to hang here until SIGKILL

    assert stack.process.returncode == 0, stack.text()
    assert [pid for pid in tree if _alive(pid)] == []
    assert "did not stop" not in stack.text()
    assert re.search(r"stopped worker \(exit 0\)", stack.text()), stack.text()


def test_it_restarts_a_worker_that_died_and_logs_it_and_the_heartbeats_show_it(stack):
    _up(stack)
    stack.wait_for(lambda: {"worker", "beat"} <= set(stack.heartbeats()), "worker and beat heartbeats")
    stack.wait_for(lambda: stack.heartbeats().get("worker", (None, None))[1] is not None, "a measured queue depth")
    [first] = stack.pids("worker")

    os.killpg(first, signal.SIGKILL)  # the worker and its pool, as an out-of-memory kill would

    stack.wait_for(lambda: len(stack.pids("worker")) == 2, "the worker being restarted")
    stack.wait_for(lambda: stack.worker_ready_count() >= 2, "the restarted worker being ready")
    assert re.search(r"worker exited \(code -9\) after [\d.]+ s; restart 1 in 1\.0 s", stack.text()), stack.text()
    assert stack.healthy()
    stack.wait_for(lambda: _worker_seen(stack), "a readable heartbeat")
    before = _worker_seen(stack)
    stack.wait_for(lambda: _worker_seen(stack) > before, "a heartbeat from the restarted worker")


def _worker_seen(stack: Stack) -> str:
    """Return the worker's last heartbeat time as stored ("" when it cannot be read just now)."""
    return stack.heartbeats().get("worker", ("", None))[0]


def test_it_backs_off_exponentially_up_to_a_cap():
    assert [backoff(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def test_it_runs_two_sandbox_clusters_both_registered_and_watched(stack):
    _up(stack)
    watch_log = stack.var / "log" / "cluster-watch.log"

    def watching() -> str:
        return watch_log.read_text(errors="replace") if watch_log.exists() else ""

    stack.wait_for(lambda: "cluster gpu-east: watching" in watching() and "cluster gpu-west: watching" in watching(),
                   "the watcher serving both clusters")
    with contextlib.closing(sqlite3.connect(stack.database, timeout=10)) as db:
        clusters = db.execute("SELECT name, is_default FROM cluster_cluster ORDER BY name").fetchall()
    assert clusters == [("gpu-east", 1), ("gpu-west", 0)]
    east = re.search(r"cluster gpu-east: watching (\S+)", watching()).group(1)
    west = re.search(r"cluster gpu-west: watching (\S+)", watching()).group(1)
    assert east != west  # two API servers, not one watched twice
    assert "sandbox clusters ready: gpu-east" in stack.text()
