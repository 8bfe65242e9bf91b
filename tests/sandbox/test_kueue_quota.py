"""Kueue's quota arithmetic (pure): flavor assignment, the QuotaReserved reasons and messages, cohort borrowing with
borrowing and lending limits."""

from __future__ import annotations

import pytest

from sandbox.controllers.kueue_quota import Cohorts, Queue, Usage, assign, format_quantity

GPU = "nvidia.com/gpu"
FLAVORS = {"a": {"spec": {"nodeLabels": {"zone": "a"}}}, "b": {"spec": {"nodeLabels": {"zone": "b"}}}}


def _cq(name: str, quotas: dict[str, tuple[int, int | None, int | None]], *, cohort: str | None = None,
        covered: tuple[str, ...] = (GPU,)) -> dict:
    """A ClusterQueue object: {flavor: (nominal GPUs, borrowingLimit, lendingLimit)}."""
    flavors = []
    for flavor, (nominal, borrowing, lending) in quotas.items():
        gpu = {"name": GPU, "nominalQuota": nominal}
        if borrowing is not None:
            gpu["borrowingLimit"] = borrowing
        if lending is not None:
            gpu["lendingLimit"] = lending
        flavors.append({"name": flavor, "resources": [gpu]})
    spec = {"resourceGroups": [{"coveredResources": list(covered), "flavors": flavors}]}
    if cohort:
        spec["cohortName"] = cohort
    return {"metadata": {"name": name}, "spec": spec}


def _assign(queues: list[dict], target: str, gpus: int, used: dict[tuple[str, str], int] | None = None,
            selector: dict | None = None, extra: dict[str, int] | None = None):
    parsed = {q["metadata"]["name"]: Queue.from_object(q, FLAVORS) for q in queues}
    usage = Usage({(cq, flavor, GPU): amount * 1000 for (cq, flavor), amount in (used or {}).items()})
    requests = {GPU: gpus * 1000, **(extra or {})}
    return assign(parsed[target], Cohorts(parsed), FLAVORS, [("node", requests, selector or {})], usage)


@pytest.mark.parametrize(("queues", "gpus", "used", "fits", "reason", "detail"), [
    ([_cq("q", {"a": (16, None, None)})], 16, {}, True, "", ""),
    ([_cq("q", {"a": (16, None, None)})], 16, {("q", "a"): 8}, False, "WaitingForQuota",
     "insufficient unused quota for nvidia.com/gpu in flavor a, 8 more needed"),
    ([_cq("q", {"a": (16, None, None)})], 24, {}, False, "ExceedsMaxQuota",
     "insufficient quota for nvidia.com/gpu in flavor a, request > maximum capacity (24 > 16)"),
    # Cohorts: borrowing from an idle member, capped by the borrower's borrowingLimit and the lender's lendingLimit.
    ([_cq("q", {"a": (8, None, None)}, cohort="c"), _cq("idle", {"a": (32, None, None)}, cohort="c")], 40, {},
     True, "", ""),
    ([_cq("q", {"a": (8, 8, None)}, cohort="c"), _cq("idle", {"a": (32, None, None)}, cohort="c")], 24, {},
     False, "ExceedsMaxQuota", "request > maximum capacity (24 > 16)"),
    ([_cq("q", {"a": (8, None, None)}, cohort="c"), _cq("idle", {"a": (32, None, 4)}, cohort="c")], 16, {},
     False, "ExceedsMaxQuota", "request > maximum capacity (16 > 12)"),
    # The lender's own use shrinks what it can lend now, not what it could ever lend.
    ([_cq("q", {"a": (8, None, None)}, cohort="c"), _cq("other", {"a": (16, None, None)}, cohort="c")], 16,
     {("other", "a"): 12}, False, "WaitingForQuota", "4 more needed"),
    # Flavors are tried in order: the second takes what the first cannot.
    ([_cq("q", {"a": (8, None, None), "b": (16, None, None)})], 16, {}, True, "", ""),
    ([_cq("q", {"a": (8, None, None), "b": (16, None, None)})], 16, {("q", "b"): 8}, False, "WaitingForQuota",
     "insufficient quota for nvidia.com/gpu in flavor a, request > maximum capacity (16 > 8), insufficient unused "
     "quota for nvidia.com/gpu in flavor b, 8 more needed"),
])
def test_assignment_reasons_and_cohort_limits(queues, gpus, used, fits, reason, detail):
    result = _assign(queues, "q", gpus, used)
    assert result.fits is fits
    assert result.reason == reason
    assert detail in result.message
    if not fits:
        assert result.message.startswith("couldn't assign flavors to pod set node: ")


def test_the_flavor_matching_the_pods_node_selector_is_taken():
    queues = [_cq("q", {"a": (16, None, None), "b": (16, None, None)})]
    assert _assign(queues, "q", 8, selector={"zone": "b"}).flavors == [{GPU: "b"}]
    refused = _assign([_cq("q", {"a": (16, None, None)})], "q", 8, selector={"zone": "b"})
    assert (refused.reason, refused.message) == (
        "NoMatchingFlavor", "couldn't assign flavors to pod set node: flavor a doesn't match node affinity")


def test_uncovered_resources_and_inactive_queues_are_inadmissible():
    uncovered = _assign([_cq("q", {"a": (16, None, None)})], "q", 8, extra={"cpu": 4000})
    assert (uncovered.reason, uncovered.message) == (
        "NoMatchingFlavor", "couldn't assign flavors to pod set node: resource cpu unavailable in ClusterQueue")
    missing = Queue.from_object(_cq("q", {"gone": (16, None, None)}), FLAVORS)
    result = assign(missing, Cohorts({"q": missing}), FLAVORS, [("node", {GPU: 8000}, {})], Usage())
    assert (result.reason, result.message) == ("Misconfigured", "ClusterQueue q is inactive: flavor gone not found")


def test_borrowed_amount_is_use_beyond_nominal():
    queues = {"q": Queue.from_object(_cq("q", {"a": (8, None, None)}, cohort="c"), FLAVORS)}
    usage = Usage({("q", "a", GPU): 20_000})
    assert Cohorts(queues).borrowing("q", "a", GPU, usage) == 12_000


def test_weighted_share_is_the_borrowed_part_of_what_the_cohort_lends_over_the_weight():
    queues = {q["metadata"]["name"]: Queue.from_object(q, FLAVORS) for q in (
        _cq("q", {"a": (8, None, None)}, cohort="c"), _cq("lender", {"a": (32, None, None)}, cohort="c"))}
    usage = Usage({("q", "a", GPU): 18_000})  # 10 borrowed of the 40 the cohort lends
    assert Cohorts(queues).weighted_share("q", usage) == 250
    assert Cohorts(queues).weighted_share("q", usage, 2.0) == 125
    assert Cohorts(queues).weighted_share("lender", usage) == 0


@pytest.mark.parametrize(("resource", "milli", "text"), [
    (GPU, 16_000, "16"), ("cpu", 500, "500m"), ("memory", 256 * 2**30 * 1000, "256Gi"), ("memory", 1000, "1")])
def test_quantities_print_as_kubernetes_prints_them(resource, milli, text):
    assert format_quantity(resource, milli) == text
