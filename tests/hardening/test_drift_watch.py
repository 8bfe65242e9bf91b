"""Drift seen by the cluster watcher: the ClusterTrainingRuntime watch re-checks a policy as soon as its runtime
changes or vanishes, through the real informer hub, against the sandbox (no periodic check involved)."""

from __future__ import annotations

import threading
import time

import pytest

from runtimes.choices import ClusterState, RevisionSource
from runtimes.domain.manifest import new_runtime
from runtimes.handlers import RuntimeDriftHandler
from runtimes.models import PolicySync, RuntimePolicy
from runtimes.services import policies, sync
from trainer_portal import kube
from trainer_portal.cluster import informers
from trainer_portal.kube.client import build_gateway
from trainer_portal.kube.config import KubeSettings

pytestmark = pytest.mark.django_db(transaction=True)


def wait_until(predicate, timeout: float = 15.0):
    """Poll ``predicate`` until truthy; raise AssertionError after ``timeout`` seconds (a bound, not a measure)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


def cluster_state(name: str) -> str:
    return PolicySync.objects.filter(policy__name=name).values_list("cluster_state", flat=True).first()


@pytest.fixture
def eager():
    """Run Celery tasks inline: a sync request applies on commit, in the test's thread."""
    from trainer_portal.celery import app

    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, False
    # An eager call still takes a producer from kombu's process-wide pools; start from fresh ones whatever closed
    # them before.
    from kombu import pools

    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


def applied(alice, name: str, num_nodes: int):
    """Save `name` with `num_nodes` (create or update) and apply it; return the policy."""
    manifest = new_runtime(name, num_nodes=num_nodes, image="busybox:1.37")
    current = RuntimePolicy.objects.filter(name=name).first()
    if current is None:
        policy = policies.policy_create(manifest=manifest, author=alice, message="first", source=RevisionSource.API)
    else:
        policy = policies.policy_update(name=name, manifest=manifest, expected_version=current.version,
                                        author=alice, message="edit", source=RevisionSource.API)
    sync.policy_sync_request(policy=policy)  # applied on commit by the inline task
    row = RuntimePolicy.objects.get(name=name)
    assert (row.sync_state, row.applied_revision) == ("synced", row.version), row.last_sync_error
    return row


@pytest.fixture
def hub(gateway, eager):
    handler = RuntimeDriftHandler()
    hub = informers.InformerHub(gateway=gateway, factories=[lambda: handler], timeout_seconds=5, backoff_max=0.2)
    thread = threading.Thread(target=hub.run, daemon=True)
    thread.start()
    yield handler
    hub.stop.set()
    thread.join(10)
    assert not thread.is_alive(), "the hub did not stop"


def test_an_edit_on_the_cluster_is_drift_and_a_deletion_is_missing_within_seconds(cluster, gateway, alice, hub):
    applied(alice, "watched", 2)
    assert cluster_state("watched") == ClusterState.MATCHES
    ctr = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    other = build_gateway(KubeSettings(config_path=cluster.kubeconfig, field_manager="kubectl-edit"))

    other.apply(ctr, body=new_runtime("watched", num_nodes=7, image="busybox:1.37"), force=True)
    wait_until(lambda: cluster_state("watched") == ClusterState.DRIFTED)
    assert "numNodes: 7" in RuntimePolicy.objects.get(name="watched").drift_diff

    gateway.delete(ctr, name="watched")
    wait_until(lambda: cluster_state("watched") == ClusterState.MISSING)
    assert hub.status()["drifted"] >= 2


def test_the_portals_own_apply_is_no_drift(cluster, gateway, alice, hub):
    applied(alice, "ours", 2)
    row = applied(alice, "ours", 3)

    # The watch delivered our own last apply, and the flush after it is done.
    wait_until(lambda: (hub.live.get("ours") or {}).get("metadata", {}).get("resourceVersion")
               == row.applied_resource_version and hub.status()["pending"] == 0)
    assert cluster_state("ours") == ClusterState.MATCHES
    assert hub.status()["drifted"] == 0


def test_the_policy_app_registers_its_handler_with_the_hub():
    handler = next(factory for factory in informers.registered() if getattr(factory, "name", "") == "runtimes-drift")

    assert handler is RuntimeDriftHandler
    assert (handler.kinds, handler.needs_leader) == ((kube.CLUSTER_TRAINING_RUNTIME,), True)
