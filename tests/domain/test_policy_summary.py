"""One-line scheduling summaries for the policy list."""

from __future__ import annotations

import pytest

from runtimes.domain.policy import SchedulingSummary, scheduling_summary

from .test_policy_cases import upstream, with_scheduling

ZONE = {"topology": [{"key": "topology.kubernetes.io/zone"}]}
RACK = {"topology": [{"key": "topology.kubernetes.io/rack"}]}
BLOCK = {"topology": [{"key": "cloud.example.com/block"}]}


def legacy(policy: dict) -> dict:
    manifest = upstream("torch")
    manifest["spec"]["podGroupPolicy"] = policy
    return manifest


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (upstream("torch"), SchedulingSummary("none", "No gang scheduling", ())),
        (with_scheduling("torch", {}), SchedulingSummary("level1", "L1 · gang", (1,))),
        (
            with_scheduling("torch", {"schedulingPolicy": {"gang": {}}, "schedulingConstraints": ZONE}),
            SchedulingSummary("level1", "L1 · gang · zone", (1,)),
        ),
        (
            with_scheduling(
                "qwen",
                {
                    "replicatedJobs": [
                        {"targetReplicatedJobs": ["dataset-initializer"], "schedulingPolicy": {"basic": {}}},
                        {"targetReplicatedJobs": ["node"], "schedulingConstraints": BLOCK},
                    ]
                },
            ),
            SchedulingSummary("level2", "L2 · 2 groups (basic, gang) · block", (2,)),
        ),
        (
            with_scheduling(
                "torch",
                {"replicatedJobs": [{"targetReplicatedJobs": ["node"], "job": {"schedulingConstraints": RACK}}]},
            ),
            SchedulingSummary("level3", "L3 · node (gang) · rack", (3,)),
        ),
        (
            with_scheduling(
                "qwen",
                {
                    "replicatedJobs": [
                        {"targetReplicatedJobs": ["dataset-initializer"], "schedulingPolicy": {"basic": {}}},
                        {"targetReplicatedJobs": ["node"], "job": {"schedulingConstraints": RACK}},
                    ]
                },
            ),
            SchedulingSummary("mixed", "L2 · 1 group (basic) | L3 · node (gang) · rack", (2, 3)),
        ),
        (
            with_scheduling(
                "torch",
                {
                    "schedulingConstraints": ZONE,
                    "replicatedJobs": [{"targetReplicatedJobs": ["node"], "schedulingConstraints": BLOCK, "job": {}}],
                },
            ),
            SchedulingSummary(
                "composite",
                "Composite (Alpha 2) | L1 · gang · zone | L2 · 1 group (gang) · block | L3 · node (gang)",
                (1, 2, 3),
            ),
        ),
        (
            legacy({"coscheduling": {"scheduleTimeoutSeconds": 60}}),
            SchedulingSummary("coscheduling", "Coscheduling (gang) · timeout 60s", ()),
        ),
        (legacy({"coscheduling": {}}), SchedulingSummary("coscheduling", "Coscheduling (gang)", ())),
        (
            legacy({"volcano": {"networkTopology": {"mode": "hard", "highestTierAllowed": 2}}}),
            SchedulingSummary("volcano", "Volcano · hard · tier ≤ 2", ()),
        ),
    ],
    ids=["none", "l1-default", "l1-zone", "l2", "l3", "mixed", "composite", "cosched", "cosched-default", "volcano"],
)
def test_scheduling_summary(manifest, expected):
    assert scheduling_summary(manifest) == expected


def test_summary_of_malformed_scheduling_does_not_guess():
    manifest = with_scheduling("torch", {"schedulingPolicy": {"gang": {}, "basic": {}}})
    assert scheduling_summary(manifest).text == "L1 · ?"
