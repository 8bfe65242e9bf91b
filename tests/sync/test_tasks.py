"""Celery tasks run inline: transient errors retry and converge, permanent ones fail at once, fan-out works."""

from __future__ import annotations

import pytest

from runtimes.choices import SyncState
from runtimes.models import PolicyRevision, PolicySync, RuntimePolicy
from runtimes.services import sync, sync_batches
from runtimes.tasks import (
    policies_bulk_sync_task,
    policies_drift_check_task,
    policies_requeue_unfinished_task,
    policy_sync_task,
)

from .conftest import runtime_manifest

pytestmark = pytest.mark.django_db


def test_transient_errors_are_retried_until_the_policy_converges(cluster, gateway, ctr, make_policy, eager_celery,
                                                                 retries):
    policy = make_policy("retried")
    revision = sync.policy_sync_request(policy=policy)
    cluster.inject_fault(method="PATCH", path="clustertrainingruntimes", action="status", status=503, count=2)
    cluster.inject_fault(method="GET", path="clustertrainingruntimes", action="status", status=429, count=1)

    policy_sync_task.delay(policy.pk, revision)

    assert len(retries) == 3
    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert (row.sync_state, row.applied_revision, row.last_sync_error) == (SyncState.SYNCED, 1, "")
    assert gateway.get(ctr, name="retried")["metadata"]["generation"] == 1


def test_a_timeout_is_retried(cluster, settings, make_policy, eager_celery, retries):
    settings.KUBE_REQUEST_TIMEOUT_SECONDS = 0.5
    policy = make_policy("slow")
    revision = sync.policy_sync_request(policy=policy)
    cluster.inject_fault(method="GET", path="clustertrainingruntimes/slow", action="hang", seconds=2, count=1)

    policy_sync_task.delay(policy.pk, revision)

    assert len(retries) == 1
    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.SYNCED


def test_an_invalid_object_fails_at_once_with_the_servers_message(cluster, gateway, ctr, make_policy, eager_celery,
                                                                   retries):
    policy = make_policy("invalid")
    bad = runtime_manifest("invalid")
    bad["spec"]["mlPolicy"]["numNodes"] = "lots"
    PolicyRevision.objects.filter(policy=policy, number=1).update(manifest=bad)
    revision = sync.policy_sync_request(policy=policy)

    outcome = policy_sync_task.delay(policy.pk, revision).get()

    assert outcome == "failed"
    assert retries == []
    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert row.sync_state == SyncState.FAILED
    assert row.last_sync_error.startswith('ClusterTrainingRuntime.trainer.kubeflow.org "invalid" is invalid')
    assert gateway.get(ctr, name="invalid") is None


def test_retries_that_run_out_record_a_failure(cluster, make_policy, eager_celery, retries):
    policy = make_policy("doomed")
    revision = sync.policy_sync_request(policy=policy)
    attempts = policy_sync_task.max_retries + 1
    cluster.inject_fault(method="GET", path="clustertrainingruntimes/doomed", action="status", status=500,
                         count=attempts)

    assert policy_sync_task.delay(policy.pk, revision).get() == "failed"

    assert len(retries) == policy_sync_task.max_retries
    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert row.sync_state == SyncState.FAILED
    assert row.last_sync_error.startswith("Gave up after repeated transient errors: injected fault")


def test_bulk_fan_out_under_faults_converges_without_duplicates(cluster, gateway, ctr, make_policy, eager_celery):
    for index in range(12):
        make_policy(f"fan-{index:02d}")
    batch = sync.policies_sync_request()
    items = batch.items
    cluster.inject_fault(method="PATCH", path="clustertrainingruntimes", action="status", status=503, count=5)
    cluster.inject_fault(method="GET", path="clustertrainingruntimes", action="drop", count=2)

    # Items without a cluster, as queued before clusters existed: the default cluster.
    policies_bulk_sync_task.delay([[pid, rev] for pid, rev, _ in items])

    progress = sync_batches.sync_batch_progress(batch_id=batch.id.hex)
    assert (progress["succeeded"], progress["failed"], progress["finished"]) == (12, [], True)
    live = gateway.list(ctr).items
    assert sorted(obj["metadata"]["name"] for obj in live) == [f"fan-{i:02d}" for i in range(12)]
    assert {obj["metadata"]["generation"] for obj in live} == {1}


def test_requeue_picks_up_unfinished_rows(cluster, make_policy, eager_celery):
    policy = make_policy("stuck")
    sync.policy_sync_request(policy=policy)
    PolicySync.objects.filter(policy=policy).update(sync_state=SyncState.SYNCING)

    assert policies_requeue_unfinished_task.delay().get() == 1

    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.SYNCED


def test_the_periodic_drift_check_task_flags_drift(cluster, ctr, make_policy, eager_celery):
    from trainer_portal.kube.client import build_gateway
    from trainer_portal.kube.config import KubeSettings

    policy = make_policy("beat")
    policy_sync_task.delay(policy.pk, sync.policy_sync_request(policy=policy))
    other = build_gateway(KubeSettings(config_path=cluster.kubeconfig, field_manager="kubectl-edit"))
    other.apply(ctr, body=runtime_manifest("beat", num_nodes=11), force=True)

    assert policies_drift_check_task.delay().get() == 1
    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.DRIFTED
