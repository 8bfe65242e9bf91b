"""/api/v1/clusters/: CRUD, strict validation naming the field, optimistic concurrency, the one default, who may
read and write, and kubeconfigs stored encrypted (never returned, never in clear in the database)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from rest_framework.test import APIClient

from trainer_portal.cluster.connections import (
    KubeconfigUnreadable,
    connection_for,
    decrypt_kubeconfig,
    encrypt_kubeconfig,
)
from trainer_portal.cluster.models import Cluster

pytestmark = pytest.mark.django_db

TOKEN = "sEcReT-bearer-token-0123456789abcdef"
KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters:
- name: west
  cluster: {{server: 'http://127.0.0.1:9'}}
users:
- name: admin
  user: {{token: {TOKEN}}}
contexts:
- name: west-admin
  context: {{cluster: west, user: admin}}
- name: west-other
  context: {{cluster: west, user: admin}}
current-context: west-admin
"""


def _client(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def as_alice(alice):
    return _client(alice)


@pytest.fixture
def as_bob(bob):
    return _client(bob)


def _fields(response) -> list[str]:
    return [item["path"] for item in response.json()["error"]["fields"]]


def _add(client, **body):
    return client.post("/api/v1/clusters/", {"name": "gpu-west", "kubeconfig": KUBECONFIG, **body}, format="json")


def test_the_list_starts_with_the_migrated_default_cluster(as_bob):
    body = as_bob.get("/api/v1/clusters/").json()

    assert len(body) == 1
    default = body[0]
    assert default["isDefault"] is True and default["connection"] == "settings" and default["enabled"] is True
    assert default["health"] == {"state": "unknown", "checkedAt": None}
    assert "kubeconfig" not in default and default["hasKubeconfig"] is False


def test_an_admin_adds_a_cluster_by_kubeconfig_stored_encrypted_and_never_returned(as_alice):
    created = _add(as_alice, displayName="GPU West", context="west-other", blockLabelKey="example.com/block")

    assert created.status_code == 201, created.json()
    body = created.json()
    assert created["Location"].endswith("/api/v1/clusters/gpu-west/")
    assert body["connection"] == "kubeconfig" and body["hasKubeconfig"] is True and body["version"] == 1
    assert body["context"] == "west-other" and body["blockLabelKey"] == "example.com/block"
    assert body["isDefault"] is False
    assert "kubeconfig" not in body and TOKEN not in created.content.decode()
    assert TOKEN not in as_alice.get("/api/v1/clusters/gpu-west/").content.decode()
    # In the database: only ciphertext, whatever column one looks at.
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM cluster_cluster WHERE name = %s", ["gpu-west"])
        raw = " ".join(str(value) for value in cursor.fetchone())
    assert TOKEN not in raw and "west-admin" not in raw and "apiVersion" not in raw
    stored = Cluster.objects.get(name="gpu-west")
    assert decrypt_kubeconfig(stored.kubeconfig_encrypted) == KUBECONFIG
    assert TOKEN not in repr(connection_for(stored))
    assert connection_for(stored).kubeconfig == KUBECONFIG


def test_in_cluster_and_secret_connections(as_alice):
    in_cluster = as_alice.post("/api/v1/clusters/", {"name": "local", "inCluster": True}, format="json")
    secret = as_alice.post("/api/v1/clusters/", {"name": "east", "secretRef": "portal/east-kubeconfig/config"},
                           format="json")

    assert in_cluster.status_code == 201 and in_cluster.json()["inCluster"] is True
    assert in_cluster.json()["connection"] == "in_cluster"
    assert secret.status_code == 201 and secret.json()["secretRef"] == "portal/east-kubeconfig/config"
    found = connection_for(Cluster.objects.get(name="east"))
    assert (found.kind, found.secret_namespace, found.secret_name, found.secret_key) == (
        "secret", "portal", "east-kubeconfig", "config")


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "gpu-west"}, "kubeconfig"),
    ({"name": "GPU_West", "inCluster": True}, "name"),
    ({"name": "x" * 64, "inCluster": True}, "name"),
    ({"inCluster": True}, "name"),
    ({"name": "gpu-west", "kubeconfig": KUBECONFIG, "inCluster": True}, "inCluster"),
    ({"name": "gpu-west", "kubeconfig": "clusters: [unclosed"}, "kubeconfig"),
    ({"name": "gpu-west", "kubeconfig": "just text"}, "kubeconfig"),
    ({"name": "gpu-west", "kubeconfig": KUBECONFIG, "context": "nope"}, "context"),
    ({"name": "gpu-west", "kubeconfig": KUBECONFIG.replace("\ncurrent-context: west-admin", "")}, "context"),
    ({"name": "gpu-west", "kubeconfig": KUBECONFIG + "\x00"}, "kubeconfig"),
    ({"name": "gpu-west", "kubeconfig": 42}, "kubeconfig"),
    ({"name": "gpu-west", "secretRef": "only-a-name"}, "secretRef"),
    ({"name": "gpu-west", "secretRef": "Bad_NS/name"}, "secretRef"),
    ({"name": "gpu-west", "inCluster": "yes"}, "inCluster"),
    ({"name": "gpu-west", "inCluster": True, "isDefault": 1}, "isDefault"),
    ({"name": "gpu-west", "inCluster": True, "blockLabelKey": "not a key"}, "blockLabelKey"),
    ({"name": "gpu-west", "inCluster": True, "context": "west-admin"}, "context"),
    ({"name": "gpu-west", "inCluster": True, "colour": "blue"}, "colour"),
    ({"name": "gpu-west", "connection": "telepathy"}, "connection"),
    ({"name": "gpu-west", "connection": "settings"}, "connection"),  # the default connects this way already
    ({"name": "gpu-west", "inCluster": True, "enabled": False, "isDefault": True}, "enabled"),
])
def test_a_bad_post_is_a_400_naming_the_field(as_alice, body, field):
    response = as_alice.post("/api/v1/clusters/", body, format="json")

    assert response.status_code == 400, response.json()
    assert field in _fields(response)
    assert TOKEN not in response.content.decode()
    assert Cluster.objects.count() == 1


