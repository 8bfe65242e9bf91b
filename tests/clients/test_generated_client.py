"""A typed client generated from the portal's OpenAPI document round-trips the main flows against a live server.

openapi-python-client (pinned in tests/clients/requirements.txt, installed into a virtualenv of its own under
var/, kept between runs) generates the client from the schema the portal serves; `drive_client.py`, run with that
virtualenv, logs in for a token and goes through import, validate, preview, revisions, export, sync and
TrainJobs against a live server backed by the sandbox cluster. Every answer must parse into its generated model,
and no model may carry keys it does not declare (they would be untyped in ``additional_properties``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from runtimes.domain.manifest import dump_yaml
from tests.contract import api_schema
from tests.jobs.factories import live_tracker, tracked_job
from tests.runtimes.test_services import level1

HERE = Path(__file__).parent
REQUIREMENTS = HERE / "requirements.txt"
ROOT = HERE.parents[1]
# The only warnings the generator may print: it has no YAML support, and those operations also take JSON.
ALLOWED_WARNINGS = ("Unsupported content type application/yaml", "Unsupported content type text/yaml",
                    "Unsupported content type application/x-yaml", "Unsupported content type text/x-yaml",
                    "Unsupported content_type application/yaml")

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]


def generator_venv() -> Path:
    """Return the generator's virtualenv, creating it (pip install of the pinned requirements) when missing."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    home = ROOT / "var" / "test-venvs" / f"openapi-python-client-{digest}"
    done = home / ".installed"
    if not done.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
        subprocess.run([home / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "-r", REQUIREMENTS], check=True, timeout=600)
        done.write_text(digest)
    return home


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, Path]:
    """Generate the client from the schema; return (the generator's venv, the folder holding the package)."""
    home = generator_venv()
    work = tmp_path_factory.mktemp("client")
    schema_file = work / "openapi.json"
    schema_file.write_text(json.dumps(api_schema()))
    env = {**os.environ, "PATH": f"{home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    run = subprocess.run([home / "bin" / "openapi-python-client", "generate", "--path", schema_file, "--meta",
                          "none", "--output-path", work / "trainer_portal_api_client"], capture_output=True,
                         text=True, env=env, cwd=work, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    reasons = [line for line in (run.stdout + run.stderr).splitlines()
               if line.startswith(("Unsupported", "Cannot parse", "Unable", "ERROR"))]
    unexpected = [line for line in reasons if not any(allowed in line for allowed in ALLOWED_WARNINGS)]
    assert unexpected == [], run.stdout
    return home, work


def test_the_generated_models_type_every_field_of_the_main_answers(generated):
    home, work = generated
    script = (
        "import attrs, json, trainer_portal_api_client.models as m\n"
        "names = ['PolicyOutput', 'PreviewResult', 'PreviewPodGroup', 'PreviewVerdict', 'PlacementResult',"
        " 'ValidateResponse', 'RevisionDetail', 'DiffOutput', 'SyncStatus', 'SyncBatchProgress', 'TrainJobDetail',"
        " 'TrainJobPage', 'ImportResult', 'PolicyExportList', 'ClusterStatus', 'Error', 'ErrorBody']\n"
        "print(json.dumps({n: [f.name for f in attrs.fields(getattr(m, n))] for n in names}))\n"
    )
    run = subprocess.run([home / "bin" / "python", "-c", script], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(work)}, timeout=120)
    assert run.returncode == 0, run.stderr
    fields = json.loads(run.stdout)
    assert {"placement", "min_group_count", "replicated_jobs", "job_index", "disruption_mode", "parent",
            "resource_claims"} <= set(fields["PreviewPodGroup"])
    assert "startup_deadlock" in fields["PreviewVerdict"]
    assert {"groups", "fragmentation", "snapshot_version"} <= set(fields["PlacementResult"])
    assert {"current_version", "changes", "cluster"} <= set(fields["ErrorBody"])


def test_a_generated_client_round_trips_the_main_flows(generated, live_server, alice, cluster, settings):
    from trainer_portal.celery import app

    home, work = generated
    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, False
    # An eager call still takes a producer from kombu's process-wide pools; start from fresh ones whatever closed
    # them before (a browser test's event loop does).
    from kombu import pools

    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None
    live_tracker()
    tracked_job("team-a", "llm-pretrain", runtime="client-gang")
    manifests = dump_yaml(level1("client-gang")) + "---\n" + dump_yaml(level1("client-other"))
    try:
        run = subprocess.run(
            [home / "bin" / "python", HERE / "drive_client.py", live_server.url, "alice", "alice-password-1",
             manifests],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(work)}, timeout=300,
        )
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = saved
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])

    assert report["problems"] == [], report
    assert report["untyped"] == [], report["untyped"]
    steps = {s["step"]: s for s in report["steps"]}
    assert len(steps) >= 25, sorted(steps)
    assert steps["preview"]["type"] == "PreviewResult"


if __name__ == "__main__":  # pragma: no cover - `python tests/clients/test_generated_client.py` makes the venv
    print(generator_venv(), file=sys.stderr)
