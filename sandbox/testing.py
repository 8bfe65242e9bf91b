"""`SandboxProcess`: run `python -m sandbox` as a subprocess for tests and scripts.

    with SandboxProcess(topology="none", controllers=False) as sandbox:  # also gates={...}, trainer_crd="v2.3"
        client = kubernetes.config.new_client_from_config(config_file=sandbox.kubeconfig)
        ...
        sandbox.reset()

Admin helpers talk to the `/sandbox/*` endpoints with urllib (no third-party client needed).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

_READY = re.compile(r"ready at (http://\S+)")


class SandboxError(RuntimeError):
    """The sandbox process failed to start or an admin call failed."""


class SandboxProcess:
    """A sandbox API server subprocess on a free port with its own kubeconfig."""

    def __init__(self, *, topology: str = "none", controllers: bool = False, kube_version: str = "1.37",
                 block_key: str | None = None, kubeconfig: str | os.PathLike[str] | None = None,
                 extra_args: list[str] | None = None, python: str | None = None, startup_timeout: float = 60.0,
                 env: dict[str, str] | None = None, gates: dict[str, bool] | None = None,
                 trainer_crd: str | None = None) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="sandbox-")
        self.kubeconfig = str(kubeconfig or Path(self._tmp.name) / "kubeconfig")
        self.url = ""
        self.output: list[str] = []
        args = [python or sys.executable, "-m", "sandbox", "--port", "0", "--kubeconfig", self.kubeconfig,
                "--topology", topology, "--kube-version", kube_version]
        if not controllers:
            args.append("--no-controllers")
        if block_key:
            args += ["--block-key", block_key]
        if trainer_crd:
            args += ["--trainer-crd", trainer_crd]
        for name, enabled in (gates or {}).items():
            args += ["--gate", f"{name}={'true' if enabled else 'false'}"]
        args += list(extra_args or ())
        self._args = args
        self._env = {**os.environ, **(env or {})}
        self._startup_timeout = startup_timeout
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> SandboxProcess:
        """Starts the process and waits for its `ready` line. Returns self; raises SandboxError on failure."""
        root = Path(__file__).resolve().parent.parent
        env = {**self._env, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), self._env.get("PYTHONPATH")]))}
        self._proc = subprocess.Popen(self._args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      cwd=root, env=env, bufsize=1)
        ready = threading.Event()

        def pump() -> None:
            assert self._proc is not None and self._proc.stdout is not None
            for line in self._proc.stdout:
                self.output.append(line.rstrip("\n"))
                del self.output[:-500]
                m = _READY.search(line)
                if m and not ready.is_set():
                    self.url = m.group(1)
                    ready.set()
            ready.set()

        threading.Thread(target=pump, name="sandbox-output", daemon=True).start()
        ready.wait(self._startup_timeout)
        if not self.url:
            self.stop()
            raise SandboxError("sandbox did not become ready:\n" + "\n".join(self.output[-40:]))
        return self

    def __enter__(self) -> SandboxProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self, timeout: float = 10.0) -> int | None:
        """Stops the process with SIGTERM (SIGKILL after `timeout`). Returns its exit code."""
        code = None
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                code = self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                code = self._proc.wait()
        elif self._proc is not None:
            code = self._proc.returncode
        self._tmp.cleanup()
        return code

    @property
    def pid(self) -> int | None:
        """Returns the process id of the running sandbox, or None."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- admin API -------------------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        if not self.url.startswith("http://"):
            raise SandboxError("the sandbox is not running (no http:// URL)")
        request = urllib.request.Request(self.url + path, data=data, method=method,  # noqa: S310
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - http:// checked above
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise SandboxError(f"{method} {path} failed: {exc.code} {exc.read().decode(errors='replace')}")

    def info(self) -> dict[str, Any]:
        """Returns {"kubeVersion", "featureGates", "resourceVersion", "counts"} of the running sandbox."""
        return self._call("GET", "/sandbox/info")

    def reset(self) -> str:
        """Returns the cluster to its start-up state; returns the current resourceVersion."""
        return self._call("POST", "/sandbox/reset")["resourceVersion"]

    def compact(self) -> str:
        """Drops watch history (older resourceVersions → 410 Expired); returns the current resourceVersion."""
        return self._call("POST", "/sandbox/compact")["resourceVersion"]

    def inject_fault(self, **spec: Any) -> dict[str, Any]:
        """Adds a fault rule (see docs/sandbox.md, e.g. method="GET", path="/api/v1/pods", action="status",
        status=503, count=1). Returns the rule as stored."""
        return self._call("POST", "/sandbox/faults", spec)["fault"]

    def deny_access(self, *rules: dict[str, str]) -> None:
        """Make SelfSubjectAccessReviews for these ``{"verb", "group", "resource"}`` rules answer "denied"."""
        self._call("POST", "/sandbox/rbac", {"deny": list(rules)})

    def clear_faults(self) -> None:
        self._call("DELETE", "/sandbox/faults")

    def dump(self) -> dict[str, Any]:
        """Returns {"resourceVersion": ..., "objects": {"pods": [...], "trainjobs.trainer.kubeflow.org": [...]}}."""
        return self._call("GET", "/sandbox/dump")

    def wait_until(self, predicate: Any, timeout: float = 10.0, interval: float = 0.05) -> Any:
        """Polls `predicate()` until it returns a truthy value; returns it. Raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"condition not met within {timeout}s")
            time.sleep(interval)
