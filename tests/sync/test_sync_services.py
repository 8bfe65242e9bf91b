"""Sync services against the sandbox: state machine, no-op resync, dry-run errors, newer revision wins."""

from __future__ import annotations

import uuid

import pytest
from django.utils import timezone

from runtimes.choices import SyncState
from runtimes.domain.drift import REVISION_ANNOTATION
from runtimes.models import PolicyRevision, PolicySync, RuntimePolicy, SyncBatch
from runtimes.services import sync, sync_batches
from runtimes.services.clusters import default_cluster
from trainer_portal import kube

from .conftest import edit_policy, runtime_manifest

pytestmark = pytest.mark.django_db


def _synced(policy, **kwargs):
    revision = sync.policy_sync_request(policy=policy)
    return sync.policy_sync(policy_id=policy.pk, revision=revision, **kwargs)


def test_it_queues_then_applies_and_records_the_result(cluster, gateway, ctr, make_policy):
    policy = make_policy("alpha")
    assert policy.sync_state == SyncState.DRAFT
    revision = sync.policy_sync_request(policy=policy)
    assert revision == 1
    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.QUEUED

    result = sync.policy_sync(policy_id=policy.pk, revision=1)

    assert result.outcome == "applied"
    live = gateway.get(ctr, name="alpha")
    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert row.sync_state == SyncState.SYNCED
    assert (row.applied_revision, row.applied_generation) == (1, 1)
    assert row.applied_resource_version == live["metadata"]["resourceVersion"]
    assert row.last_synced_at is not None and row.last_sync_error == ""
    assert live["spec"]["mlPolicy"]["numNodes"] == 2
    assert live["metadata"]["annotations"][REVISION_ANNOTATION] == "1"
    assert [m["manager"] for m in live["metadata"]["managedFields"]] == ["trainer-portal"]


def test_an_unchanged_policy_is_not_rewritten(cluster, gateway, ctr, make_policy):
    policy = make_policy("steady")
    _synced(policy)
    before = gateway.get(ctr, name="steady")["metadata"]["resourceVersion"]

    result = _synced(policy)

    assert result.outcome == "unchanged"
    assert gateway.get(ctr, name="steady")["metadata"]["resourceVersion"] == before
    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.SYNCED


def test_a_new_revision_is_applied_and_bumps_the_generation(cluster, gateway, ctr, make_policy, admin):
    policy = make_policy("grow")
    _synced(policy)
    policy = edit_policy(policy, admin, num_nodes=4)

    result = _synced(policy)

    assert result.outcome == "applied"
    live = gateway.get(ctr, name="grow")
    assert live["spec"]["mlPolicy"]["numNodes"] == 4
    assert live["metadata"]["generation"] == 2
    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert (row.applied_revision, row.applied_generation) == (2, 2)


def test_server_validation_errors_are_recorded_field_by_field(cluster, gateway, ctr, make_policy):
    policy = make_policy("broken")
    bad = runtime_manifest("broken")
    bad["spec"]["mlPolicy"]["numNodes"] = "many"  # passes nothing on the server: numNodes is an integer
    PolicyRevision.objects.filter(policy=policy, number=1).update(manifest=bad)

    result = _synced(policy)

    assert result.outcome == "failed"
    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert row.sync_state == SyncState.FAILED
    assert "must be of type integer" in row.last_sync_error
    assert [field["path"] for field in row.sync_error_fields] == ["spec.mlPolicy.numNodes"]
    assert gateway.get(ctr, name="broken") is None  # the dry run stopped it
    from runtimes.models import SyncEvent

    assert list(SyncEvent.objects.values_list("policy_name", "kind", "revision")) == [("broken", "sync_failed", 1)]


def test_a_transient_error_is_raised_for_retry_and_leaves_the_state_syncing(cluster, make_policy):
    policy = make_policy("flaky")
    revision = sync.policy_sync_request(policy=policy)
    cluster.inject_fault(method="PATCH", path="clustertrainingruntimes", action="status", status=503, count=1)

    with pytest.raises(kube.KubeUnavailable):
        sync.policy_sync(policy_id=policy.pk, revision=revision)

    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert row.sync_state == SyncState.SYNCING
    assert row.last_sync_error.startswith("Retrying:")
    assert sync.policy_sync(policy_id=policy.pk, revision=revision).outcome == "applied"