def test_a_body_that_is_not_an_object_is_a_400(as_alice):
    assert as_alice.post("/api/v1/clusters/", ["gpu-west"], format="json").status_code == 400


def test_a_taken_name_is_a_409(as_alice):
    assert _add(as_alice).status_code == 201
    again = _add(as_alice)
    assert again.status_code == 409 and "name" in _fields(again)


def test_patch_needs_the_version_and_refuses_a_stale_one(as_alice):
    _add(as_alice)

    missing = as_alice.patch("/api/v1/clusters/gpu-west/", {"displayName": "West"}, format="json")
    stale = as_alice.patch("/api/v1/clusters/gpu-west/", {"displayName": "West", "version": 7}, format="json")
    good = as_alice.patch("/api/v1/clusters/gpu-west/", {"displayName": "West", "version": 1}, format="json")
    replayed = as_alice.patch("/api/v1/clusters/gpu-west/", {"displayName": "Again", "version": 1}, format="json")
    by_header = as_alice.patch("/api/v1/clusters/gpu-west/", {"enabled": False}, format="json", HTTP_IF_MATCH='"2"')

    assert missing.status_code == 400 and "version" in _fields(missing)
    assert stale.status_code == 409 and stale.json()["error"]["currentVersion"] == 1
    assert good.status_code == 200 and good.json()["displayName"] == "West" and good.json()["version"] == 2
    assert good["ETag"] == '"2"'
    assert replayed.status_code == 409
    assert by_header.status_code == 200 and by_header.json()["enabled"] is False


def test_patch_never_renames_and_keeps_the_stored_kubeconfig(as_alice):
    _add(as_alice)
    renamed = as_alice.patch("/api/v1/clusters/gpu-west/", {"name": "gpu-east", "version": 1}, format="json")
    context = as_alice.patch("/api/v1/clusters/gpu-west/", {"context": "west-other", "version": 1}, format="json")
    bad_context = as_alice.patch("/api/v1/clusters/gpu-west/", {"context": "nope", "version": 2}, format="json")

    assert renamed.status_code == 400 and "name" in _fields(renamed)
    assert context.status_code == 200 and context.json()["hasKubeconfig"] is True
    assert bad_context.status_code == 400 and "context" in _fields(bad_context)
    assert decrypt_kubeconfig(Cluster.objects.get(name="gpu-west").kubeconfig_encrypted) == KUBECONFIG


def test_the_default_moves_and_cannot_be_removed_or_disabled(as_alice):
    _add(as_alice)
    default = Cluster.objects.get(is_default=True)

    disable = as_alice.patch(f"/api/v1/clusters/{default.name}/", {"enabled": False, "version": default.version},
                             format="json")
    undefault = as_alice.patch(f"/api/v1/clusters/{default.name}/", {"isDefault": False,
                                                                     "version": default.version}, format="json")
    removed = as_alice.delete(f"/api/v1/clusters/{default.name}/")
    moved = as_alice.patch("/api/v1/clusters/gpu-west/", {"isDefault": True, "version": 1}, format="json")

    assert disable.status_code == 400 and "enabled" in _fields(disable)
    assert undefault.status_code == 400 and "isDefault" in _fields(undefault)
    assert removed.status_code == 409
    assert moved.status_code == 200 and moved.json()["isDefault"] is True
    assert list(Cluster.objects.filter(is_default=True).values_list("name", flat=True)) == ["gpu-west"]
    old = Cluster.objects.get(pk=default.pk)
    assert old.is_default is False and old.version == default.version + 1
    assert as_alice.delete(f"/api/v1/clusters/{default.name}/", HTTP_IF_MATCH=f'"{old.version}"').status_code == 204
    assert as_alice.delete("/api/v1/clusters/gpu-west/").status_code == 409  # now the default and the last


