"""§1 kubectl smoke test: get, apply --server-side, get -w against the sandbox (no --validate=false needed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import threading
import time

import pytest

KUBECTL = shutil.which("kubectl")


@pytest.fixture
def kubectl(cluster, tmp_path):
    """Returns a function that runs kubectl against the sandbox and returns the CompletedProcess."""
    if KUBECTL is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl is not installed; CI must provide it (make system-deps)")
        pytest.skip("kubectl is not on PATH (install the Debian kubectl package or run `make system-deps`)")
    env = {**os.environ, "KUBECONFIG": cluster.kubeconfig, "HOME": str(tmp_path)}

    def run(*args: str, stdin: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, env=env,
                              timeout=timeout)

    run.env = env  # type: ignore[attr-defined]
    return run


RUNTIME = textwrap.dedent("""\
    apiVersion: trainer.kubeflow.org/v1alpha1
    kind: ClusterTrainingRuntime
    metadata:
      name: torch-gang
    spec:
      mlPolicy:
        numNodes: 2
        torch: {}
      scheduling:
        schedulingPolicy:
          gang: {}
        schedulingConstraints:
          topology:
          - key: topology.kubernetes.io/zone
      template:
        spec:
          replicatedJobs:
          - name: node
            template:
              spec:
                template:
                  spec:
                    containers:
                    - name: node
                      image: pytorch
    """)


def test_kubectl_get_lists_namespaces_and_crds(kubectl):
    result = kubectl("get", "namespaces")
    assert result.returncode == 0, result.stderr
    assert "default" in result.stdout and "kube-system" in result.stdout
    crds = kubectl("get", "crd", "-o", "name")
    assert "customresourcedefinition.apiextensions.k8s.io/trainjobs.trainer.kubeflow.org" in crds.stdout


def test_kubectl_server_side_apply_creates_then_is_idempotent(kubectl):
    first = kubectl("apply", "--server-side", "-f", "-", stdin=RUNTIME)
    assert first.returncode == 0, first.stderr
    assert "serverside-applied" in first.stdout
    again = kubectl("apply", "--server-side", "-f", "-", stdin=RUNTIME)
    assert again.returncode == 0, again.stderr
    shown = kubectl("get", "clustertrainingruntimes.trainer.kubeflow.org", "torch-gang", "-o",
                    "jsonpath={.spec.scheduling.schedulingConstraints.topology[0].key}")
    assert shown.stdout == "topology.kubernetes.io/zone"


def test_kubectl_server_side_apply_reports_validation_errors(kubectl):
    bad = RUNTIME.replace("gang: {}", "gang: {minCount: 3}")
    result = kubectl("apply", "--server-side", "-f", "-", stdin=bad)
    assert result.returncode != 0
    assert "minCount must not be set" in result.stderr


def test_kubectl_get_watch_prints_changes(kubectl, core):
    from tests.sandbox.api_support import pod

    core.create_namespaced_pod("default", pod("watched"))
    watcher = subprocess.Popen([KUBECTL, "get", "pods", "-w", "--request-timeout=8s"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=kubectl.env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(watcher.stdout.readline, "")), daemon=True)
    reader.start()
    deadline = time.monotonic() + 20
    while not any(line.startswith("watched") for line in lines) and time.monotonic() < deadline:
        time.sleep(0.05)  # wait until kubectl has listed, so the changes below arrive through its watch
    core.patch_namespaced_pod("watched", "default", {"metadata": {"labels": {"x": "1"}}})
    core.delete_namespaced_pod("watched", "default")
    try:
        watcher.wait(timeout=30)
    except subprocess.TimeoutExpired:
        watcher.kill()
    reader.join(5)
    assert lines and lines[0].split()[:3] == ["NAME", "READY", "STATUS"], (lines, watcher.stderr.read())
    assert len([line for line in lines if line.startswith("watched")]) >= 3, lines
