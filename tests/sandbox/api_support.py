"""Builders and a raw HTTP helper shared by the sandbox API conformance tests (test_api_*.py, test_kubectl*.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

TRAINER = "trainer.kubeflow.org"
TRAINER_VERSION = "v1alpha1"


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """Returns a minimal valid Pod manifest."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec}}


def trainjob(name: str, runtime: str = "torch-distributed", **spec: Any) -> dict[str, Any]:
    """Returns a minimal valid TrainJob manifest."""
    return {"apiVersion": f"{TRAINER}/{TRAINER_VERSION}", "kind": "TrainJob", "metadata": {"name": name},
            "spec": {"runtimeRef": {"name": runtime}, **spec}}


def runtime(name: str, scheduling: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """Returns a ClusterTrainingRuntime like the upstream torch-distributed example, optionally with scheduling."""
    body: dict[str, Any] = {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {"spec": {"replicatedJobs": [{
            "name": "node",
            "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                         "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "pytorch"}]}}}},
        }]}},
        **spec,
    }
    if scheduling is not None:
        body["scheduling"] = scheduling
    return {"apiVersion": f"{TRAINER}/{TRAINER_VERSION}", "kind": "ClusterTrainingRuntime",
            "metadata": {"name": name}, "spec": body}


def status_of(exc: ApiException) -> dict[str, Any]:
    """Returns the metav1.Status body of a failed call."""
    return json.loads(exc.body)


def raw(url: str, method: str, path: str, body: Any = None, content_type: str = "application/json",
        headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """Sends one HTTP request to the sandbox; returns (status code, decoded JSON body or text)."""
    import urllib.error
    import urllib.request

    data = body if isinstance(body, bytes) else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(url + path, data=data, method=method,
                                     headers={"Content-Type": content_type, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            code, payload = response.status, response.read()
    except urllib.error.HTTPError as exc:
        code, payload = exc.code, exc.read()
    try:
        return code, json.loads(payload)
    except ValueError:
        return code, payload.decode()


KUBECTL = shutil.which("kubectl")
Run = Callable[..., subprocess.CompletedProcess]


def kubectl_for(kubeconfig: str, home: str) -> Run:
    """Returns a function running kubectl against a sandbox kubeconfig (fails in CI when kubectl is missing)."""
    if KUBECTL is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl is not installed; CI must provide it (make system-deps)")
        pytest.skip("kubectl is not on PATH (install the Debian kubectl package or run `make system-deps`)")
    env = {**os.environ, "KUBECONFIG": kubeconfig, "HOME": home}

    def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTL, *args], capture_output=True, text=True, env=env, timeout=timeout)

    return run
