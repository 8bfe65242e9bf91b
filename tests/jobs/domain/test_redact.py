"""Text shown to a user names another namespace's objects only as "a job in another namespace"."""

from __future__ import annotations

import pytest

from jobs.domain.redact import OTHER, redact


def _team_b(namespace: str) -> bool:
    return namespace == "team-b"


@pytest.mark.parametrize(("text", "expected"), [
    ("Preempted by PodGroup team-a/a-urgent-…", f"Preempted by {OTHER}"),
    ("preempted by team-a/big (uid 1234)", f"preempted by {OTHER} (uid 1234)"),
    ("Workload team-a/w-1 and pod team-a/p-0 hold it", f"{OTHER} and {OTHER} hold it"),
    ("victim of PodGroup team-b/mine-pg", "victim of PodGroup team-b/mine-pg"),  # own namespace stays
    ("0/8 nodes are available: 8 Insufficient nvidia.com/gpu",
     "0/8 nodes are available: 8 Insufficient nvidia.com/gpu"),
    ("uses scheduling.k8s.io/v1beta1 and apps/v1", "uses scheduling.k8s.io/v1beta1 and apps/v1"),
    ("topology.kubernetes.io/zone has 24 / 16", "topology.kubernetes.io/zone has 24 / 16"),
    ("", ""),
])
def test_other_namespaces_are_never_named(text, expected):
    assert redact(text, _team_b, known={"team-a", "team-b"}) == expected


def test_a_bare_reference_is_redacted_only_for_a_known_namespace():
    assert redact("held by apps/v1", _team_b, known={"team-a"}) == "held by apps/v1"
    assert redact("held by team-a/x", _team_b, known={"team-a"}) == f"held by {OTHER}"
    assert redact("held by team-c/x", _team_b, known={"team-a"}) == "held by team-c/x"
    assert redact("held by PodGroup team-c/x", _team_b, known={"team-a"}) == f"held by {OTHER}"
