"""Each scheduling level and legacy mode the guided form offers is built in the browser with the form alone and saved.

No step types into the YAML: the YAML only follows the form, and what the form writes must pass the validator.
"""

from __future__ import annotations

import re

import pytest

from runtimes.selectors import policy_get, revision_list

from .test_policy_authoring import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RACK = "topology.kubernetes.io/rack"
ZONE = "topology.kubernetes.io/zone"


def start(page, name: str):
    from playwright.sync_api import expect

    log_in(page, "alice", "alice-password-1")
    page.goto("/runtimes/new/")
    page.fill("#id_name", name)
    expect(page.locator("#id_yaml")).to_have_value(re.compile(rf"name: {name}"))


def save(page, name: str):
    from playwright.sync_api import expect

    expect(page.locator("#problems-panel")).not_to_contain_text(re.compile(r"\d+ errors?"))
    page.fill("#id_message", "built with the form")
    page.click(".savebar button[value=save]")
    page.wait_for_url(re.compile(rf"/runtimes/{name}/$"))
    expect(page.locator(".messages")).to_contain_text(f"Created {name}")
    saved = policy_get(name=name)
    assert revision_list(policy=saved).first().source == "form"
    return saved.manifest["spec"]


def test_level1_from_the_form(page, alice):
    from playwright.sync_api import expect

    start(page, "l1-browser")
    page.check("input[name=scheduling_mode][value=level1]")
    page.fill("#id_l1_topology_key", ZONE)
    expect(page.locator("#id_yaml")).to_have_value(re.compile(re.escape(ZONE)))
    spec = save(page, "l1-browser")
    assert spec["scheduling"] == {
        "schedulingPolicy": {"gang": {}},
        "schedulingConstraints": {"topology": [{"key": ZONE}]},
    }


def test_level2_and_then_level3_on_the_same_group_from_the_form(page, alice):
    from playwright.sync_api import expect

    yaml_box = page.locator("#id_yaml")
    start(page, "l3-browser")
    page.check("input[name=scheduling_mode][value=level2]")
    page.click("button[value=add-l2]")
    page.fill("#id_l2-0-targets", "node")
    page.fill("#id_l2-0-topology_key", RACK)
    # First a level-2 gang over `node` …
    expect(yaml_box).to_have_value(re.compile(r"- targetReplicatedJobs:\n\s+- node\n\s+schedulingPolicy:\n\s+gang"))
    # … then level 3 ticked on it: the level-2 fields step aside and the gang moves under job.
    page.check("#id_l2-0-per_job")
    expect(page.locator("#id_l2-0-topology_key")).to_be_hidden()
    page.fill("#id_l2-0-job_topology_key", RACK)
    expect(yaml_box).to_have_value(re.compile(r"job:\n\s+schedulingPolicy:\n\s+gang: \{\}\n\s+schedulingConstraints"))
    spec = save(page, "l3-browser")
    assert spec["scheduling"]["replicatedJobs"] == [
        {
            "targetReplicatedJobs": ["node"],
            "job": {"schedulingPolicy": {"gang": {}}, "schedulingConstraints": {"topology": [{"key": RACK}]}},
        }
    ]


def test_level2_groups_from_the_form(page, alice):
    from playwright.sync_api import expect

    start(page, "l2-browser")
    page.click("button[value=add-rjob]")
    expect(page.locator("#id_rjobs-1-name")).to_be_visible()
    page.fill("#id_rjobs-1-name", "dataset-initializer")
    page.select_option("#id_rjobs-1-ancestor_step", "dataset-initializer")
    page.fill("#id_rjobs-1-container_name", "dataset-initializer")
    page.fill("#id_rjobs-0-depends_on", "dataset-initializer:Complete")
    page.check("input[name=scheduling_mode][value=level2]")
    page.click("button[value=add-l2]")
    expect(page.locator("#id_l2-0-targets")).to_be_visible()
    page.click("button[value=add-l2]")
    expect(page.locator("#id_l2-1-targets")).to_be_visible()
    page.fill("#id_l2-0-targets", "dataset-initializer")
    page.select_option("#id_l2-0-policy", "basic")
    page.fill("#id_l2-1-targets", "node")
    expect(page.locator("#id_yaml")).to_have_value(re.compile(r"- node\n\s+schedulingPolicy:\n\s+gang"))
    spec = save(page, "l2-browser")
    assert spec["scheduling"]["replicatedJobs"] == [
        {"targetReplicatedJobs": ["dataset-initializer"], "schedulingPolicy": {"basic": {}}},
        {"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}},
    ]


@pytest.mark.parametrize(
    ("mode", "fill", "expected"),
    [
        (
            "coscheduling",
            {"#id_coscheduling_timeout_seconds": "120"},
            {"coscheduling": {"scheduleTimeoutSeconds": 120}},
        ),
        (
            "volcano",
            {"#id_volcano_highest_tier_allowed": "2"},
            {"volcano": {"networkTopology": {"highestTierAllowed": 2}}},
        ),
    ],
)
def test_legacy_pod_group_policies_from_the_form(page, alice, mode, fill, expected):
    from playwright.sync_api import expect

    name = f"{mode}-browser"
    start(page, name)
    page.check(f"input[name=scheduling_mode][value={mode}]")
    for selector, value in fill.items():
        page.fill(selector, value)
    expect(page.locator("#id_yaml")).to_have_value(re.compile(rf"podGroupPolicy:\n\s+{mode}:"))
    spec = save(page, name)
    assert spec["podGroupPolicy"] == expected
    assert "scheduling" not in spec
