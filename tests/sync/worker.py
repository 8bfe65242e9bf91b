"""Run a real Celery worker process against the test database, a sandbox cluster and the configured broker.

The broker comes from the environment like in production: ``CELERY_BROKER_URL`` (Redis in CI) or, when unset, the
embedded atomic filesystem broker in a private folder. Each worker gets a private queue name, so parallel test runs
(or other engineers' workers on the same Redis) never take each other's messages.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from celery import Celery

ROOT = Path(__file__).resolve().parents[2]


def database_url() -> str | None:
    """Return a DATABASE_URL for the current test database, or None when another process cannot open it."""
    from django.db import connection

    settings = connection.settings_dict
    if connection.vendor == "postgresql":
        user = settings.get("USER") or ""
        password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
        host = settings.get("HOST") or "127.0.0.1"
        port = f":{settings['PORT']}" if settings.get("PORT") else ""
        return f"postgres://{user}{password}@{host}{port}/{settings['NAME']}"
    name = str(settings.get("NAME") or "")
    if connection.vendor == "sqlite" and name and "memory" not in name and name != ":memory:":
        return f"sqlite:///{name}"
    return None


class WorkerProcess:
    """``celery -A trainer_portal worker`` in its own process group, plus a publisher for its queue."""

    def __init__(self, *, kubeconfig: str, var_dir: Path, db_url: str, concurrency: int = 2,
                 timeout: float = 3.0) -> None:
        self.queue = f"trainer-portal-test-{uuid.uuid4().hex[:10]}"
        self.broker_url = os.environ.get("CELERY_BROKER_URL") or "atomicfs://"
        self.var_dir = var_dir
        (var_dir / "broker").mkdir(parents=True, exist_ok=True)
        (var_dir / "broker-processed").mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "trainer_portal.settings",
            "DATABASE_URL": db_url,
            "CELERY_BROKER_URL": self.broker_url,
            "CELERY_TASK_DEFAULT_QUEUE": self.queue,
            "TRAINER_PORTAL_VAR_DIR": str(var_dir),
            "TRAINER_PORTAL_KUBECONFIG": kubeconfig,
            "TRAINER_PORTAL_KUBE_TIMEOUT": str(timeout),
            "LOG_LEVEL": "WARNING",
        }
        self.concurrency = concurrency
        self.proc: subprocess.Popen | None = None
        self.log_path = var_dir / f"worker-{self.queue}.log"
        self._publisher: Celery | None = None

    def start(self, ready_timeout: float = 60.0) -> WorkerProcess:
        """Start the worker and wait until it is consuming. Raises RuntimeError with its log on failure."""
        log = self.log_path.open("a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "trainer_portal", "worker", "--pool=prefork",
             f"--concurrency={self.concurrency}", "--loglevel=INFO", "--without-gossip", "--without-mingle",
             "--without-heartbeat", "-n", f"{self.queue}@%h"],
            # cwd: the filesystem broker writes its control exchange files under "./control".
            cwd=self.var_dir, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + ready_timeout
        while " ready." not in self.log():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"the worker did not start:\n{self.log()[-4000:]}")
            time.sleep(0.1)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL the worker and its pool children (the whole process group), as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        """Stop the worker gracefully (SIGTERM, then SIGKILL after 15 s)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def publisher(self) -> Celery:
        """Return a Celery app that publishes to this worker's broker and queue."""
        if self._publisher is None:
            # Not the current app: the portal's shared tasks must keep publishing through the portal's own app.
            app = Celery("trainer-portal-test-publisher", broker=self.broker_url, set_as_current=False)
            if self.broker_url.startswith(("atomicfs", "filesystem")):
                app.conf.broker_transport_options = {
                    "data_folder_in": str(self.var_dir / "broker"),
                    "data_folder_out": str(self.var_dir / "broker"),
                    "processed_folder": str(self.var_dir / "broker-processed"),
                    "store_processed": False,
                    "control_folder": str(self.var_dir / "control"),
                }
            app.conf.task_default_queue = self.queue
            self._publisher = app
        return self._publisher

    def send(self, task: str, *args) -> None:
        """Publish ``task(*args)`` to the worker's queue."""
        self.publisher().send_task(task, args=list(args), queue=self.queue)
