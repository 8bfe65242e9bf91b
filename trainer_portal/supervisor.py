"""A small process supervisor for the embedded stack (``make run``): start, watch, restart, stop cleanly.

Each service runs in a process group of its own, so a Ctrl-C or a SIGTERM sent to the terminal's process group
reaches the supervisor only; the supervisor then stops the services one by one, newest first (SIGTERM to the
service's main process, which shuts its own children down, then SIGKILL to its whole group after a grace period)
and exits 0. Signalling every process at once is what left the Celery worker hanging: its pool children died under
it while it was still waiting for them.

A service marked ``restart`` (worker, cluster watcher) is started again when it exits, after an exponential
backoff that resets once it has stayed up for ``STABLE_SECONDS``; every exit and restart is logged. Any other
service exiting (web server, sandbox cluster) stops the whole stack with exit code 1: the portal is no use without it.

This module imports nothing of Django, so it can run before the database exists.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger("trainer_portal.supervisor")

BACKOFF_INITIAL_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 30.0
STABLE_SECONDS = 60.0
STOP_GRACE_SECONDS = 15.0
POLL_SECONDS = 0.2


@dataclass
class Service:
    """One long-running process: its command, log file and what to do when it exits."""

    name: str
    argv: Sequence[str]
    log: Path
    restart: bool = False
    env: dict[str, str] | None = None
    process: subprocess.Popen | None = field(default=None, repr=False)
    started_at: float = 0.0
    failures: int = 0
    restart_at: float | None = None

    def start(self) -> None:
        """Start the process (appending to its log). Raises OSError when the command cannot be run."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                list(self.argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, **(self.env or {})}, start_new_session=True,
            )
        self.started_at = time.monotonic()
        self.restart_at = None
        logger.info("started %s (pid %d), log %s", self.name, self.process.pid, self.log)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float) -> None:
        """SIGTERM the main process, wait up to ``grace`` seconds, then SIGKILL its process group."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                logger.warning("%s did not stop within %.0f s; killing it", self.name, grace)
        # Whatever it left behind in its group (pool children, a stuck grandchild) goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        logger.info("stopped %s (exit %s)", self.name, self.process.returncode)


def backoff(failures: int, initial: float = BACKOFF_INITIAL_SECONDS, maximum: float = BACKOFF_MAX_SECONDS) -> float:
    """Return the delay before restart number ``failures`` (1, 2, 4 … seconds, capped at ``maximum``)."""
    return min(maximum, initial * 2 ** max(0, failures - 1))


class Supervisor:
    """Runs services until SIGTERM, SIGINT or SIGHUP, or until a service without ``restart`` exits."""

    def __init__(self, *, grace: float = STOP_GRACE_SECONDS, stable: float = STABLE_SECONDS) -> None:
        self.services: list[Service] = []
        self.grace = grace
        self.stable = stable
        self.stop_signal: int | None = None

    def install_signal_handlers(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        if self.stop_signal is None:
            logger.info("received %s; stopping", signal.Signals(signum).name)
        self.stop_signal = signum

    def start(self, service: Service, *, ready: Callable[[], bool] | None = None, timeout: float = 60.0) -> bool:
        """Start ``service``; with ``ready``, wait until it returns True. Return False if it exited or timed out."""
        self.services.append(service)
        service.start()
        if ready is None:
            return True
        return self.wait_ready(service, ready, timeout=timeout)

    def wait_ready(self, service: Service, ready: Callable[[], bool], *, timeout: float = 60.0) -> bool:
        """Wait until ``ready`` returns True; return False if ``service`` exited, time ran out or a stop came."""
        deadline = time.monotonic() + timeout
        while not ready():
            if not service.running() or time.monotonic() > deadline or self.stop_signal is not None:
                return False
            time.sleep(0.1)
        return True

    def run(self) -> int:
        """Watch the services until told to stop; stop them all; return the exit code (0 on a signal)."""
        code = 0
        while self.stop_signal is None:
            failed = self._check()
            if failed is not None:
                logger.error("%s exited (code %s); stopping the stack", failed.name, failed.process.returncode)
                code = 1
                break
            time.sleep(POLL_SECONDS)
        self.stop_all()
        return code

    def _check(self) -> Service | None:
        now = time.monotonic()
        for service in self.services:
            if service.restart_at is not None:
                if now >= service.restart_at:
                    service.start()
                continue
            if service.running():
                continue
            if not service.restart:
                return service
            uptime = now - service.started_at
            service.failures = 1 if uptime >= self.stable else service.failures + 1
            delay = backoff(service.failures)
            service.restart_at = now + delay
            logger.warning("%s exited (code %s) after %.1f s; restart %d in %.1f s (see %s)", service.name,
                           service.process.returncode, uptime, service.failures, delay, service.log)
        return None

    def stop_all(self) -> None:
        """Stop every service, the last started first (the web server before the worker before the cluster)."""
        for service in reversed(self.services):
            service.stop(self.grace)


def _log_contains(path: Path, text: str) -> Callable[[], bool]:
    return lambda: path.exists() and text in path.read_text(errors="replace")


def embedded(argv: Sequence[str] | None = None) -> int:
    """Run the embedded stack: two sandbox clusters (unless a kubeconfig is given), worker + beat, the watcher of
    both, web server.

    The sandboxes are ``gpu-east`` (the 64-node demo topology, the default cluster) and ``gpu-west`` (the smaller
    ``west`` topology); once both answer, ``portal_demo_clusters`` registers both as Cluster rows (gpu-west with
    its kubeconfig stored encrypted, as an admin would register a real cluster).
    Reads PORT, SANDBOX_PORT, SANDBOX_KUEUE / SANDBOX_KUEUE_GPU_QUOTA / SANDBOX_KUEUE_COHORT (default on, 16 GPUs
    each for team-a and team-b, cohort demo), SANDBOX_WEST_PORT (default 6444, or
    a free port when SANDBOX_PORT is 0), SANDBOX_GENERATOR, TRAINER_PORTAL_KUBECONFIG and TRAINER_PORTAL_VAR_DIR
    from the environment. Returns the process exit code.
    """
    root = Path(__file__).resolve().parent.parent
    var_dir = Path(os.environ.get("TRAINER_PORTAL_VAR_DIR", root / "var"))
    logs = var_dir / "log"
    python = sys.executable
    manage = [python, str(root / "manage.py")]
    port = os.environ.get("PORT", "8000")
    supervisor = Supervisor()
    supervisor.install_signal_handlers()

    if not os.environ.get("TRAINER_PORTAL_KUBECONFIG"):
        kubeconfig = var_dir / "sandbox.kubeconfig"
        kubeconfig.unlink(missing_ok=True)
        os.environ["TRAINER_PORTAL_KUBECONFIG"] = str(kubeconfig)
        sandbox_log = logs / "sandbox.log"
        sandbox_log.unlink(missing_ok=True)
        sandbox_port = os.environ.get("SANDBOX_PORT", "6443")
        generator = {"SANDBOX_GENERATOR": os.environ.get("SANDBOX_GENERATOR", "1")}
        # Kueue in front of the default cluster, as most GPU platforms run it: per-team LocalQueues on ClusterQueues
        # of one cohort, less quota than the storyline asks for (queueing, borrowing and a reclaim within minutes).
        kueue = {"SANDBOX_KUEUE": os.environ.get("SANDBOX_KUEUE", "1"),
                 "SANDBOX_KUEUE_GPU_QUOTA": os.environ.get("SANDBOX_KUEUE_GPU_QUOTA", "team-a=16,team-b=16"),
                 "SANDBOX_KUEUE_COHORT": os.environ.get("SANDBOX_KUEUE_COHORT", "demo")}
        sandbox = Service("sandbox", [python, "-m", "sandbox", "--port", sandbox_port, "--kubeconfig",
                                      str(kubeconfig), "--topology", "demo"], sandbox_log, env={**generator, **kueue})
        west_kubeconfig = var_dir / "sandbox-west.kubeconfig"
        west_kubeconfig.unlink(missing_ok=True)
        west_log = logs / "sandbox-west.log"
        west_log.unlink(missing_ok=True)
        west_port = os.environ.get("SANDBOX_WEST_PORT", "0" if sandbox_port == "0" else "6444")
        west = Service("sandbox-west", [python, "-m", "sandbox", "--port", west_port, "--kubeconfig",
                                        str(west_kubeconfig), "--topology", "west"], west_log, env=generator)
        supervisor.start(sandbox)
        supervisor.start(west)
        for service, log, name in ((sandbox, sandbox_log, "gpu-east"), (west, west_log, "gpu-west")):
            if not supervisor.wait_ready(service, _log_contains(log, "ready"), timeout=30):
                logger.error("the sandbox cluster %s failed to start; see %s", name, log)
                supervisor.stop_all()
                return 1
        logger.info("sandbox clusters ready: gpu-east (kubeconfig %s), gpu-west (kubeconfig %s)", kubeconfig,
                    west_kubeconfig)
        registered = subprocess.run([*manage, "portal_demo_clusters", "--default", "gpu-east", "--add",
                                     f"gpu-west={west_kubeconfig}"], check=False, timeout=120)
        if registered.returncode:
            logger.warning("continuing with the default cluster only")
        seeded = subprocess.run([*manage, "portal_demo_seed"], check=False, timeout=120)
        if seeded.returncode:
            logger.warning("continuing without demo policies")
    else:
        logger.info("using the cluster in %s", os.environ["TRAINER_PORTAL_KUBECONFIG"])
    if supervisor.stop_signal is not None:
        supervisor.stop_all()
        return 0

    supervisor.start(Service(
        "worker", [python, "-m", "celery", "-A", "trainer_portal", "worker", "--beat", "--loglevel", "INFO",
                   "--concurrency", "2", "--schedule", str(var_dir / "celerybeat-schedule")],
        logs / "worker.log", restart=True,
    ))
    supervisor.start(Service("cluster-watch", [*manage, "cluster_watch"], logs / "cluster-watch.log",
                             restart=True))
    supervisor.start(Service("web", [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"], logs / "web.log"))
    logger.info("Trainer Portal: http://127.0.0.1:%s/  (Ctrl-C stops everything; logs in %s)", port, logs)
    return supervisor.run()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s supervisor: %(message)s", datefmt="%H:%M:%S",
                        stream=sys.stdout)
    sys.exit(embedded(sys.argv[1:]))
