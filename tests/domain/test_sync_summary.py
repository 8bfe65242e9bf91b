"""The policy-wide view of a policy's per-cluster sync rows (pure rules of `runtimes.domain.status`)."""

from __future__ import annotations

from runtimes.domain.status import SyncFacts, describe_clusters, summarize


def synced(cluster: str, revision: int = 2, **kwargs) -> SyncFacts:
    return SyncFacts(cluster=cluster, state="synced", applied_revision=revision, requested_revision=revision,
                     cluster_state="matches", **kwargs)


def test_one_cluster_is_its_own_summary():
    one = SyncFacts(cluster="east", is_default=True, state="failed", requested_revision=3, applied_revision=2,
                    resource_version="9", error="refused", error_fields=[{"path": "spec"}], cluster_state="matches")
    summary = summarize(3, [one])
    assert (summary.state, summary.applied_revision, summary.requested_revision) == ("failed", 2, 3)
    assert (summary.error, summary.error_fields, summary.resource_version) == ("refused", [{"path": "spec"}], "9")


def test_the_most_urgent_cluster_wins_and_the_applied_revision_is_the_one_everywhere():
    facts = [synced("east", 2, is_default=True, resource_version="5"),
             SyncFacts(cluster="west", state="drifted", applied_revision=1, cluster_state="missing",
                       drift_diff="-a")]
    summary = summarize(2, facts)
    assert (summary.state, summary.cluster_state, summary.applied_revision) == ("drifted", "missing", 1)
    assert summary.resource_version == "5"  # the default cluster's
    assert summary.drift_diff == "# cluster west\n-a"
    assert summarize(2, [*facts, SyncFacts(cluster="north")]).state == "draft"  # never reached there
    assert summarize(2, [*facts, SyncFacts(cluster="x", state="failed", error="no")]).error == "x: no"


def test_no_target_cluster_is_a_draft():
    summary = summarize(1, [])
    assert (summary.state, summary.applied_revision, summary.cluster_state) == ("draft", None, "not_applied")
    assert describe_clusters(1, []) == "no target cluster"


def test_the_clusters_at_a_glance():
    assert describe_clusters(2, [synced("east"), synced("west")]) == "synced on 2 of 2 clusters"
    assert describe_clusters(2, [synced("east")]) == "synced on 1 of 1 cluster"
    drifted = SyncFacts(cluster="west", state="drifted", applied_revision=2, cluster_state="drifted")
    assert describe_clusters(2, [synced("east"), drifted]) == "synced on 1 of 2 clusters; drifted on west"
    assert describe_clusters(3, [synced("east"), synced("west")]) == "out of sync on east, west"
    assert describe_clusters(2, [SyncFacts(cluster="a"), SyncFacts(cluster="b", state="queued")]) == (
        "queued on b; not applied on a"
    )
