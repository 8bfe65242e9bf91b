"""In a real browser: a team-a data scientist keeps her LocalQueue's page open and watches her job go from position
2 to position 1 to admitted, without reloading, while the sandbox's Kueue admits the jobs ahead of it as their quota
frees and the real queue watcher handler writes what it sees (list + flush, as the informer hub runs it)."""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import expect

from tests.queues.conftest import Kueue
from tests.sandbox.controllers_support import demo_runtime, simulated_cluster

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def kueue_cluster():
    from trainer_portal.kube.client import build_gateway
    from trainer_portal.kube.config import KubeSettings

    with simulated_cluster(SANDBOX_KUEUE="1") as process:
        gateway = build_gateway(KubeSettings(config_path=process.kubeconfig))
        helper = Kueue(process, gateway)
        helper._post("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes",
                     demo_runtime("torch_gang_zone.yaml"))
        yield helper


@pytest.fixture
def watcher(kueue_cluster):
    """The queue watcher handler fed by a relist every 0.3 s in a thread (what the hub's watches would deliver)."""
    from django.db import connection

    from queues.handlers import QueueHandler
    from trainer_portal.cluster import informers

    handler = QueueHandler(gateway=kueue_cluster.gateway, debounce=0.0, max_delay=0.0)
    stop = threading.Event()

    def run() -> None:
        try:
            while not stop.is_set():
                informers.list_once(handler, gateway=kueue_cluster.gateway)
                handler.flush(leader=True)
                stop.wait(0.3)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield handler
    stop.set()
    thread.join(timeout=10)


def _login(page, django_user_model) -> None:
    from django.contrib.auth.models import Group

    from jobs.models import NamespaceGrant

    user = django_user_model.objects.create_user("dana", password="dana-password-1")
    user.groups.add(Group.objects.get(name="data-scientist"))
    team = Group.objects.get_or_create(name="team-a-ml")[0]
    user.groups.add(team)
    NamespaceGrant.objects.get_or_create(group=team, namespace="team-a")
    page.goto("/login/")
    page.fill("#id_username", "dana")
    page.fill("#id_password", "dana-password-1")
    page.click("form button[type=submit]")
    page.wait_for_load_state()


def test_a_data_scientist_watches_her_job_move_up_and_get_admitted(page, django_user_model, kueue_cluster,
                                                                    watcher):
    kueue = kueue_cluster
    kueue.gateway.request("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": "team-a"}})
    cq = kueue.cluster_queue("cq-team-a", kueue.flavor(), 8)  # one 8-GPU job at a time
    kueue.local_queue("team-a", cq)
    holder = kueue.submit("team-a", "holder", 1, duration=6)
    kueue.wait(lambda: kueue.condition("team-a", holder["metadata"]["uid"], "Admitted") == "True")
    kueue.submit("team-a", "ahead", 1, duration=6)
    kueue.submit("team-a", "mine", 1, duration=60)
    _login(page, django_user_model)

    page.goto("/queues/localqueues/team-a/team-queue/")
    mine = page.locator("tr[data-workload^='team-a/trainjob-mine-']")
    expect(mine.locator(".queues-position")).to_have_text("2", timeout=20_000)
    page.evaluate("window.__same_document = true")  # a reload would lose it: proves the updates are live

    expect(mine.locator(".queues-position")).to_have_text("1", timeout=30_000)
    admitted = page.locator(".queues-admitted li[data-workload^='team-a/trainjob-mine-']")
    expect(admitted).to_have_count(1, timeout=30_000)
    assert page.evaluate("window.__same_document") is True
    assert "cq-team-a" in page.content()

    # 390 px wide (a phone): the page itself does not scroll sideways; wide tables scroll inside their card.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/queues/clusterqueues/{cq}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
