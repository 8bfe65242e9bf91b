"""The demo storyline, played ten times faster on a demo sandbox: every state a TrainJob can be in shows up in the
two team namespaces, with the real reasons."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox.controllers.story import STORY
from tests.sandbox.controllers_support import Cluster, condition, is_true, simulated_cluster

SCHEDULED = "PodGroupInitiallyScheduled"
TRAINJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{}/trainjobs/{}"


@pytest.fixture(scope="module")
def story() -> Iterator[Cluster]:
    env = {"SANDBOX_GENERATOR": "1", "SANDBOX_GENERATOR_RATE": "0", "SANDBOX_GENERATOR_STORY_SPEED": "10"}
    with simulated_cluster(**env) as process:
        yield Cluster(process)


def _job(cluster: Cluster, namespace: str, name: str) -> dict:
    return cluster.client.get(TRAINJOBS.format(namespace, name))


def _groups(cluster: Cluster, namespace: str, name: str) -> list[dict]:
    uid = _job(cluster, namespace, name)["metadata"]["uid"]
    items = cluster.client.list(f"/apis/scheduling.k8s.io/v1beta1/namespaces/{namespace}/podgroups")["items"]
    return [g for g in items if any(o["uid"] == uid for o in g["metadata"]["ownerReferences"])]


def _events(cluster: Cluster, namespace: str) -> list[dict]:
    return cluster.client.list(f"/api/v1/namespaces/{namespace}/events")["items"]


def test_the_storyline_shows_every_state_in_two_team_namespaces(story: Cluster):
    cluster = story
    cluster.wait(lambda: {"team-a", "team-b"} <= {n["metadata"]["name"] for n in cluster.client.list(
        "/api/v1/namespaces")["items"]})

    # A gang too big for any zone: stays Unschedulable, with the real reason.
    too_big = cluster.wait(lambda: (g := _groups(cluster, "team-b", "b-too-big")) and condition(g[0], SCHEDULED)
                           and g[0])
    assert condition(too_big, SCHEDULED)["reason"] == "Unschedulable"
    assert 'no domain fits 40 pods (best zone "zone-' in condition(too_big, SCHEDULED)["message"]

    # Created suspended: no Workload, no PodGroups, no pods.
    parked = cluster.wait(lambda: is_true(j := _job(cluster, "team-b", "b-parked"), "Suspended") and j)
    assert parked["spec"]["suspend"] is True and _groups(cluster, "team-b", "b-parked") == []

    # A gang that waits for capacity first, and is admitted once the pretraining gang finishes.
    waiting = cluster.wait(lambda: (g := _groups(cluster, "team-a", "a-waits")) and condition(g[0], SCHEDULED)
                           and g[0])
    assert condition(waiting, SCHEDULED)["reason"] == "Unschedulable"

    # The urgent gang preempts a whole lower-priority gang.
    victims = cluster.wait(lambda: [g for ns in ("team-a", "team-b") for g in cluster.client.list(
        f"/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups")["items"]
        if is_true(g, "DisruptionTarget")], timeout=30)
    assert all(condition(v, "DisruptionTarget")["reason"] == "PreemptionByScheduler" for v in victims)
    urgent = _groups(cluster, "team-a", "a-urgent")[0]["metadata"]["name"]
    assert all(urgent in condition(v, "DisruptionTarget")["message"] for v in victims)

    cluster.wait(lambda: is_true(_groups(cluster, "team-a", "a-waits")[0], SCHEDULED), timeout=60)
    assert any(e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == waiting["metadata"]["name"]
               for e in _events(cluster, "team-a"))

    # Failures and completions; the suspended job that was resumed runs to completion.
    cluster.wait(lambda: is_true(_job(cluster, "team-b", "b-flaky"), "Failed"), timeout=30)
    cluster.wait(lambda: is_true(_job(cluster, "team-a", "a-pretrain"), "Complete"), timeout=30)
    resumed = cluster.wait(lambda: is_true(j := _job(cluster, "team-a", "a-queued"), "Complete") and j, timeout=60)
    assert condition(resumed, "Suspended")["reason"] == "Resumed"
    assert is_true(_job(cluster, "team-b", "b-parked"), "Suspended")  # never resumed
    assert condition(_groups(cluster, "team-b", "b-too-big")[0], SCHEDULED)["reason"] == "Unschedulable"


def test_every_storyline_job_records_its_creator_as_its_field_manager(story: Cluster):
    for step in STORY:
        if step.resume or step.queue:  # the Kueue steps play only with Kueue on
            continue
        job = story.wait(lambda s=step: _job(story, s.namespace, s.name))
        assert job["metadata"]["managedFields"][0]["manager"] == step.user
        assert job["metadata"]["managedFields"][0]["operation"] == "Update"
