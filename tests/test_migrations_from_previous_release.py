"""A database made by the previous release (one cluster, no cluster app) migrates forward: every TrainJob,
transition, grant and the tracker status belong to the default cluster, named from today's settings.

The database is taken back to the previous release's leaf migrations with Django's MigrationExecutor, filled through
the historical models, and migrated forward to the current leaves.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# The leaves of the previous release (before clusters were data).
PREVIOUS_RELEASE = [("jobs", "0005_live_order_index"), ("runtimes", "0004_cluster_state"),
                    ("trainer_portal", "0001_roles"), ("cluster", None)]


def _migrate(targets):
    """Migrate the test database to ``targets``; return the historical apps of the state reached."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    state = executor.migrate(targets)
    return state.apps


@pytest.mark.django_db(transaction=True)
def test_rows_of_the_previous_release_move_to_the_default_cluster(monkeypatch):
    monkeypatch.setenv("TRAINER_PORTAL_KUBE_CONTEXT", "Prod_GPU.east")
    old = _migrate(PREVIOUS_RELEASE)
    with pytest.raises(LookupError):
        old.get_model("cluster", "Cluster")
    now = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)
    Group, TrainJob = old.get_model("auth", "Group"), old.get_model("jobs", "TrainJob")
    Transition, Grant = old.get_model("jobs", "TrainJobTransition"), old.get_model("jobs", "NamespaceGrant")
    TrackerStatus = old.get_model("jobs", "TrackerStatus")
    team = Group.objects.create(name="team-a-ml")
    jobs = [TrainJob.objects.create(uid=f"uid-{n}", namespace="team-a", name=f"job-{n}", state="running",
                                    since=now, submitted_at=now, change_seq=n) for n in range(3)]
    for job in jobs:
        Transition.objects.create(job=job, from_state="", to_state="running", at=now, seq=job.change_seq)
    Grant.objects.create(group=team, namespace="team-a")
    TrackerStatus.objects.create(pk=1, holder="watcher-1", heartbeat_at=now, connected=True, synced=True)

    apps = _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    Cluster = apps.get_model("cluster", "Cluster")
    default = Cluster.objects.get()
    assert (default.name, default.is_default, default.connection) == ("prod-gpu-east", True, "settings")
    for name in ("TrainJob", "TrainJobTransition", "NamespaceGrant", "TrackerStatus"):
        model = apps.get_model("jobs", name)
        assert model.objects.count() > 0, name
        assert set(model.objects.values_list("cluster_id", flat=True)) == {default.pk}, name
    assert apps.get_model("jobs", "TrainJob").objects.count() == 3
    assert apps.get_model("jobs", "TrainJobTransition").objects.count() == 3
    # UIDs are unique per cluster now: the same UID on another cluster is another job.
    other = Cluster.objects.create(name="gpu-west", connection="in_cluster")
    apps.get_model("jobs", "TrainJob").objects.create(cluster=other, uid="uid-0", namespace="team-a", name="job-0",
                                                     state="running", since=now, submitted_at=now)
    assert apps.get_model("jobs", "TrainJob").objects.filter(uid="uid-0").count() == 2