def test_a_superseded_revision_does_nothing(cluster, gateway, ctr, make_policy, admin):
    policy = make_policy("racy")
    old = sync.policy_sync_request(policy=policy)
    policy = edit_policy(policy, admin, num_nodes=8)
    new = sync.policy_sync_request(policy=policy)

    assert sync.policy_sync(policy_id=policy.pk, revision=old).outcome == "superseded"
    assert gateway.get(ctr, name="racy") is None
    assert sync.policy_sync(policy_id=policy.pk, revision=new).outcome == "applied"
    assert gateway.get(ctr, name="racy")["spec"]["mlPolicy"]["numNodes"] == 8


class InterleavingGateway:
    """The real gateway, with a hook run right before the first real (non-dry-run) apply.

    It lets a test put "the user saved and synced a newer revision" exactly between our read of the live object and
    our write, which is the race the resourceVersion precondition and the compare-and-set must win.
    """

    def __init__(self, gateway, hook):
        self._gateway = gateway
        self._hook = hook

    def __getattr__(self, name):
        return getattr(self._gateway, name)

    def apply(self, resource, *, body, force=False, dry_run=False):
        if not dry_run and self._hook is not None:
            hook, self._hook = self._hook, None
            hook()
        return self._gateway.apply(resource, body=body, force=force, dry_run=dry_run)


def test_an_older_apply_in_flight_does_not_overwrite_a_newer_revision(cluster, gateway, ctr, make_policy, admin):
    policy = make_policy("inflight")
    _synced(policy)  # the object exists: the older apply will carry a resourceVersion precondition
    policy = edit_policy(policy, admin, num_nodes=3)
    older = sync.policy_sync_request(policy=policy)

    def newer_saved_and_synced():
        newer_policy = edit_policy(RuntimePolicy.objects.get(pk=policy.pk), admin, num_nodes=9)
        newer = sync.policy_sync_request(policy=newer_policy)
        assert sync.policy_sync(policy_id=policy.pk, revision=newer).outcome == "applied"

    with pytest.raises(kube.KubeConflict) as caught:
        sync.policy_sync(
            policy_id=policy.pk, revision=older, gateway=InterleavingGateway(gateway, newer_saved_and_synced)
        )
    assert caught.value.permanent is False

    # The retry of the older revision finds a newer one requested and stops.
    assert sync.policy_sync(policy_id=policy.pk, revision=older).outcome == "superseded"
    assert gateway.get(ctr, name="inflight")["spec"]["mlPolicy"]["numNodes"] == 9
    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert (row.sync_state, row.applied_revision) == (SyncState.SYNCED, 3)


def test_an_older_create_that_lands_last_asks_for_the_newer_revision_again(cluster, gateway, ctr, make_policy, admin):
    policy = make_policy("firstrace")
    older = sync.policy_sync_request(policy=policy)

    def newer_saved_and_synced():
        newer_policy = edit_policy(RuntimePolicy.objects.get(pk=policy.pk), admin, num_nodes=6)
        newer = sync.policy_sync_request(policy=newer_policy)
        assert sync.policy_sync(policy_id=policy.pk, revision=newer).outcome == "applied"

    result = sync.policy_sync(
        policy_id=policy.pk, revision=older, gateway=InterleavingGateway(gateway, newer_saved_and_synced)
    )

    # Nothing existed, so no precondition could stop the older write; the service notices and asks for a resync.
    assert result.outcome == "superseded" and result.requeue is True
    revision = sync.policy_sync_request(policy=RuntimePolicy.objects.get(pk=policy.pk))
    assert sync.policy_sync(policy_id=policy.pk, revision=revision).outcome == "applied"
    assert gateway.get(ctr, name="firstrace")["spec"]["mlPolicy"]["numNodes"] == 6


def test_a_duplicate_message_for_a_done_revision_is_skipped(cluster, make_policy):
    policy = make_policy("twice")
    revision = sync.policy_sync_request(policy=policy)
    assert sync.policy_sync(policy_id=policy.pk, revision=revision).outcome == "applied"
    assert sync.policy_sync(policy_id=policy.pk, revision=revision).outcome == "skipped"


def test_a_redelivered_message_takes_over_a_syncing_row(cluster, make_policy):
    policy = make_policy("orphan")
    revision = sync.policy_sync_request(policy=policy)
    # A worker died after moving the row to syncing.
    PolicySync.objects.filter(policy=policy).update(sync_state=SyncState.SYNCING)
    assert sync.policies_unfinished() == [(policy.pk, revision, default_cluster().pk)]
    assert sync.policy_sync(policy_id=policy.pk, revision=revision).outcome == "applied"
    assert sync.policies_unfinished() == []


