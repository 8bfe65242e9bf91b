"""In a real browser: a team-a data scientist watches her gang go from Gang pending to Admitted without reloading,
an admin sees both teams, and the unschedulable gang says why with the capacity numbers.

Twice: once with states written through the tracker's own service (``jobs.services.apply_records``, as the cluster
watcher writes them; fast, precise about what repaints), and once end to end: the sandbox's controllers and scheduler,
a real ``manage.py cluster_watch`` and the portal in its own process. Either way the page learns of a change only
through its live partial.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs import services
from jobs.domain.records import JobRecord
from tests.browser.conftest import _portal_roles, browser, chromium_executable, page  # noqa: F401 — fixtures
from tests.jobs.integration.test_tracker_process import (  # noqa: F401 — fixtures
    ROOT,
    RUNTIMES,
    database,
    rows,
    submit,
    tracker_status,
    wait_until,
    watchers,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ZONE = "topology.kubernetes.io/zone"


def _record(namespace: str, name: str, state: str, *, reason: str, message: str, num_nodes: int = 3,
            version: int = 1, pods: list[dict] | None = None, bound: int = 0) -> JobRecord:
    now = timezone.now()
    return JobRecord(
        uid=f"uid-{namespace}-{name}", namespace=namespace, name=name, runtime_kind="ClusterTrainingRuntime",
        runtime_name="torch-distributed", num_nodes=num_nodes, gpus_per_node=8,
        resources_per_node={"nvidia.com/gpu": "8"}, level="trainjob", queue_name="", creator=f"{namespace}-user",
        priority_class="", state=state, reason=reason, message=message, since=now,
        submitted_at=now - dt.timedelta(minutes=5),
        pod_groups=[{"name": f"{name}-pg", "policy": "gang", "minCount": num_nodes, "members": num_nodes,
                     "bound": bound, "topologyKey": ZONE, "condition": "", "reason": reason, "message": message}],
        workload={"name": f"{name}-wl", "apiVersion": "scheduling.k8s.io/v1alpha2", "templates": []},
        pods=pods or [], observed_version=str(version))


def _heartbeat() -> None:
    services.tracker_heartbeat(holder="watcher-1", connected=True, synced=True, tracked=4, writes=0,
                               last_event_at=timezone.now())


def _save_snapshot() -> None:
    from tests.jobs.domain.test_explain import _cluster
    from trainer_portal.cluster.snapshots import save_live_snapshot
    from trainer_portal.placement.tracker import LiveSnapshot

    snapshot, _ = _cluster(busy=1)
    save_live_snapshot(LiveSnapshot(snapshot, time.time(), {}, "watch"))


PENDING = _record("team-a", "llm-a", "gang-pending", reason="GangPending", message="2 of 3 members bound", bound=2)
ADMITTED = replace(PENDING, state="admitted", reason="Admitted", message="all 3 members bound", observed_version="2",
                   pod_groups=[{**PENDING.pod_groups[0], "bound": 3, "condition": "True", "reason": "Scheduled",
                                "message": ""}],
                   pods=[{"name": f"llm-a-node-0-{i}", "phase": "Running", "node": f"b{i}", "podGroup": "llm-a-pg"}
                         for i in range(3)])


@pytest.fixture
def cluster_state(settings):
    settings.TRAINER_PORTAL_TRACKING_STALE_SECONDS = 600
    _save_snapshot()
    services.apply_records([
        PENDING,
        _record("team-a", "too-big", "unschedulable", reason="Unschedulable",
                message="0/8 nodes are available: the gang needs 3 nodes in one zone"),
        _record("team-b", "llm-b", "running", reason="Running", message="all pods running", num_nodes=1,
                pods=[{"name": "llm-b-0", "phase": "Running", "node": "a0", "podGroup": "llm-b-pg"}]),
    ])
    _heartbeat()


def _login(page, django_user_model, username: str, *groups: str) -> None:  # noqa: F811
    from django.contrib.auth.models import Group

    from jobs.models import NamespaceGrant

    user = django_user_model.objects.create_user(username, password=f"{username}-password-1")
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    if "team-a-ml" in groups:
        NamespaceGrant.objects.get_or_create(group=Group.objects.get(name="team-a-ml"), namespace="team-a")
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", f"{username}-password-1")
    page.click("form button[type=submit]")
    page.wait_for_load_state()


def _rows(page) -> list[str]:  # noqa: F811
    return page.eval_on_selector_all("#jobs-results tbody tr th.name a", "els => els.map(e => e.textContent)")


def test_a_data_scientist_sees_only_her_team_and_watches_her_gang_get_admitted(page, django_user_model,  # noqa: F811
                                                                               cluster_state):
    _login(page, django_user_model, "dana", "data-scientist", "team-a-ml")
    page.goto("/jobs/")

    assert sorted(_rows(page)) == ["llm-a", "too-big"]
    assert "team-b" not in page.content()
    row = "#job-uid-team-a-llm-a"
    assert page.locator(f"{row} .jobs-state").inner_text() == "Gang pending"
    # Mark the document and the other row: neither a reload nor a repaint of unchanged rows may happen.
    page.evaluate("""() => { window.__sameDocument = true;
                            document.querySelector('#job-uid-team-a-too-big').__untouched = true; }""")
    page.wait_for_timeout(1200)  # at least one poll answered 304

    services.apply_records([ADMITTED])
    _heartbeat()
    started = time.monotonic()
    # Locator waits: the portal's Content-Security-Policy forbids evaluating strings (wait_for_function).
    expect(page.locator(f"{row} .jobs-state")).to_have_text("Admitted", timeout=5000)
    elapsed = time.monotonic() - started

    assert elapsed < 3.0, f"the change took {elapsed:.2f} s to reach the page"
    assert page.evaluate("window.__sameDocument") is True
    assert page.evaluate("document.querySelector('#job-uid-team-a-too-big').__untouched") is True
    counts = page.locator("#jobs-counts").inner_text()
    assert "Admitted" in counts and "Gang pending" not in counts


def test_the_detail_page_follows_the_gang_and_shows_where_it_landed(page, django_user_model,  # noqa: F811
                                                                    cluster_state):
    _login(page, django_user_model, "dana", "data-scientist", "team-a-ml")
    page.goto("/jobs/team-a/llm-a/")
    assert "2 / 3 bound" in page.locator(".jobs-tree").inner_text()
    page.evaluate("window.__sameDocument = true")

    services.apply_records([ADMITTED])
    expect(page.locator(".jobs-bound").first).to_contain_text("3 / 3 bound", timeout=5000)

    assert page.evaluate("window.__sameDocument") is True
    assert page.locator("h1 .jobs-state").inner_text() == "Admitted"
    assert "zone-b" in page.locator(".pv-heat").inner_text()  # the pods' nodes b0..b2 are in zone-b


def test_an_admin_sees_both_teams(page, django_user_model, cluster_state):  # noqa: F811
    _login(page, django_user_model, "alice", "platform-admin")
    page.goto("/jobs/")

    assert sorted(_rows(page)) == ["llm-a", "llm-b", "too-big"]
    shots = os.environ.get("TRAINER_PORTAL_SCREENSHOTS")
    if shots:  # the README screenshot: this state plus one job per remaining state, through the screenshot script
        _screenshot(page, Path(shots))
    page.click("#jobs-counts a[data-state='running']")  # the counts filter the list (a plain link)
    page.wait_for_url(re.compile(r"state=running"))
    assert _rows(page) == ["llm-b"]


def _screenshot(page, out: Path) -> None:  # noqa: F811
    from scripts.screenshots import take_jobs

    more = [("team-a", "bert-finetune", "queued", "Pending", "waiting for quota in ClusterQueue gpu-a", 2),
            ("team-b", "moe-64", "quota-reserved", "QuotaReserved", "quota reserved; creating PodGroups", 8),
            ("team-b", "vit-sweep-7", "suspended", "Suspended", "spec.suspend is true", 2),
            ("team-a", "llama-eval", "succeeded", "Completed", "all replicated jobs completed", 1),
            ("team-b", "rl-agent", "failed", "BackoffLimitExceeded", "node-0 failed 3 times", 2)]
    services.apply_records([_record(ns, name, state, reason=reason, message=message, num_nodes=nodes)
                            for ns, name, state, reason, message, nodes in more])
    _heartbeat()
    page.reload()
    take_jobs(page, "", out)


def test_the_unschedulable_gang_says_why_with_capacity_numbers(page, django_user_model, cluster_state):  # noqa: F811
    _login(page, django_user_model, "dana", "data-scientist", "team-a-ml")
    page.goto("/jobs/")
    page.click("text=too-big")
    page.wait_for_url(re.compile(r"/jobs/team-a/too-big/$"))

    card = page.locator(".jobs-reason-card").inner_text()
    assert "Why it waits" in card
    assert re.search(r"Needs 3 nodes × 8 GPUs in one zone; the best zone, zone-\w, fits 2 of 3 pods", card), card
    assert "1 node cordoned" in card
    assert "held by TrainJobs in namespaces you cannot see" in card  # team-b's gang holds a node, unnamed
    assert "llm-b" not in page.content()


# -- against the real sandbox and the real cluster watcher -----------------------------------------------------------


@pytest.fixture(scope="module")
def demo_cluster():
    """The 64-node demo sandbox with its controllers; pods take 6 s to start, so "Admitted" lasts long enough to see."""
    from sandbox.testing import SandboxProcess

    with SandboxProcess(topology="demo", controllers=True, extra_args=["--bookmark-interval", "0.5"],
                        env={"SANDBOX_GENERATOR": "0", "SANDBOX_POD_START_DELAY": "6"}) as process:
        yield process


@pytest.fixture
def cluster(demo_cluster, settings):
    """The gateway pointed at the demo sandbox, reset, with the team namespaces and the demo runtimes."""
    import yaml

    from trainer_portal import kube
    from trainer_portal.kube.client import get_gateway, reset_gateway

    demo_cluster.clear_faults()
    demo_cluster.reset()
    settings.KUBE_CONFIG_PATH = demo_cluster.kubeconfig
    settings.KUBE_CONTEXT = ""
    settings.KUBE_IN_CLUSTER = False
    reset_gateway()
    gateway = get_gateway()
    for name in ("team-a", "team-b"):
        if gateway.get(kube.CORE_NAMESPACE, name=name) is None:
            gateway.create(kube.CORE_NAMESPACE, body={"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": name}})
    runtime = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    for path in sorted(RUNTIMES.glob("*.yaml")):
        body = yaml.safe_load(path.read_text())
        if gateway.get(runtime, name=body["metadata"]["name"]) is None:
            gateway.create(runtime, body=body)
    yield demo_cluster
    demo_cluster.clear_faults()
    reset_gateway()


def _manage(db_path: Path, var_dir: Path, *args: str, **kwargs) -> subprocess.Popen | subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db_path}", "TRAINER_PORTAL_VAR_DIR": str(var_dir),
           "DJANGO_SETTINGS_MODULE": "trainer_portal.settings", "LOG_LEVEL": "WARNING"}
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    command = [sys.executable, "manage.py", *args]
    if kwargs.pop("background", False):
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
    return subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, text=True, **kwargs)


PEOPLE = """
from django.contrib.auth.models import Group, User
from jobs.models import NamespaceGrant
dana = User.objects.create_user("dana", password="dana-password-1")
dana.groups.add(Group.objects.get_or_create(name="data-scientist")[0])
team = Group.objects.get_or_create(name="team-a-ml")[0]
dana.groups.add(team)
NamespaceGrant.objects.create(group=team, namespace="team-a")
alice = User.objects.create_user("alice", password="alice-password-1")
alice.groups.add(Group.objects.get_or_create(name="platform-admin")[0])
"""


@pytest.fixture
def portal(demo_cluster, database, watchers, tmp_path):  # noqa: F811
    """The portal served by its own process on the watcher's database (the test database is not shareable), with
    dana (team-a) and alice (admin); yields its base URL."""
    var_dir = tmp_path / "var-0"  # the first watcher's: the page explains waits on its live snapshot
    _manage(database, var_dir, "shell", "-c", PEOPLE)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = _manage(database, var_dir, "runserver", "--noreload", f"127.0.0.1:{port}", background=True)
    try:
        wait_until(lambda: _accepts(port), timeout=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


@pytest.mark.slow
def test_through_the_real_watcher_a_gang_goes_from_gang_pending_to_admitted_on_an_open_page(
        browser, demo_cluster, cluster, database, watchers, portal):  # noqa: F811
    from trainer_portal.kube.client import get_gateway

    gateway = get_gateway()
    watchers()
    wait_until(lambda: (tracker_status(database) or {}).get("synced"))
    # Every bind fails for now: the gang's PodGroup and pods exist, none is bound, so it is "Gang pending".
    cluster.inject_fault(method="POST", path=r"/binding$", action="status", status=503, count=100_000)
    submit(gateway, "llm-a", nodes=4)
    submit(gateway, "llm-b", nodes=2, namespace="team-b")
    submit(gateway, "too-big", nodes=40)  # no zone has 40 schedulable nodes
    wait_until(lambda: rows(database).get("team-a/llm-a", {}).get("state") == "gang-pending")
    wait_until(lambda: rows(database).get("team-a/too-big", {}).get("state") == "unschedulable")

    context = browser.new_context(base_url=portal, viewport={"width": 1440, "height": 900})
    page = context.new_page()  # noqa: F811
    page.goto("/login/")
    page.fill("#id_username", "dana")
    page.fill("#id_password", "dana-password-1")
    page.click("form button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/$"))  # a data scientist lands on her jobs

    assert sorted(_rows(page)) == ["llm-a", "too-big"]
    assert "team-b" not in page.content()
    state = f"#job-{rows(database)['team-a/llm-a']['uid']} .jobs-state"
    assert page.locator(state).inner_text() == "Gang pending"
    page.evaluate("window.__sameDocument = true")

    cluster.clear_faults()  # the scheduler's next pass binds the gang
    expect(page.locator(state)).to_have_text("Admitted", timeout=15_000)
    assert page.evaluate("window.__sameDocument") is True

    page.goto("/jobs/team-a/too-big/")
    card = page.locator(".jobs-reason-card").inner_text()
    assert "Why it waits" in card
    assert re.search(r"Needs 40 nodes × 8 GPUs in one zone; the best zone, zone-\S+, fits \d+ of 40 pods", card), card
    context.close()

    admin = browser.new_context(base_url=portal, viewport={"width": 1440, "height": 900})
    page = admin.new_page()
    page.goto("/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-password-1")
    page.click("form button[type=submit]")
    page.goto("/jobs/")
    assert sorted(_rows(page)) == ["llm-a", "llm-b", "too-big"]
    admin.close()
