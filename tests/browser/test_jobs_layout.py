"""In a real browser at 1440 px: the jobs table fits its card with one line per row; at 390 px no jobs page is wider
than the screen and each job's state and short reason are on screen; only column headers are set
in capitals (a job's name in a row header keeps its case on every page, the policy page's included)."""

from __future__ import annotations

import pytest

from jobs.models import TrainJob
from tests.browser.conftest import _portal_roles, browser, chromium_executable, page  # noqa: F401 — fixtures
from tests.browser.test_jobs import _heartbeat, _login
from tests.jobs.factories import tracked_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG = ("0/1024 nodes are available: 512 Insufficient nvidia.com/gpu, 256 node(s) had untolerated taint "
        "{nvidia.com/gpu: NoSchedule}, 255 node(s) didn't match pod topology spread constraints, 1 node(s) were "
        "unschedulable. preemption: 0/1024 nodes are available: 1024 No preemption victims found for incoming pod.")


def test_the_jobs_table_fits_at_1440_px_with_one_line_per_row(page, django_user_model):  # noqa: F811
    for i in range(6):
        tracked_job("team-a", f"sweep-with-a-long-name-{i}", state="unschedulable", num_nodes=20,
                    runtime="torch-distributed-with-defaults", queue="team-a-gpu-queue", creator="data-scientist-a")
    TrainJob.objects.update(reason="Unschedulable", message=LONG)
    _heartbeat()
    _login(page, django_user_model, "alice", "platform-admin")

    page.goto("/jobs/")
    table = page.eval_on_selector("#jobs-results .table-wrap", "w => [w.clientWidth, w.scrollWidth]")
    queue = page.eval_on_selector("#jobs-results thead th:last-child",
                                  "th => th.getBoundingClientRect().right <= window.innerWidth")
    reason = page.locator("#jobs-results .jobs-reason__line").first
    heights = page.eval_on_selector("#jobs-results .jobs-reason__line",
                                    "el => [el.getBoundingClientRect().height, parseFloat(getComputedStyle(el)"
                                    ".lineHeight) || 20]")

    widths = page.eval_on_selector_all("#jobs-results tbody tr:first-child > *",
                                       "cells => cells.map(c => Math.round(c.getBoundingClientRect().width))")
    assert table[1] <= table[0], f"{widths} table {table[1]} px in a {table[0]} px wrapper"
    assert queue
    assert heights[0] <= heights[1] * 1.5, heights
    assert reason.get_attribute("title") == LONG


def test_row_headers_keep_their_case_with_the_portal_styles_alone(page, live_server):  # noqa: F811
    page.set_content(f'<link rel="stylesheet" href="{live_server.url}/static/css/portal.css">'
                     '<table class="table"><thead><tr><th scope="col">TrainJob</th></tr></thead>'
                     '<tbody><tr><th scope="row">team-a/b-sweep</th></tr></tbody></table>')
    page.wait_for_load_state("networkidle")

    column, row = (page.eval_on_selector(selector, "th => getComputedStyle(th).textTransform")
                   for selector in ("thead th", "tbody th"))

    assert (column, row) == ("uppercase", "none")


NARROW = 390
_OVERFLOW = """() => {
  const w = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('body *')].filter(e => {
    const r = e.getBoundingClientRect(); return r.width > 0 && r.right > w + 1; })
    .slice(0, 8).map(e => `${e.tagName}.${e.className}#${e.id} ${Math.round(e.getBoundingClientRect().right)}`);
  return [document.documentElement.scrollWidth, w, wide];
}"""


def _fits(tab) -> None:
    scroll, width, wide = tab.evaluate(_OVERFLOW)
    assert scroll <= width, f"{tab.url}: {scroll} px wide in a {width} px window; past the edge: {wide}"


def test_the_jobs_pages_work_at_390_px(page, django_user_model):  # noqa: F811
    """A phone: no page wider than the screen, and each row's state and short reason visible without scrolling."""
    for i in range(3):
        tracked_job("team-a", f"sweep-with-a-long-name-{i}", state="unschedulable", num_nodes=20,
                    runtime="torch-distributed-with-defaults", queue="team-a-gpu-queue", creator="data-scientist-a")
    TrainJob.objects.update(reason="Unschedulable", message=LONG)
    _heartbeat()
    _login(page, django_user_model, "alice", "platform-admin")
    page.set_viewport_size({"width": NARROW, "height": 800})

    page.goto("/jobs/")
    _fits(page)
    state = page.locator("#jobs-results .jobs-state").first
    reason = page.locator("#jobs-results .jobs-reason__line").first
    for element in (state, reason):
        box = element.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= NARROW, box
    assert reason.inner_text() == "doesn't fit: not enough GPUs"
    assert reason.get_attribute("title") == LONG

    page.goto("/jobs/team-a/sweep-with-a-long-name-0/")
    _fits(page)
    page.goto("/jobs/overview/")
    _fits(page)
