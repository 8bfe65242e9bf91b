"""The Kubeflow SDK against the simulated cluster: `TrainerClient(...).get_job(...)` and `get_job_logs(...)`
(plain and `follow=True`) read the TrainJob's steps and their logs through the sandbox's pods/log, and the SDK
finds the Trainer's public ConfigMap (no "version info is not available" warning).

The SDK runs in its own virtualenv, built once from tests/sdk/requirements.txt under the user's cache directory
(keyed by the requirements' hash), because it pins a `kubernetes` client other than the product's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.sandbox.controllers_support import Cluster, demo_runtime, simulated_cluster, trainjob

REQUIREMENTS = Path(__file__).with_name("requirements.txt")
SCRIPT = textwrap.dedent("""\
    import logging, sys
    logging.basicConfig(level=logging.WARNING, format="WARNING %(message)s")
    from kubeflow.common.types import KubernetesBackendConfig
    from kubeflow.trainer import TrainerClient

    client = TrainerClient(backend_config=KubernetesBackendConfig(config_file=sys.argv[1], namespace="default"))
    job = client.get_job(sys.argv[2])
    print("STEPS", sorted((step.name, step.status) for step in job.steps))
    for line in client.get_job_logs(sys.argv[2], step="node-1"):
        print("LOG", line)
    for line in client.get_job_logs(sys.argv[2], follow=True):
        print("FOLLOW", line)
    """)


def _sdk_python() -> Path:
    """Returns the Python of a virtualenv with the pinned SDK, building it on first use (pip errors fail the test)."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainer-portal"
    venv = base / f"kubeflow-sdk-{digest}"
    python = venv / "bin" / "python"
    marker = venv / ".complete"
    if marker.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    base.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    installed = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "-r",
                                str(REQUIREMENTS)], capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, f"installing the Kubeflow SDK failed:\n{installed.stdout}\n{installed.stderr}"
    marker.write_text(REQUIREMENTS.read_text())
    return python


@pytest.mark.slow
def test_kubeflow_sdk_reads_job_steps_and_logs():
    python = _sdk_python()
    with simulated_cluster() as process:
        cluster = Cluster(process)
        cluster.create_runtime(demo_runtime("torch_distributed.yaml"))
        cluster.submit(trainjob("sdk-job", "torch-distributed", num_nodes=2, duration=15))
        cluster.wait(lambda: (pods := cluster.pods("sdk-job")) and len(pods) == 2
                     and all(p["status"].get("phase") == "Running" for p in pods))
        result = subprocess.run([str(python), "-c", SCRIPT, process.kubeconfig, "sdk-job"], capture_output=True,
                                text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert "WARNING" not in result.stdout + result.stderr, result.stderr  # the public ConfigMap was found
    # Running while the SDK reads it (Succeeded only if importing the SDK took longer than the job's 15 s)
    assert out[0] in ("STEPS [('node-0', 'Running'), ('node-1', 'Running')]",
                      "STEPS [('node-0', 'Succeeded'), ('node-1', 'Succeeded')]"), out[0]
    logged = [line.removeprefix("LOG ") for line in out if line.startswith("LOG ")]
    assert logged[0].startswith("[rank 1] starting node for TrainJob sdk-job")
    followed = [line.removeprefix("FOLLOW ") for line in out if line.startswith("FOLLOW ")]
    # follow=True streams rank 0 until its container ends: every step, then "Completed".
    assert followed[0].startswith("[rank 0] starting node") and followed[-1] == "Completed", followed
    steps = [int(line.split(" step ")[1].split()[0]) for line in followed if " step " in line]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 10, followed
