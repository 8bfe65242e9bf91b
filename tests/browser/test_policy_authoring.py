"""An admin builds a three-level policy in the browser and watches the YAML follow; a viewer cannot edit it.

Set TRAINER_PORTAL_SCREENSHOTS=1 to refresh docs/img/list.png and docs/img/editor.png (used by the README).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from runtimes.domain.manifest import load_runtime
from runtimes.selectors import policy_get

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
RACK = "topology.kubernetes.io/rack"


def log_in(page, username: str, password: str) -> None:
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("form button[type=submit]")
    page.wait_for_url(re.compile(r"/runtimes/$"))


def yaml_of(page) -> str:
    return page.locator("#id_yaml").input_value()


def keep_screenshot(source: Path, name: str) -> None:
    if os.environ.get("TRAINER_PORTAL_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, DOCS_IMG / name)


def test_it_lets_an_admin_author_a_three_level_policy_and_a_viewer_only_read_it(page, alice, bob, tmp_path):
    from playwright.sync_api import expect

    yaml_box = page.locator("#id_yaml")
    log_in(page, "alice", "alice-password-1")
    page.click("text=New policy")
    page.wait_for_url(re.compile(r"/runtimes/new/$"))

    # Metadata: the YAML follows each form edit.
    page.fill("#id_name", "three-levels")
    expect(yaml_box).to_have_value(re.compile(r"name: three-levels"))
    page.fill("#id_num_nodes", "8")
    expect(yaml_box).to_have_value(re.compile(r"numNodes: 8"))

    # A dataset initializer the trainer waits for (added without saving; the posted YAML is kept).
    page.click("button[value=add-rjob]")
    expect(page.locator("#id_rjobs-1-name")).to_be_visible()
    page.fill("#id_rjobs-1-name", "dataset-initializer")
    page.select_option("#id_rjobs-1-ancestor_step", "dataset-initializer")
    page.fill("#id_rjobs-1-container_name", "dataset-initializer")
    page.fill("#id_rjobs-1-image", "ghcr.io/kubeflow/trainer/dataset-initializer")
    page.fill("#id_rjobs-0-depends_on", "dataset-initializer:Complete")
    expect(yaml_box).to_have_value(re.compile(r"- name: dataset-initializer\n\s+status: Complete"))

    # Level 2: the initializer as a basic group; level 3: one rack-bound gang per trainer Job.
    page.check("input[name=scheduling_mode][value=level2]")
    page.click("button[value=add-l2]")
    expect(page.locator("#id_l2-0-targets")).to_be_visible()
    page.click("button[value=add-l2]")
    expect(page.locator("#id_l2-1-targets")).to_be_visible()
    page.fill("#id_l2-0-targets", "dataset-initializer")
    page.select_option("#id_l2-0-policy", "basic")
    page.fill("#id_l2-1-targets", "node")
    page.check("#id_l2-1-per_job")
    expect(page.locator("#id_l2-1-job_topology_key")).to_be_visible()
    page.fill("#id_l2-1-job_topology_key", RACK)
    expect(yaml_box).to_have_value(re.compile(r"job:\n\s+schedulingPolicy:\n\s+gang: \{\}\n\s+schedulingConstraints"))
    expect(yaml_box).to_have_value(re.compile(re.escape(RACK)))
    expect(page.locator("#problems-panel")).not_to_contain_text("error")

    # And the other way round: valid YAML refills the form; broken YAML says where and leaves the form alone.
    page.fill("#id_yaml", yaml_of(page).replace("numNodes: 8", "numNodes: 4"))
    expect(page.locator("#id_num_nodes")).to_have_value("4")
    good_yaml = yaml_of(page)
    page.fill("#id_yaml", good_yaml + "  oops: [\n")
    expect(page.locator("#sync-status")).to_contain_text(re.compile(r"YAML error at line \d+, column \d+"))
    expect(page.locator("#id_num_nodes")).to_have_value("4")
    page.fill("#id_yaml", good_yaml)
    expect(page.locator("#sync-status")).to_contain_text("YAML is valid")

    page.fill("#id_message", "Three levels: initializer group + rack gang per trainer Job")
    page.evaluate("document.querySelector('.sched-switch').scrollIntoView({block: 'start'})")
    page.screenshot(path=str(tmp_path / "editor.png"))
    keep_screenshot(tmp_path / "editor.png", "editor.png")
    page.click(".savebar button[value=save]")

    page.wait_for_url(re.compile(r"/runtimes/three-levels/$"))
    expect(page.locator(".messages")).to_contain_text("Created three-levels")
    saved = policy_get(name="three-levels")
    entries = saved.manifest["spec"]["scheduling"]["replicatedJobs"]
    assert entries[0] == {"targetReplicatedJobs": ["dataset-initializer"], "schedulingPolicy": {"basic": {}}}
    assert entries[1]["job"]["schedulingConstraints"]["topology"] == [{"key": RACK}]
    assert load_runtime(page.locator("#policy-yaml").inner_text()) == saved.manifest

    page.click("nav >> text=Policies")
    row = page.locator("tr", has_text="three-levels")
    expect(row).to_contain_text("L2")
    expect(row).to_contain_text("L3")
    page.screenshot(path=str(tmp_path / "list.png"), full_page=True)
    keep_screenshot(tmp_path / "list.png", "list.png")
    # The search filters as you type (htmx swaps only the results).
    page.fill("#id_q", "no-such-policy")
    expect(page.locator("#policy-results")).to_contain_text("No policy matches these filters")
    page.fill("#id_q", "three")
    expect(page.locator("#policy-results")).to_contain_text("three-levels")

    # The viewer sees the policy but no way to change it, and the edit URL is forbidden.
    page.click("text=Log out")
    page.wait_for_url(re.compile(r"/login/"))
    log_in(page, "bob", "bob-password-1")
    page.click("text=three-levels")
    expect(page.locator("h1")).to_have_text("three-levels")
    expect(page.locator("text=Edit policy")).to_have_count(0)
    expect(page.locator("text=New policy")).to_have_count(0)
    response = page.goto("/runtimes/three-levels/edit/")
    assert response is not None and response.status == 403


@pytest.fixture
def no_js_page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


def test_it_saves_a_policy_without_javascript(no_js_page, alice):
    page = no_js_page
    log_in(page, "alice", "alice-password-1")
    page.goto("/runtimes/new/")
    page.fill("#id_name", "no-js")
    page.check("input[name=scheduling_mode][value=level1]")
    page.fill("#id_l1_topology_key", "topology.kubernetes.io/zone")
    page.fill("#id_message", "typed without JavaScript")
    page.click(".savebar button[value=save]")

    page.wait_for_url(re.compile(r"/runtimes/no-js/$"))
    saved = policy_get(name="no-js")
    assert saved.manifest["spec"]["scheduling"]["schedulingConstraints"]["topology"] == [
        {"key": "topology.kubernetes.io/zone"}
    ]
    assert "topology.kubernetes.io/zone" in page.locator("#policy-yaml").inner_text()
