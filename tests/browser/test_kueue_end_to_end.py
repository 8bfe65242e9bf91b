"""End to end, no stand-ins: the sandbox with its simulated Kueue (team-a's ClusterQueue holds 16 GPUs), a real
``manage.py cluster_watch`` (the admission tracker and the queue watcher in one informer hub) and the portal in its
own process on the watcher's database. A TrainJob asking 24 GPUs of team-a's queue reads "Inadmissible" on the jobs
list and the quota numbers on its page — numbers the portal can only have from the queues app's provider, so the test
fails if that provider is not registered — while a job that fits is admitted by the same queue and runs."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import _portal_roles, browser, chromium_executable  # noqa: F401 — fixtures
from tests.browser.test_jobs import _accepts, _manage, _rows, portal  # noqa: F401 — fixtures
from tests.jobs.integration.test_tracker_process import (  # noqa: F401 — fixtures
    RUNTIMES,
    database,
    rows,
    tracker_status,
    wait_until,
    watchers,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

GPUS_PER_NODE = 8  # torch-gang-zone asks 8 GPUs per node


@pytest.fixture(scope="module")
def demo_cluster():
    """The demo sandbox with Kueue's quick-start shape for team-a: ClusterQueue cq-team-a of 16 GPUs, LocalQueue
    user-queue."""
    from sandbox.testing import SandboxProcess

    with SandboxProcess(topology="demo", controllers=True, extra_args=["--bookmark-interval", "0.5"],
                        env={"SANDBOX_GENERATOR": "0", "SANDBOX_POD_START_DELAY": "0.2", "SANDBOX_KUEUE": "1",
                             "SANDBOX_KUEUE_GPU_QUOTA": "team-a=16"}) as process:
        yield process


@pytest.fixture
def cluster(demo_cluster, settings):
    """The gateway pointed at the Kueue sandbox once Kueue has made team-a's queues; the demo runtimes installed."""
    import yaml

    from trainer_portal import kube
    from trainer_portal.kube.client import get_gateway, reset_gateway

    settings.KUBE_CONFIG_PATH = demo_cluster.kubeconfig
    settings.KUBE_CONTEXT = ""
    settings.KUBE_IN_CLUSTER = False
    reset_gateway()
    gateway = get_gateway()
    if gateway.get(kube.CORE_NAMESPACE, name="team-a") is None:
        gateway.create(kube.CORE_NAMESPACE, body={"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": "team-a"}})
    # Kueue installs its CRDs and queues after the sandbox is ready: the watcher must find them when it lists.
    demo_cluster.wait_until(lambda: _exists(gateway, "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/"
                                                     "user-queue"), timeout=30)
    runtime = gateway.resolve(kube.CLUSTER_TRAINING_RUNTIME)
    for path in sorted(RUNTIMES.glob("*.yaml")):
        body = yaml.safe_load(path.read_text())
        if gateway.get(runtime, name=body["metadata"]["name"]) is None:
            gateway.create(runtime, body=body)
    yield demo_cluster
    reset_gateway()


def _exists(gateway, path: str) -> bool:
    from trainer_portal import kube

    try:
        gateway.request("GET", path)
    except kube.KubeError:
        return False
    return True


def _submit(gateway, name: str, nodes: int) -> dict:
    """Create a TrainJob in team-a queued on Kueue's LocalQueue user-queue (official client underneath)."""
    from trainer_portal import kube

    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "team-a",
                         "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                         "annotations": {"sandbox.trainer-portal.io/duration-seconds": "600"}},
            "spec": {"runtimeRef": {"name": "torch-gang-zone"},
                     "trainer": {"numNodes": nodes, "resourcesPerNode": {
                         "requests": {"nvidia.com/gpu": str(GPUS_PER_NODE)}}}}}
    return gateway.create(gateway.resolve(kube.TRAINJOB), body=body)


def test_over_quota_job_reads_inadmissible_with_the_real_queues_numbers_while_a_fitting_job_runs(
        browser, demo_cluster, cluster, database, watchers, portal):  # noqa: F811
    from trainer_portal.kube.client import get_gateway

    gateway = get_gateway()
    watchers()
    wait_until(lambda: (tracker_status(database) or {}).get("synced"))
    big = _submit(gateway, "too-big-for-queue", nodes=3)  # 3 × 8 = 24 GPUs > 16, ever
    fits = _submit(gateway, "fits-the-queue", nodes=1)  # 8 GPUs: admitted by the same ClusterQueue
    wait_until(lambda: rows(database).get("team-a/too-big-for-queue", {}).get("state") == "inadmissible")
    wait_until(lambda: rows(database).get("team-a/fits-the-queue", {}).get("state") == "running")

    context = browser.new_context(base_url=portal, viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto("/login/")
    page.fill("#id_username", "dana")
    page.fill("#id_password", "dana-password-1")
    page.click("form button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/$"))

    assert sorted(_rows(page)) == ["fits-the-queue", "too-big-for-queue"]
    row = page.locator(f"#job-{big['metadata']['uid']}")
    assert row.locator(".jobs-state").inner_text() == "Inadmissible"
    assert row.locator(".jobs-reason__line").inner_text() == "exceeds the queue's quota"
    expect(page.locator(f"#job-{fits['metadata']['uid']} .jobs-state")).to_have_text("Running")

    page.goto("/jobs/team-a/too-big-for-queue/")
    card = page.locator(".jobs-reason-card").inner_text()
    # Only the queues provider knows the ClusterQueue's nominal quota and that nothing is borrowable: Kueue's own
    # message ("request > maximum capacity (24 > 16)") alone does not produce this sentence.
    assert ("Cannot be admitted in cq-team-a as configured: needs 24 GPUs, the queue holds at most 16 "
            "(16 nominal, nothing borrowable from the cohort)") in card, card
    assert "fits on the cluster now" not in card
    context.close()
