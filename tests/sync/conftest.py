"""Fixtures for sync tests: policies in the database and Celery helpers.

The sandbox fixtures (``sandbox``, ``cluster``, ``gateway``) are project-wide, in tests/conftest.py.
"""

from __future__ import annotations

import copy

import pytest

from runtimes.domain.manifest import new_runtime
from trainer_portal import kube


@pytest.fixture
def ctr(gateway):
    """The ClusterTrainingRuntime resource as discovered on the sandbox."""
    return gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)


def runtime_manifest(name: str, *, num_nodes: int = 2, image: str = "busybox:1.37") -> dict:
    """Return a small valid ClusterTrainingRuntime manifest (torch, one trainer rJob)."""
    return new_runtime(name, num_nodes=num_nodes, image=image)


@pytest.fixture
def admin(django_user_model):
    """A superuser acting in services (authorship of revisions)."""
    return django_user_model.objects.create_superuser("root", password="root-password-1")


@pytest.fixture
def make_policy(db, admin):
    """Create a policy from ``runtime_manifest(name, **kwargs)`` through the real service; return it."""
    from runtimes.services.policies import policy_create

    def make(name: str, **kwargs):
        return policy_create(manifest=runtime_manifest(name, **kwargs), author=admin, message="test")

    return make


def edit_policy(policy, admin, **kwargs):
    """Save a new revision of ``policy`` with ``runtime_manifest(policy.name, **kwargs)``; return the policy."""
    from runtimes.services.policies import policy_update

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
