"""Drift detection and resolution, and adoption of runtimes already on the cluster (against the sandbox)."""

from __future__ import annotations

import pytest

from runtimes.choices import RevisionSource, SyncState
from runtimes.domain.drift import REVISION_ANNOTATION
from runtimes.models import PolicyRevision, PolicySync, RuntimePolicy
from runtimes.services import sync
from trainer_portal import kube
from trainer_portal.kube.client import build_gateway
from trainer_portal.kube.config import KubeSettings

from .conftest import runtime_manifest

pytestmark = pytest.mark.django_db


def _sync(policy, force=False):
    revision = sync.policy_sync_request(policy=policy)
    return sync.policy_sync(policy_id=policy.pk, revision=revision, force=force)


@pytest.fixture
def other(cluster):
    """A second client with another field manager, playing `kubectl edit`."""
    return build_gateway(KubeSettings(config_path=cluster.kubeconfig, field_manager="kubectl-edit"))


def test_a_synced_policy_has_no_drift(cluster, make_policy):
    policy = make_policy("calm")
    _sync(policy)
    result = sync.policy_drift_check(policy_id=policy.pk)
    assert result.drifted is False
    assert RuntimePolicy.objects.get(pk=policy.pk).sync_state == SyncState.SYNCED


def test_a_change_by_another_manager_is_drift_naming_that_manager(cluster, ctr, other, make_policy):
    policy = make_policy("edited")
    _sync(policy)
    other.apply(ctr, body=runtime_manifest("edited", num_nodes=7), force=True)

    result = sync.policy_drift_check(policy_id=policy.pk)

    assert result.drifted is True
    assert "kubectl-edit" in result.managers
    assert {"path": "spec.mlPolicy.numNodes", "op": "changed", "ours": 2, "live": 7} in result.changes
    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert row.sync_state == SyncState.DRIFTED
    assert "numNodes: 7" in row.drift_diff
    sync.policy_drift_check(policy_id=policy.pk)  # still drifted: the outbox has one drift event, not one per check
    from runtimes.models import SyncEvent

    assert list(SyncEvent.objects.values_list("policy_name", "kind")) == [("edited", "drift")]


def test_a_field_added_by_another_manager_is_drift(cluster, gateway, ctr, other, make_policy):
    policy = make_policy("labelled")
    _sync(policy)
    extra = runtime_manifest("labelled")
    extra["metadata"]["labels"]["team"] = "vision"
    other.apply(ctr, body=extra)

    result = sync.policy_drift_check(policy_id=policy.pk)

    assert result.drifted is True
    assert any(change["path"] == "metadata.labels.team" for change in result.changes)

    # Re-applying ours with force removes the foreign field too, so the drift is really gone.
    revision = sync.policy_sync_request(policy=RuntimePolicy.objects.get(pk=policy.pk))
    assert sync.policy_sync(policy_id=policy.pk, revision=revision, force=True).outcome == "applied"
    assert "team" not in gateway.get(ctr, name="labelled")["metadata"]["labels"]
    assert sync.policy_drift_check(policy_id=policy.pk).drifted is False


def test_a_deleted_object_is_drift(cluster, gateway, ctr, make_policy):
    policy = make_policy("vanished")
    _sync(policy)
    gateway.delete(ctr, name="vanished")
    result = sync.policy_drift_check(policy_id=policy.pk)
    assert result.drifted and result.missing


def test_the_periodic_check_lists_once_and_flags_only_drifted(cluster, ctr, other, make_policy):
    calm, edited = make_policy("p-calm"), make_policy("p-edited")
    _sync(calm)
    _sync(edited)
    other.apply(ctr, body=runtime_manifest("p-edited", num_nodes=3), force=True)

    drifted = sync.policies_drift_check_all()

    assert [result.name for result in drifted] == ["p-edited"]
    states = dict(PolicySync.objects.values_list("policy__name", "sync_state"))
    assert states == {"p-calm": SyncState.SYNCED, "p-edited": SyncState.DRIFTED}


