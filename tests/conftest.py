"""Project-wide fixtures.

Personas (alice = platform admin, bob = viewer, charlie = no role) and one sandbox cluster per session for tests
that talk to a cluster through the gateway (``sandbox``, ``cluster``, ``gateway``). ``tests/sandbox`` overrides
``sandbox`` and ``cluster`` with its own (it tests the sandbox itself, without the gateway).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# CI must be reproducible: the same examples on every run (a failure found locally is kept in the example
# database and replayed). Locally hypothesis explores new examples each run.
hypothesis_settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True, database=None)
hypothesis_settings.register_profile("dev", deadline=None)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "dev")

SLOW_TESTS_FILE = Path(__file__).with_name("slow_tests.txt")


def _measured_slow_tests() -> frozenset[str]:
    """Return the node ids listed in tests/slow_tests.txt: the test cases measured slow."""
    lines = SLOW_TESTS_FILE.read_text(encoding="utf-8").splitlines() if SLOW_TESTS_FILE.exists() else []
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


@pytest.fixture(autouse=True)
def _open_broker_pools():
    """Give each test open broker pools. A test that stops a live server or a worker closes kombu's process-wide
    pools, and the next test in the same process whose code queues a task on commit would otherwise meet
    "Acquire on closed pool" from code that works in production (one pool for the life of the process)."""
    import kombu.pools

    from trainer_portal.celery import app

    candidates = [app.__dict__.get("_pool"), getattr(app.amqp, "_producer_pool", None),
                  *kombu.pools.connections.values(), *kombu.pools.producers.values()]
    if any(getattr(pool, "_closed", False) for pool in candidates if pool is not None):
        kombu.pools.reset()
        app._pool = None
        app.amqp._producer_pool = None
    yield


def pytest_collection_modifyitems(config, items):
    """Mark the tests measured slow (tests/slow_tests.txt) ``slow``, so ``make test-fast`` can leave them out."""
    slow = _measured_slow_tests()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def alice(django_user_model):
    """A platform admin."""
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("alice", password="alice-password-1")
    user.groups.add(Group.objects.get_or_create(name="platform-admin")[0])
    return user


@pytest.fixture
def bob(django_user_model):
    """A viewer (read-only)."""
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("bob", password="bob-password-1")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    return user


@pytest.fixture
def charlie(django_user_model):
    """A logged-in user with no portal role."""
    return django_user_model.objects.create_user("charlie", password="charlie-password-1")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Hash test passwords with MD5: the real hasher costs ~0.5 s per login and proves nothing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _empty_cache():
    """Start every test with an empty cache: rate limits count attempts in it."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _private_var_dir(settings, tmp_path):
    """Give every test its own VAR_DIR: `make run` on the same checkout writes its live snapshot there."""
    settings.VAR_DIR = tmp_path / "var"


@pytest.fixture(scope="session")
def sandbox():
    """A running sandbox cluster (API only: topology none, no controllers), started once per session."""
    from sandbox.testing import SandboxProcess

    with SandboxProcess(topology="none", controllers=False, extra_args=["--bookmark-interval", "0.5"]) as process:
        yield process


@pytest.fixture
def cluster(sandbox, settings):
    """Point the gateway at the session sandbox, freshly reset and without faults; yields the sandbox.

    The gateway is rebuilt for every test, so each test starts with an empty discovery cache of its own.
    """
    from trainer_portal.kube.client import reset_gateway

    sandbox.clear_faults()
    sandbox.reset()
    settings.KUBE_CONFIG_PATH = sandbox.kubeconfig
    settings.KUBE_CONTEXT = ""
    settings.KUBE_IN_CLUSTER = False
    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 5.0
    reset_gateway()
    yield sandbox
    sandbox.clear_faults()
    reset_gateway()


@pytest.fixture
def gateway(cluster):
    """The gateway pointed at the sandbox (see ``cluster``)."""
    from trainer_portal.kube.client import get_gateway

    return get_gateway()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """Keep SQLite test databases in a file, as the portal's own database is.

    An in-memory database is shared between threads through SQLite's shared cache, which refuses a second writer
    at once ("table is locked") whatever the busy timeout; the concurrency suites need the file's real locking.
    """
    from django.conf import settings

    for alias, database in settings.DATABASES.items():
        test = database.setdefault("TEST", {})
        if database["ENGINE"] == "django.db.backends.sqlite3" and not test.get("NAME"):
            test["NAME"] = str(tmp_path_factory.mktemp("database") / f"test_{alias}.sqlite3")


@pytest.fixture(autouse=True)
def _fresh_topology_snapshot_cache():
    """Start every test without this process's cached live snapshots: each test has its own database."""
    from trainer_portal.cluster import snapshots

    snapshots.clear_cache()
    yield
    snapshots.clear_cache()