def test_bulk_progress_counts_successes_and_lists_failures(cluster, make_policy):
    good = [make_policy(f"bulk-{i}") for i in range(3)]
    bad = make_policy("bulk-bad")
    broken = runtime_manifest("bulk-bad")
    broken["spec"]["mlPolicy"]["numNodes"] = "x"
    PolicyRevision.objects.filter(policy=bad, number=1).update(manifest=broken)
    batch = sync.policies_sync_request()
    items = batch.items
    assert sync_batches.sync_batch_progress(batch_id=batch.id.hex)["pending"] == 4

    for policy_id, revision, cluster_id in items[:2]:
        sync.policy_sync(policy_id=policy_id, revision=revision, cluster_id=cluster_id)
    halfway = sync_batches.sync_batch_progress(batch_id=batch.id.hex)
    assert (halfway["done"], halfway["total"], halfway["finished"]) == (2, 4, False)

    for policy_id, revision, cluster_id in items[2:]:
        sync.policy_sync(policy_id=policy_id, revision=revision, cluster_id=cluster_id)
    done = sync_batches.sync_batch_progress(batch_id=batch.id.hex)
    assert (done["succeeded"], done["finished"]) == (3, True)
    assert [f["name"] for f in done["failed"]] == ["bulk-bad"]
    assert len(good) == 3


def test_bulk_request_refuses_unknown_names(make_policy):
    make_policy("known")
    from runtimes.errors import UnknownPolicies

    with pytest.raises(UnknownPolicies, match="nope"):
        sync.policies_sync_request(names=["known", "nope"])
    assert RuntimePolicy.objects.get(name="known").sync_state == SyncState.DRAFT
    assert SyncBatch.objects.count() == 0


def test_requesting_a_revision_already_on_its_way_changes_nothing(make_policy):
    policy = make_policy("again")
    assert sync.policy_sync_request(policy=policy) == 1
    PolicySync.objects.filter(policy=policy).update(sync_state=SyncState.SYNCING)
    assert sync.policy_sync_request(policy=policy) == 1
    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.SYNCING


def test_bulk_progress_is_read_from_the_database_and_unknown_ids_are_refused(make_policy):
    from django.core.cache import cache

    from runtimes.errors import SyncBatchNotFound

    make_policy("filed")
    batch = sync.policies_sync_request()
    cache.clear()  # another web process shares the database, not a cache
    assert sync_batches.sync_batch_progress(batch_id=batch.id.hex)["total"] == 1
    assert sync_batches.sync_batch_progress(batch_id=str(batch.id))["id"] == batch.id.hex
    for bad in ("../../etc", "0123", uuid.uuid4().hex):
        with pytest.raises(SyncBatchNotFound):
            sync_batches.sync_batch_progress(batch_id=bad)


def test_old_batches_are_removed_when_a_new_one_is_created(make_policy):
    make_policy("aged")
    old = sync.policies_sync_request()
    SyncBatch.objects.filter(pk=old.pk).update(created_at=timezone.now() - sync_batches.SYNC_BATCH_RETENTION * 2)
    new = sync.policies_sync_request()
    assert list(SyncBatch.objects.values_list("pk", flat=True)) == [new.pk]


def test_cluster_delete_removes_the_runtime_and_makes_the_policy_a_draft(cluster, gateway, ctr, make_policy):
    policy = make_policy("del-me")
    sync.policy_sync(policy_id=policy.pk, revision=sync.policy_sync_request(policy=policy))
    assert gateway.get(ctr, name="del-me") is not None

    assert sync.policy_cluster_delete(policy=policy) is True

    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert gateway.get(ctr, name="del-me") is None
    assert (row.sync_state, row.applied_revision, row.applied_resource_version, row.applied_generation) == (
        SyncState.DRAFT, None, "", None
    )
    assert sync.policy_cluster_delete(policy=policy) is False  # not there any more: nothing to delete


def test_cluster_delete_changes_no_row_when_the_cluster_refuses(cluster, make_policy):
    policy = make_policy("del-refused")
    sync.policy_sync(policy_id=policy.pk, revision=sync.policy_sync_request(policy=policy))
    cluster.inject_fault(method="DELETE", path="clustertrainingruntimes/del-refused", action="status", status=500,
                         count=5)
    with pytest.raises(kube.KubeUnavailable):
        sync.policy_cluster_delete(policy=policy)
    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.SYNCED


def test_a_drift_resolve_of_a_policy_that_is_not_drifted_is_refused(make_policy, admin):
    from runtimes.errors import SyncRefused

    policy = make_policy("not-drifted")
    with pytest.raises(SyncRefused, match="not drifted"):
        sync.policy_drift_resolve(policy=policy, action="reapply", actor=admin)
    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.DRAFT
