"""A real Celery worker process: bulk apply under faults, and SIGKILL in the middle of a bulk apply.

Needs a database another process can open (PostgreSQL in CI; the in-memory SQLite test database cannot be shared,
so these tests skip there). The broker is Redis when CELERY_BROKER_URL is set, the filesystem broker otherwise.
"""

from __future__ import annotations

import time

import pytest

from runtimes.choices import SyncState
from runtimes.domain.drift import REVISION_ANNOTATION
from runtimes.models import PolicySync, RuntimePolicy
from runtimes.services import sync
from trainer_portal.celery import app as portal_app

from .conftest import edit_policy
from .worker import WorkerProcess, database_url

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]



@pytest.fixture
def worker(cluster, tmp_path):
    url = database_url()
    if url is None:
        pytest.skip("the worker needs a database it can open too: run with DATABASE_URL=postgres://… (CI does)")
    workers: list[WorkerProcess] = []

    def start() -> WorkerProcess:
        process = WorkerProcess(kubeconfig=cluster.kubeconfig, var_dir=tmp_path / "var", db_url=url)
        if workers:
            process.queue = workers[0].queue  # a restart consumes the same queue
            process.env["CELERY_TASK_DEFAULT_QUEUE"] = process.queue
        else:
            # The services enqueue their own tasks on commit: publish them to this worker, as a web process would.
            process.publisher().set_current()
        workers.append(process)
        return process.start()

    yield start
    portal_app.set_current()
    for process in workers:
        process.stop()


def _states() -> dict[str, tuple[str, int | None, int]]:
    return {name: (state, applied, version) for name, state, applied, version in
            PolicySync.objects.values_list("policy__name", "sync_state", "applied_revision", "policy__version")}


def _wait_converged(names, timeout: float = 90.0, worker=None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        states = _states()
        if all(states[n][0] == SyncState.SYNCED and states[n][1] == states[n][2] for n in names):
            return
        if time.monotonic() > deadline:
            pending = {n: s for n, s in states.items() if not (s[0] == SyncState.SYNCED and s[1] == s[2])}
            raise AssertionError(f"not converged: {pending}\n{worker.log()[-3000:] if worker else ''}")
        time.sleep(0.2)


def test_a_worker_applies_a_bulk_despite_503s_timeouts_and_dropped_connections(cluster, gateway, ctr, make_policy,
                                                                               worker):
    names = [f"w-{index:02d}" for index in range(20)]
    for name in names:
        make_policy(name)
    process = worker()
    cluster.inject_fault(method="PATCH", path="clustertrainingruntimes", action="status", status=503, count=6)
    cluster.inject_fault(method="GET", path="clustertrainingruntimes/w-0", action="drop", count=3)
    cluster.inject_fault(method="GET", path="clustertrainingruntimes/w-1", action="hang", seconds=4, count=2)

    sync.policies_sync_request()  # enqueues the bulk task on commit, as the bulk sync page and API do

    _wait_converged(names, worker=process)
    live = gateway.list(ctr).items
    assert sorted(obj["metadata"]["name"] for obj in live) == names
    assert {obj["metadata"]["generation"] for obj in live} == {1}


def test_a_worker_killed_mid_bulk_converges_after_restart_with_the_newest_revisions(
    cluster, gateway, ctr, make_policy, worker, admin
):
    names = [f"k-{index:02d}" for index in range(40)]
    for name in names:
        make_policy(name)
    process = worker()
    # Transient failures slow the bulk down (retries back off), so the kill lands in the middle of it.
    cluster.inject_fault(method="PATCH", path="clustertrainingruntimes", action="status", status=503, count=25)
    sync.policies_sync_request()

    deadline = time.monotonic() + 60
    while sum(state == SyncState.SYNCED for state, _, _ in _states().values()) < 3:
        assert time.monotonic() < deadline, process.log()[-3000:]
        time.sleep(0.05)
    process.kill()
    synced_at_kill = sum(state == SyncState.SYNCED for state, _, _ in _states().values())
    assert synced_at_kill < len(names), "the bulk finished before the kill; the test proved nothing"

    # While no worker runs, five policies get a newer revision; the older messages are still around.
    edited = names[-5:]
    written_before_edit = {name for name in edited if gateway.get(ctr, name=name) is not None}
    for name in edited:
        policy = edit_policy(RuntimePolicy.objects.get(name=name), admin, num_nodes=7)
        sync.policy_sync_request(policy=policy)  # queued for the worker that is not running yet

    restarted = worker()
    _wait_converged(names, worker=restarted)

    live = {obj["metadata"]["name"]: obj for obj in gateway.list(ctr).items}
    assert sorted(live) == names
    for name in names:
        expected_nodes = 7 if name in edited else 2
        assert live[name]["spec"]["mlPolicy"]["numNodes"] == expected_nodes, name
        expected_revision = "2" if name in edited else "1"
        assert live[name]["metadata"]["annotations"][REVISION_ANNOTATION] == expected_revision
    # Never rewritten with stale content: one spec write per revision that reached the cluster.
    assert {name: live[name]["metadata"]["generation"] for name in names} == {
        name: 2 if name in written_before_edit else 1 for name in names
    }
