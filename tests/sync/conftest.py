"""Fixtures for sync tests: a sandbox cluster, the gateway pointed at it, and policies in the database."""

from __future__ import annotations

import copy

import pytest

from sandbox.testing import SandboxProcess
from trainer_portal import kube


@pytest.fixture(scope="session")
def sandbox():
    """A running sandbox cluster (API only, no nodes, no controllers), started once per session."""
    with SandboxProcess(topology="none", controllers=False, extra_args=["--bookmark-interval", "0.5"]) as process:
        yield process


@pytest.fixture
def cluster(sandbox, settings, tmp_path):
    """Point the gateway at a freshly reset sandbox without faults; yields the sandbox."""
    sandbox.clear_faults()
    sandbox.reset()
    settings.KUBE_CONFIG_PATH = sandbox.kubeconfig
    settings.KUBE_CONTEXT = ""
    settings.KUBE_IN_CLUSTER = False
    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 5.0
    settings.VAR_DIR = tmp_path / "var"
    kube.reset_gateway()
    yield sandbox
    sandbox.clear_faults()
    kube.reset_gateway()


@pytest.fixture
def gateway(cluster):
    """The gateway for the sandbox."""
    return kube.get_gateway()


@pytest.fixture
def ctr(gateway):
    """The ClusterTrainingRuntime resource as discovered on the sandbox."""
    return gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)


def runtime_manifest(name: str, *, num_nodes: int = 2, image: str = "busybox:1.37") -> dict:
    """Return a small valid ClusterTrainingRuntime manifest (torch, one trainer rJob)."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": num_nodes, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {"template": {"spec": {"containers": [{"name": "node", "image": image}]}}},
                            },
                        }
                    ]
                }
            },
        },
    }


@pytest.fixture
def admin(django_user_model):
    """A superuser acting in services (authorship of revisions)."""
    return django_user_model.objects.create_superuser("root", password="root-password-1")


@pytest.fixture
def make_policy(db, admin):
    """Create a policy from ``runtime_manifest(name, **kwargs)`` through the real service; return it."""
    from runtimes.services import policy_create

    def make(name: str, **kwargs):
        return policy_create(manifest=runtime_manifest(name, **kwargs), author=admin, message="test")

    return make


def edit_policy(policy, admin, **kwargs):
    """Save a new revision of ``policy`` with ``runtime_manifest(policy.name, **kwargs)``; return the policy."""
    from runtimes.services import policy_update

    return policy_update(
        name=policy.name,
        manifest=runtime_manifest(policy.name, **kwargs),
        expected_version=policy.version,
        author=admin,
        message="edit",
    )


def copy_manifest(manifest: dict) -> dict:
    return copy.deepcopy(manifest)


@pytest.fixture
def eager_celery():
    """Run Celery tasks inline (retries included, countdowns ignored) for the duration of a test."""
    from trainer_portal.celery import app

    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = False  # True would raise Retry instead of re-running the task inline
    yield app
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


@pytest.fixture
def retries():
    """Record the names of tasks that asked to be retried."""
    from celery.signals import task_retry

    seen: list[str] = []

    def record(sender=None, request=None, reason=None, **kwargs):
        seen.append(getattr(sender, "name", str(sender)))

    task_retry.connect(record, weak=False)
    yield seen
    task_retry.disconnect(record)
