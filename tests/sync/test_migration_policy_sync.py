"""The migration to sync state per (policy, cluster): a database of the previous release keeps every policy's sync
facts, now on the default cluster, and migrating back restores them."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("runtimes", "0004_cluster_state"), ("cluster", "0001_initial")]
AFTER = [("runtimes", "0005_policy_sync_per_cluster")]
SYNCED_AT = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)

pytestmark = pytest.mark.django_db(transaction=True)


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


@pytest.fixture
def previous_release():
    """The schema of the previous release; the latest schema is restored afterwards for the next tests."""
    apps = _migrate(BEFORE)
    yield apps
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_sync_fields_move_to_the_default_cluster_and_back(previous_release):
    old = previous_release.get_model("runtimes", "RuntimePolicy")
    old.objects.create(
        name="drifted-one", manifest={"kind": "ClusterTrainingRuntime"}, version=3, sync_state="drifted",
        sync_requested_revision=3, applied_revision=2, applied_resource_version="41", applied_generation=5,
        last_synced_at=SYNCED_AT, last_sync_error="", sync_error_fields=[], drift_diff="- a\n+ b",
        cluster_state="drifted", sync_startup_deadlock_confirmed=True,
    )
    old.objects.create(
        name="failed-one", manifest={"kind": "ClusterTrainingRuntime"}, version=1, sync_state="failed",
        sync_requested_revision=1, last_sync_error="refused", sync_error_fields=[{"path": "spec", "message": "x"}],
    )
    old.objects.create(name="draft-one", manifest={"kind": "ClusterTrainingRuntime"}, version=1)
    default_name = previous_release.get_model("cluster", "Cluster").objects.get(is_default=True).name

    apps = _migrate(AFTER)
    rows = {
        row["policy__name"]: row
        for row in apps.get_model("runtimes", "PolicySync").objects.values(
            "policy__name", "cluster__name", "sync_state", "sync_requested_revision", "applied_revision",
            "applied_resource_version", "applied_generation", "last_synced_at", "last_sync_error",
            "sync_error_fields", "drift_diff", "cluster_state", "sync_startup_deadlock_confirmed",
        )
    }
    assert set(rows) == {"drifted-one", "failed-one", "draft-one"}
    assert {row["cluster__name"] for row in rows.values()} == {default_name}
    drifted = rows["drifted-one"]
    assert (drifted["sync_state"], drifted["sync_requested_revision"], drifted["applied_revision"]) == ("drifted", 3, 2)
    assert (drifted["applied_resource_version"], drifted["applied_generation"]) == ("41", 5)
    assert drifted["last_synced_at"] == SYNCED_AT
    assert (drifted["drift_diff"], drifted["cluster_state"], drifted["sync_startup_deadlock_confirmed"]) == (
        "- a\n+ b", "drifted", True
    )
    assert (rows["failed-one"]["sync_state"], rows["failed-one"]["last_sync_error"]) == ("failed", "refused")
    assert rows["failed-one"]["sync_error_fields"] == [{"path": "spec", "message": "x"}]
    assert (rows["draft-one"]["sync_state"], rows["draft-one"]["cluster_state"]) == ("draft", "not_applied")
    policy_fields = {f.name for f in apps.get_model("runtimes", "RuntimePolicy")._meta.get_fields()}
    assert not policy_fields & {"sync_state", "applied_revision", "drift_diff", "cluster_state"}

    apps = _migrate(BEFORE)
    restored = dict(apps.get_model("runtimes", "RuntimePolicy").objects.values_list("name", "sync_state"))
    assert restored == {"drifted-one": "drifted", "failed-one": "failed", "draft-one": "draft"}
    back = apps.get_model("runtimes", "RuntimePolicy").objects.get(name="drifted-one")
    assert (back.applied_revision, back.applied_resource_version, back.drift_diff) == (2, "41", "- a\n+ b")


def test_the_migrated_policies_read_as_before_through_the_models(previous_release):
    old = previous_release.get_model("runtimes", "RuntimePolicy")
    old.objects.create(
        name="synced-one", manifest={"kind": "ClusterTrainingRuntime"}, version=2, sync_state="synced",
        sync_requested_revision=2, applied_revision=2, cluster_state="matches",
    )
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    from runtimes import selectors

    policy = selectors.policy_get(name="synced-one")
    assert (policy.sync_state, policy.applied_revision, policy.sync_status.code) == ("synced", 2, "synced")
    assert [row["state"] for row in policy.cluster_rows] == ["synced"]
    assert [p.name for p in selectors.policy_list(sync_status="synced")] == ["synced-one"]
