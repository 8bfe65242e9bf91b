"""The lint asks to list a dependency first; the ↑ button moves it, with JavaScript and without."""

from __future__ import annotations

import re

import pytest

from runtimes.selectors import policy_get, revision_list

from .test_policy_authoring import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ORDER_WARNING = "JobSet expects dependencies to be listed before"


def rjob_names(name: str) -> list[str]:
    return [r["name"] for r in policy_get(name=name).manifest["spec"]["template"]["spec"]["replicatedJobs"]]


def add_initializer_after_node(page) -> None:
    page.click("button[value=add-rjob]")
    page.fill("#id_rjobs-1-name", "dataset-initializer")
    page.select_option("#id_rjobs-1-ancestor_step", "dataset-initializer")
    page.fill("#id_rjobs-1-container_name", "dataset-initializer")
    page.fill("#id_rjobs-0-depends_on", "dataset-initializer:Complete")


def test_it_moves_a_dependency_up_and_the_yaml_and_the_checks_follow(page, alice):
    from playwright.sync_api import expect

    yaml_box = page.locator("#id_yaml")
    log_in(page, "alice", "alice-password-1")
    page.goto("/runtimes/new/")
    page.fill("#id_name", "moved")
    add_initializer_after_node(page)
    expect(page.locator("#problems-panel")).to_contain_text(ORDER_WARNING)

    page.click("button[value=move-rjob-1-up]")

    expect(page.locator("#id_rjobs-0-name")).to_have_value("dataset-initializer")
    expect(page.locator("#id_rjobs-1-name")).to_have_value("node")
    expect(page.locator("#id_rjobs-1-depends_on")).to_have_value("dataset-initializer:Complete")
    expect(yaml_box).to_have_value(re.compile(r"replicatedJobs:\n\s+- name: dataset-initializer[\s\S]*- name: node"))
    expect(page.locator("#problems-panel")).not_to_contain_text(ORDER_WARNING)
    # Moving back and forth again works on the swapped rows.
    page.click("button[value=move-rjob-0-down]")
    expect(page.locator("#id_rjobs-0-name")).to_have_value("node")
    page.click("button[value=move-rjob-1-up]")
    expect(page.locator("#id_rjobs-0-name")).to_have_value("dataset-initializer")

    page.click(".savebar button[value=save]")
    page.wait_for_url(re.compile(r"/runtimes/moved/$"))
    assert rjob_names("moved") == ["dataset-initializer", "node"]
    assert revision_list(policy=policy_get(name="moved")).first().source == "form"


@pytest.fixture
def no_js_page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


def test_it_moves_a_replicated_job_without_javascript(no_js_page, alice):
    page = no_js_page
    log_in(page, "alice", "alice-password-1")
    page.goto("/runtimes/new/")
    page.fill("#id_name", "moved-no-js")
    add_initializer_after_node(page)  # "Add" is a full page round trip without JavaScript
    page.click("button[value=move-rjob-1-up]")
    assert page.locator("#id_rjobs-0-name").input_value() == "dataset-initializer"
    assert page.locator("#id_rjobs-1-depends_on").input_value() == "dataset-initializer:Complete"
    page.click(".savebar button[value=save]")
    assert page.locator(".alert--error").count() == 0, page.locator(".alert--error, .field__error").all_inner_texts()
    page.wait_for_url(re.compile(r"/runtimes/moved-no-js/$"))
    assert rjob_names("moved-no-js") == ["dataset-initializer", "node"]
    assert revision_list(policy=policy_get(name="moved-no-js")).first().source == "form"