def test_unknown_clusters_are_404(as_alice):
    assert as_alice.get("/api/v1/clusters/nope/").status_code == 404
    assert as_alice.patch("/api/v1/clusters/nope/", {"version": 1}, format="json").status_code == 404
    assert as_alice.delete("/api/v1/clusters/nope/").status_code == 404


def test_delete_with_a_stale_version_is_a_409(as_alice):
    _add(as_alice)
    assert as_alice.delete("/api/v1/clusters/gpu-west/", HTTP_IF_MATCH='"5"').status_code == 409
    assert Cluster.objects.filter(name="gpu-west").exists()


def test_any_portal_role_reads_only_platform_admins_write(as_bob, charlie, django_user_model):
    scientist = django_user_model.objects.create_user("sam", password="sam-password-1")
    scientist.groups.add(Group.objects.get_or_create(name="data-scientist")[0])

    assert as_bob.get("/api/v1/clusters/").status_code == 200
    assert _client(scientist).get("/api/v1/clusters/").status_code == 200
    assert _client(charlie).get("/api/v1/clusters/").status_code == 403
    assert _client().get("/api/v1/clusters/").status_code in (401, 403)
    for client in (as_bob, _client(scientist), _client(charlie)):
        assert _add(client).status_code == 403
        name = Cluster.objects.get().name
        assert client.patch(f"/api/v1/clusters/{name}/", {"version": 1}, format="json").status_code == 403
        assert client.delete(f"/api/v1/clusters/{name}/").status_code == 403
    assert Cluster.objects.count() == 1


def test_rotated_keys_still_decrypt_and_a_lost_key_is_reported(settings):
    from cryptography.fernet import Fernet

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.ENCRYPTION_KEYS = [old]
    token = encrypt_kubeconfig(KUBECONFIG)
    settings.ENCRYPTION_KEYS = [new, old]
    assert decrypt_kubeconfig(token) == KUBECONFIG
    assert decrypt_kubeconfig(encrypt_kubeconfig("x")) == "x"
    settings.ENCRYPTION_KEYS = [new]
    with pytest.raises(KubeconfigUnreadable) as caught:
        decrypt_kubeconfig(token)
    assert TOKEN not in str(caught.value)


def test_the_embedded_key_is_derived_from_the_secret_key(settings):
    settings.ENCRYPTION_KEYS = []
    token = encrypt_kubeconfig(KUBECONFIG)
    assert decrypt_kubeconfig(token) == KUBECONFIG
    settings.SECRET_KEY = "another-secret-key-" + "y" * 40
    with pytest.raises(KubeconfigUnreadable):
        decrypt_kubeconfig(token)


@pytest.mark.parametrize("text", ["clusters: [{name: x, token: " + TOKEN, "users: [" + TOKEN + "]", TOKEN])
def test_an_unusable_stored_kubeconfig_is_not_configured_and_never_quoted(text):
    from trainer_portal import kube
    from trainer_portal.kube.client import gateway_for

    with pytest.raises(kube.KubeNotConfigured) as caught:
        gateway_for(kube.ClusterConnection(name="broken", kind="kubeconfig", kubeconfig=text))
    assert TOKEN not in caught.value.message and 'cluster "broken"' in caught.value.message
    assert TOKEN not in repr(kube.ClusterConnection(name="broken", kind="kubeconfig", kubeconfig=text))


def test_health_is_what_the_last_background_check_stored(as_bob, cluster, settings):
    from trainer_portal.cluster import status

    status.check_cluster(include_permissions=False)  # the worker's check, against the sandbox
    health = as_bob.get("/api/v1/clusters/").json()[0]["health"]
    assert health["state"] == "ok" and health["checkedAt"]
    # A cluster the worker cannot reach is recorded as such:
    settings.KUBE_CONFIG_PATH = "/nonexistent-kubeconfig"
    from trainer_portal.kube.client import reset_gateway

    reset_gateway()
    status.check_cluster(include_permissions=False)
    assert as_bob.get("/api/v1/clusters/").json()[0]["health"]["state"] == "unreachable"
