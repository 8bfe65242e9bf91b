"""Runtime-policy selectors: filtered lists, lookups and revision diffs."""

from __future__ import annotations

import pytest

from runtimes import selectors
from runtimes.errors import PolicyNotFound, RevisionNotFound
from runtimes.models import PolicySync, RuntimePolicy
from runtimes.services import policies as policy_services
from tests.runtimes.test_services import fast_password_hashing, level1, runtime  # noqa: F401 (autouse fixture)


@pytest.fixture
def policies(alice):
    for manifest in (runtime("alpha"), level1("beta"), runtime("gamma")):
        policy_services.policy_create(manifest=manifest, author=alice, source="api")
    RuntimePolicy.objects.filter(name="gamma").update(framework="mpi")
    PolicySync.objects.filter(policy__name="gamma").update(sync_state="synced")


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["alpha", "beta", "gamma"]),
        ({"search": "ALP"}, ["alpha"]),
        ({"search": "rack"}, ["beta"]),
        ({"framework": "mpi"}, ["gamma"]),
        ({"scheduling_mode": "level1"}, ["beta"]),
        ({"sync_state": "synced"}, ["gamma"]),
        ({"framework": "torch", "scheduling_mode": "none"}, ["alpha"]),
        ({"ordering": "-name"}, ["gamma", "beta", "alpha"]),
        ({"ordering": "framework"}, ["gamma", "alpha", "beta"]),
    ],
)
def test_policy_list_filters_and_orders(db, policies, filters, expected):
    assert [p.name for p in selectors.policy_list(**filters)] == expected


def test_policy_list_joins_the_users(db, policies, django_assert_num_queries):
    # One query for the policies with their users, one each for their sync rows, chosen and enabled clusters.
    with django_assert_num_queries(4):
        names = [(p.created_by.username, p.updated_by.username, p.sync_state) for p in selectors.policy_list()]

    assert names == [("alice", "alice", "draft"), ("alice", "alice", "draft"), ("alice", "alice", "synced")]


def test_policy_list_refuses_an_unknown_ordering(db):
    with pytest.raises(ValueError, match="ordering"):
        selectors.policy_list(ordering="password")


def test_policy_get(db, policies):
    assert selectors.policy_get(name="beta").scheduling_mode == "level1"
    with pytest.raises(PolicyNotFound):
        selectors.policy_get(name="delta")


def test_policy_frameworks(db, policies):
    assert selectors.policy_frameworks() == ["mpi", "torch"]


def test_revisions_and_diff(db, alice):
    policy = policy_services.policy_create(manifest=runtime(), author=alice, source="api")
    policy_services.policy_update(name=policy.name, manifest=level1(), expected_version=1, author=alice, source="form")

    assert [r.number for r in selectors.revision_list(policy=policy)] == [2, 1]
    assert selectors.revision_get(policy=policy, number=2).source == "form"
    text, changes = selectors.revision_diff(policy=policy, from_number=1, to_number=2)
    assert text.startswith("--- revision 1\n+++ revision 2\n")
    assert [(c.path, c.op) for c in changes] == [("spec.scheduling", "added")]
    assert selectors.revision_diff(policy=policy, from_number=2, to_number=2) == ("", [])


@pytest.mark.parametrize(("from_number", "to_number"), [(1, 5), (5, 1)])
def test_revision_diff_of_a_missing_revision_raises(db, alice, from_number, to_number):
    policy = policy_services.policy_create(manifest=runtime(), author=alice, source="api")

    with pytest.raises(RevisionNotFound):
        selectors.revision_diff(policy=policy, from_number=from_number, to_number=to_number)
    with pytest.raises(RevisionNotFound):
        selectors.revision_get(policy=policy, number=5)
