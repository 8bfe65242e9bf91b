"""Two sandbox clusters at once: gateway_for reaches each (stored kubeconfig, kubeconfig in a Secret, the settings),
get_gateway() follows the default cluster, TrainJobs tracked from each carry their cluster, and a grant on one
cluster shows that cluster's namespace only."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from rest_framework.test import APIClient

from jobs import selectors
from jobs.handlers import AdmissionHandler
from jobs.models import NamespaceGrant, TrackerStatus, TrainJob
from sandbox.testing import SandboxProcess
from tests.jobs import objects as o
from trainer_portal import kube
from trainer_portal.cluster import registry_services
from trainer_portal.cluster.connections import connection_for
from trainer_portal.cluster.models import Cluster
from trainer_portal.kube import resources as kinds
from trainer_portal.kube.client import gateway_for, get_gateway

pytestmark = pytest.mark.django_db
SECRET = kube.Resource("", "v1", "Secret", "secrets", True)


@pytest.fixture(scope="module")
def west():
    """A second sandbox cluster (the session sandbox is the default, "east")."""
    with SandboxProcess(topology="none", controllers=False) as process:
        yield process


@pytest.fixture
def clusters(cluster, west):
    """The default cluster (settings → the session sandbox) and gpu-west (a stored kubeconfig → ``west``)."""
    west.reset()
    default = Cluster.objects.get(is_default=True)
    gpu_west = registry_services.cluster_create({"name": "gpu-west",
                                                 "kubeconfig": Path(west.kubeconfig).read_text()})
    return default, gpu_west


def _namespaces(gateway) -> set[str]:
    return {item["metadata"]["name"] for item in gateway.list(kube.CORE_NAMESPACE).items}


def test_gateway_for_reaches_each_cluster_and_caches_per_version(clusters, cluster, west):
    default, gpu_west = clusters
    east_gateway = gateway_for(connection_for(default))
    west_gateway = gateway_for(connection_for(gpu_west))

    west_gateway.create(kube.CORE_NAMESPACE, body={"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": "only-west"}})

    assert east_gateway.host == cluster.url.rstrip("/") or east_gateway.host.startswith(cluster.url.rstrip("/"))
    assert west_gateway.host != east_gateway.host
    assert "only-west" in _namespaces(west_gateway)
    assert "only-west" not in _namespaces(east_gateway)
    assert gateway_for(connection_for(gpu_west)) is west_gateway
    assert "stored kubeconfig" in west_gateway.settings.describe()
    assert "config_text" not in repr(west_gateway.settings) and "token" not in repr(west_gateway.settings)
    changed = registry_services.cluster_update("gpu-west", {"displayName": "West"}, expected_version=1)
    assert gateway_for(connection_for(changed)) is not west_gateway


def test_a_kubeconfig_in_a_secret_of_the_default_cluster_reaches_the_other(clusters, gateway, west):
    text = Path(west.kubeconfig).read_text()
    gateway.create(SECRET, body={"apiVersion": "v1", "kind": "Secret",
                                 "metadata": {"name": "west-kubeconfig", "namespace": "default"},
                                 "data": {"kubeconfig": base64.b64encode(text.encode()).decode()}})
    via_secret = registry_services.cluster_create({"name": "west-secret", "secretRef": "default/west-kubeconfig"})
    missing = registry_services.cluster_create({"name": "west-missing", "secretRef": "default/nope"})
    wrong_key = registry_services.cluster_create({"name": "west-wrong-key",
                                                  "secretRef": "default/west-kubeconfig/other"})

    reached = gateway_for(connection_for(via_secret))

    assert reached.host == gateway_for(connection_for(clusters[1])).host
    assert reached.server_version()["major"] == "1"
    with pytest.raises(kube.KubeNotConfigured, match="does not exist"):
        gateway_for(connection_for(missing))
    with pytest.raises(kube.KubeNotConfigured, match="has no key other"):
        gateway_for(connection_for(wrong_key))


def test_get_gateway_means_the_default_cluster(clusters, cluster, west):
    _, gpu_west = clusters
    before = get_gateway().host

    registry_services.cluster_update("gpu-west", {"isDefault": True}, expected_version=gpu_west.version)

    assert get_gateway().host == gateway_for(connection_for(Cluster.objects.get(name="gpu-west"))).host
    assert get_gateway().host != before


def _track(cluster_row, gateway, job: dict) -> None:
    """What the tracker of ``cluster_row`` does: the TrainJob exists on its cluster and the handler writes it."""
    trainjob = gateway.resolve(kube.TRAINJOB)
    created = gateway.create(trainjob, body={k: v for k, v in job.items() if k != "status"})
    handler = AdmissionHandler(identity=f"watch-{cluster_row.name}", cluster=cluster_row.pk)
    for kind in handler.kinds:
        handler.relisted(kind, [created] if kind == kinds.TRAINJOB else [], "1")
    handler.leadership_gained()
    handler.flush(leader=True)


def test_jobs_from_both_clusters_carry_their_cluster_and_a_grant_on_one_cluster(clusters, gateway, west,
                                                                              django_user_model):
    default, gpu_west = clusters
    west_gateway = gateway_for(connection_for(gpu_west))
    for gw in (gateway, west_gateway):
        gw.create(kube.CORE_NAMESPACE, body={"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": "team-a"}})
    _track(default, gateway, o.trainjob("east-job", "same-uid", namespace="team-a"))
    _track(gpu_west, west_gateway, o.trainjob("west-job", "same-uid", namespace="team-a"))

    rows = {row.cluster.name: row for row in TrainJob.objects.select_related("cluster")}
    assert set(rows) == {default.name, "gpu-west"}
    assert rows["gpu-west"].name == "west-job" and rows[default.name].name == "east-job"
    assert set(TrackerStatus.objects.values_list("cluster__name", flat=True)) == {default.name, "gpu-west"}

    # The API: every job carries its cluster; ?cluster= filters; the detail path is the default cluster's unless
    # ?cluster= names another.
    admin = APIClient()
    admin.force_authenticate(django_user_model.objects.create_superuser("root", password="root-password-1"))
    listed = admin.get("/api/v1/trainjobs/").json()["items"]
    assert {(job["cluster"], job["name"]) for job in listed} == {(default.name, "east-job"), ("gpu-west", "west-job")}
    only_west = admin.get("/api/v1/trainjobs/?cluster=gpu-west").json()["items"]
    assert [job["name"] for job in only_west] == ["west-job"]
    assert admin.get("/api/v1/trainjobs/?cluster=nope").status_code == 400
    assert admin.get("/api/v1/trainjobs/team-a/east-job/").json()["cluster"] == default.name
    assert admin.get("/api/v1/trainjobs/team-a/west-job/").status_code == 404
    assert admin.get("/api/v1/trainjobs/team-a/west-job/?cluster=gpu-west").json()["cluster"] == "gpu-west"
    summary = admin.get("/api/v1/trainjobs/summary/?cluster=gpu-west").json()
    assert summary["total"] == 1

    # A data scientist granted team-a on gpu-west only sees the west job, on the API and the pages.
    scientist = django_user_model.objects.create_user("sam", password="sam-password-1")
    scientist.groups.add(Group.objects.get_or_create(name="data-scientist")[0])
    team, _ = Group.objects.get_or_create(name="team-a-ml")
    scientist.groups.add(team)
    NamespaceGrant.objects.create(group=team, namespace="team-a", cluster=gpu_west)
    as_sam = APIClient()
    as_sam.force_authenticate(scientist)
    assert [(j["cluster"], j["name"]) for j in as_sam.get("/api/v1/trainjobs/").json()["items"]] == [
        ("gpu-west", "west-job")]
    assert as_sam.get("/api/v1/trainjobs/team-a/east-job/").status_code == 404
    assert as_sam.get("/api/v1/trainjobs/team-a/west-job/?cluster=gpu-west").status_code == 200
    visible = selectors.visible_namespaces(scientist)
    assert visible.allows("team-a", gpu_west.pk) and not visible.allows("team-a", default.pk)
    browser = Client()
    browser.force_login(scientist)
    page = browser.get("/jobs/").content.decode()
    assert "west-job" in page and "east-job" not in page
    assert "/jobs/team-a/west-job/?cluster=gpu-west" in page
    assert browser.get("/jobs/team-a/west-job/?cluster=gpu-west").status_code == 200
    assert browser.get("/jobs/team-a/east-job/").status_code == 404
    admin_page = Client()
    admin_page.force_login(django_user_model.objects.get(username="root"))
    everything = admin_page.get("/jobs/overview/").content.decode()
    overview = admin_page.get("/jobs/overview/?cluster=gpu-west").content.decode()
    assert "west-job" in everything and "east-job" in everything
    assert "west-job" in overview and "east-job" not in overview
    assert admin_page.get("/jobs/overview/?cluster=nope").status_code == 400
