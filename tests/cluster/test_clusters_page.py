"""/cluster/clusters/: platform admins list, add, change and remove clusters; nobody else; the kubeconfig is never
shown; refusals name the field; the cluster picker follows ?cluster=."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.test import RequestFactory

from trainer_portal.cluster.context_processors import cluster_picker
from trainer_portal.cluster.models import Cluster

from .test_clusters_api import KUBECONFIG, TOKEN

pytestmark = pytest.mark.django_db


def _form(**fields) -> dict:
    return {"name": "gpu-west", "display_name": "", "connection": "kubeconfig", "kubeconfig": KUBECONFIG,
            "context": "", "secret_ref": "", "block_label_key": "", "enabled": "on", **fields}


def test_only_platform_admins_open_the_page(client, alice, bob, charlie):
    assert client.get("/cluster/clusters/").status_code == 302
    for user in (bob, charlie):
        client.force_login(user)
        assert client.get("/cluster/clusters/").status_code == 403
        assert client.post("/cluster/clusters/", _form()).status_code == 403
    client.force_login(alice)
    page = client.get("/cluster/clusters/")
    assert page.status_code == 200
    assert Cluster.objects.get().name in page.content.decode()
    assert 'href="/cluster/clusters/"' in page.content.decode()  # the admin's navigation links it
    assert not Cluster.objects.filter(name="gpu-west").exists()


def test_an_admin_adds_changes_and_removes_a_cluster(client, alice):
    client.force_login(alice)

    added = client.post("/cluster/clusters/", _form(display_name="GPU West"), follow=True)
    edit = client.get("/cluster/clusters/gpu-west/")
    saved = client.post("/cluster/clusters/gpu-west/", _form(display_name="West", kubeconfig="", version="1"),
                        follow=True)
    stale = client.post("/cluster/clusters/gpu-west/", _form(display_name="Again", kubeconfig="", version="1"))
    removed = client.post("/cluster/clusters/gpu-west/", {"action": "delete", "version": "2"}, follow=True)

    assert added.status_code == 200 and "Cluster gpu-west added" in added.content.decode()
    assert edit.status_code == 200
    for response in (added, edit, saved, stale):
        assert TOKEN not in response.content.decode()
    assert saved.status_code == 200 and "saved (version 2)" in saved.content.decode()
    assert stale.status_code == 409
    assert removed.status_code == 200 and not Cluster.objects.filter(name="gpu-west").exists()


def test_a_refused_form_names_the_field(client, alice):
    client.force_login(alice)
    response = client.post("/cluster/clusters/", _form(kubeconfig="clusters: [unclosed"))
    default = Cluster.objects.get()
    undeletable = client.post(f"/cluster/clusters/{default.name}/", {"action": "delete",
                                                                       "version": str(default.version)})

    assert response.status_code == 400
    assert response.context["form"].errors["kubeconfig"]
    assert undeletable.status_code == 409 and Cluster.objects.filter(pk=default.pk).exists()
    assert client.get("/cluster/clusters/nope/").status_code == 404


def test_the_picker_selects_the_named_cluster_else_the_default():
    west = Cluster.objects.create(name="gpu-west", connection="in_cluster")
    factory = RequestFactory()
    template = Template('{% include "components/cluster_picker.html" %}')

    named = cluster_picker(factory.get("/jobs/?cluster=gpu-west"))
    unnamed = cluster_picker(factory.get("/jobs/?cluster=nope"))
    rendered = template.render(Context(named))

    assert named["selected_cluster"].pk == west.pk
    assert unnamed["selected_cluster"].is_default
    assert '<option value="gpu-west" selected>' in rendered
    assert len(list(named["clusters"])) == 2