def test_reapply_forces_ours_back(cluster, gateway, ctr, other, make_policy, admin):
    policy = make_policy("reapplied")
    _sync(policy)
    other.apply(ctr, body=runtime_manifest("reapplied", num_nodes=7), force=True)
    sync.policy_drift_check(policy_id=policy.pk)
    policy.refresh_from_db()

    revision = sync.policy_drift_resolve(policy=policy, action="reapply", actor=admin)
    # Without force, the other manager's ownership of numNodes is a permanent conflict naming it.
    assert sync.policy_sync(policy_id=policy.pk, revision=revision).outcome == "failed"
    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert '"kubectl-edit"' in row.last_sync_error
    revision = sync.policy_sync_request(policy=row)
    assert sync.policy_sync(policy_id=policy.pk, revision=revision, force=True).outcome == "applied"

    assert gateway.get(ctr, name="reapplied")["spec"]["mlPolicy"]["numNodes"] == 2
    assert sync.policy_drift_check(policy_id=policy.pk).drifted is False


def test_adopt_makes_a_new_revision_without_writing(cluster, gateway, ctr, other, make_policy, admin):
    policy = make_policy("adoptee")
    _sync(policy)
    other.apply(ctr, body=runtime_manifest("adoptee", num_nodes=5), force=True)
    sync.policy_drift_check(policy_id=policy.pk)
    live_rv = gateway.get(ctr, name="adoptee")["metadata"]["resourceVersion"]
    policy.refresh_from_db()

    assert sync.policy_drift_resolve(policy=policy, action="adopt", actor=admin) is None

    row = RuntimePolicy.objects.get(pk=policy.pk)
    assert (row.version, row.sync_state, row.applied_revision) == (2, SyncState.SYNCED, 2)
    assert row.manifest["spec"]["mlPolicy"]["numNodes"] == 5
    assert REVISION_ANNOTATION not in (row.manifest["metadata"].get("annotations") or {})
    assert PolicyRevision.objects.get(policy=row, number=2).source == RevisionSource.ADOPT
    assert gateway.get(ctr, name="adoptee")["metadata"]["resourceVersion"] == live_rv
    assert sync.policy_drift_check(policy_id=policy.pk).drifted is False


def test_adoption_imports_every_runtime_once(cluster, ctr, other, admin, make_policy):
    for name in ("adopt-a", "adopt-b"):
        other.apply(ctr, body=runtime_manifest(name))
    make_policy("adopt-b", num_nodes=9)  # already in the portal, different content

    first = sync.policies_adopt(actor=admin)
    second = sync.policies_adopt(actor=admin)

    assert (first.created, first.differing) == (["adopt-a"], ["adopt-b"])
    assert (second.created, second.unchanged, second.differing) == ([], ["adopt-a"], ["adopt-b"])
    adopted = RuntimePolicy.objects.get(name="adopt-a")
    assert adopted.sync_state == SyncState.SYNCED and adopted.applied_revision == 1
    assert list(adopted.revisions.values_list("number", "source")) == [(1, RevisionSource.ADOPT)]
    assert RuntimePolicy.objects.count() == 2


def test_adoption_reports_runtimes_the_portal_refuses(cluster, ctr, other, admin):
    bad = runtime_manifest("adopt-bad")
    bad["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "name"
    ] = "trainer"  # the webhook rule: the trainer ancestor needs a container named "node"
    other.apply(ctr, body=bad)
    result = sync.policies_adopt(actor=admin)
    assert list(result.failed) == ["adopt-bad"]
    assert not RuntimePolicy.objects.filter(name="adopt-bad").exists()


def test_impact_lists_referencing_trainjobs_and_pod_groups(cluster, gateway, make_policy, admin):
    from .conftest import edit_policy

    policy = make_policy("impacted", num_nodes=2)
    _sync(policy)
    gateway.create(kube.CORE_NAMESPACE, body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    trainjobs = gateway.resolve(kube.TRAINJOB)
    gateway.create(trainjobs, body={
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "job-1", "namespace": "team-a"},
        "spec": {"runtimeRef": {"name": "impacted"}},
    })
    policy = edit_policy(policy, admin, num_nodes=4)

    impact = sync.policy_sync_impact(policy=policy, num_nodes=4)

    assert [(job["namespace"], job["name"]) for job in impact["trainjobs"]] == [("team-a", "job-1")]
    assert "created after" in impact["note"]
    assert impact["old"]["total_pods"] == impact["new"]["total_pods"] == 4
    assert "numNodes: 4" in impact["yaml_diff"]
