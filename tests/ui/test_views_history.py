"""History, diff, rollback, delete, export and import pages."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from runtimes.domain.manifest import dump_many, dump_yaml, load_runtimes
from runtimes.models import RuntimePolicy
from runtimes.selectors import policy_get
from runtimes.services.policies import policy_update
from tests.fixture_paths import REFERENCE_RUNTIMES
from tests.ui import l2_l3_manifest, make_policy, torch_manifest

REFERENCE = REFERENCE_RUNTIMES


@pytest.fixture
def admin_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def two_revisions(alice):
    policy = make_policy(l2_l3_manifest(), alice, message="first")
    changed = l2_l3_manifest()
    changed["spec"]["mlPolicy"]["numNodes"] = 16
    return policy_update(name=policy.name, manifest=changed, expected_version=1, author=alice, message="bigger")


def url(view: str, **kwargs) -> str:
    return reverse(f"runtimes:{view}", kwargs=kwargs)


@pytest.mark.django_db
def test_it_lists_every_revision_with_author_and_message(admin_client, two_revisions):
    html = admin_client.get(url("history", name="mpi-racks")).content.decode()
    assert "#2" in html and "#1" in html
    assert "bigger" in html and "first" in html
    assert url("rollback", name="mpi-racks", number=1) in html


@pytest.mark.django_db
def test_it_hides_rollback_from_viewers(client, bob, two_revisions):
    client.force_login(bob)
    html = client.get(url("history", name="mpi-racks")).content.decode()
    assert url("rollback", name="mpi-racks", number=1) not in html


@pytest.mark.django_db
def test_it_shows_a_coloured_unified_diff(admin_client, two_revisions):
    response = admin_client.get(url("diff", name="mpi-racks"), {"from": 1, "to": 2})
    assert response.status_code == 200
    html = response.content.decode()
    removed = '<span class="diff__line diff__line--del"><span class="visually-hidden">removed: </span>'
    added = '<span class="diff__line diff__line--add"><span class="visually-hidden">added: </span>'
    assert removed + "-    numNodes: 4" in html
    assert added + "+    numNodes: 16" in html


@pytest.mark.django_db
def test_it_diffs_the_latest_change_by_default(admin_client, two_revisions):
    response = admin_client.get(url("diff", name="mpi-racks"))
    assert (response.context["from_number"], response.context["to_number"]) == (1, 2)


@pytest.mark.django_db
def test_it_returns_404_for_a_missing_revision(admin_client, two_revisions):
    assert admin_client.get(url("diff", name="mpi-racks"), {"from": 1, "to": 9}).status_code == 404


@pytest.mark.django_db
def test_it_confirms_then_rolls_back(admin_client, two_revisions):
    confirm = admin_client.get(url("rollback", name="mpi-racks", number=1))
    assert confirm.status_code == 200
    assert "numNodes: 4" in confirm.content.decode()

    response = admin_client.post(url("rollback", name="mpi-racks", number=1), {"version": 2}, follow=True)

    assert "Rolled back to revision 1" in response.content.decode()
    policy = policy_get(name="mpi-racks")
    assert policy.version == 3
    assert policy.manifest["spec"]["mlPolicy"]["numNodes"] == 4


@pytest.mark.django_db
def test_it_refuses_a_rollback_from_a_stale_page(admin_client, two_revisions):
    response = admin_client.post(url("rollback", name="mpi-racks", number=1), {"version": 1}, follow=True)
    assert "changed since you loaded it" in response.content.decode()
    assert policy_get(name="mpi-racks").version == 2


@pytest.mark.django_db
def test_it_deletes_after_confirmation(admin_client, two_revisions):
    assert admin_client.get(url("delete", name="mpi-racks")).status_code == 200
    response = admin_client.post(url("delete", name="mpi-racks"), {"version": 2})
    assert response.status_code == 302
    assert not RuntimePolicy.objects.filter(name="mpi-racks").exists()


@pytest.mark.django_db
def test_it_exports_kubectl_ready_yaml(admin_client, two_revisions):
    response = admin_client.get(url("export", name="mpi-racks"))
    assert response["Content-Type"].startswith("application/yaml")
    assert response["Content-Disposition"] == 'attachment; filename="mpi-racks.yaml"'
    assert load_runtimes(response.content) == [two_revisions.manifest]


@pytest.mark.django_db
def test_it_exports_all_policies_as_one_stream(admin_client, alice, two_revisions):
    make_policy(torch_manifest("another"), alice)
    response = admin_client.get(reverse("runtimes:export-all"))
    names = [m["metadata"]["name"] for m in load_runtimes(response.content)]
    assert names == ["another", "mpi-racks"]


# ----------------------------------------------------------------------------------------------- import


@pytest.mark.django_db
def test_it_imports_pasted_multi_document_yaml(admin_client):
    text = dump_many([torch_manifest("one"), torch_manifest("two")])
    response = admin_client.post(url("import"), {"text": text, "mode": "create-only", "message": "bulk"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "2 created" in html
    assert set(RuntimePolicy.objects.values_list("name", flat=True)) == {"one", "two"}


@pytest.mark.django_db
def test_it_imports_an_uploaded_file_and_opens_it(admin_client):
    upload = SimpleUploadedFile("one.yaml", dump_yaml(torch_manifest("uploaded")).encode(), "application/yaml")
    response = admin_client.post(url("import"), {"file": upload, "mode": "create-only"})
    assert response.status_code == 302
    assert response["Location"] == url("detail", name="uploaded")


@pytest.mark.django_db
def test_it_imports_the_upstream_runtimes_in_one_paste(admin_client):
    text = "---\n".join(path.read_text() for path in sorted(REFERENCE.glob("*.yaml")))
    response = admin_client.post(url("import"), {"text": text, "mode": "upsert"})
    assert response.status_code == 200, response.content.decode()[:2000]
    assert RuntimePolicy.objects.count() == len(list(REFERENCE.glob("*.yaml")))


@pytest.mark.django_db
def test_it_reports_per_document_errors_with_lines(admin_client):
    good = dump_yaml(torch_manifest("good"))
    bad = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n  name: [oops\n"
    response = admin_client.post(url("import"), {"text": good + "---\n" + bad, "mode": "create-only"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was imported" in html
    assert "line" in html
    assert not RuntimePolicy.objects.exists()


@pytest.mark.django_db
def test_it_refuses_existing_names_in_create_only_mode(admin_client, alice):
    make_policy(torch_manifest("taken"), alice)
    response = admin_client.post(url("import"), {"text": dump_yaml(torch_manifest("taken")), "mode": "create-only"})
    assert response.status_code == 400
    assert "upsert" in response.content.decode()


@pytest.mark.django_db
def test_it_asks_for_input(admin_client):
    response = admin_client.post(url("import"), {"text": "  ", "mode": "create-only"})
    assert response.status_code == 400
    assert "Paste YAML/JSON or choose a file" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("view", ["rollback", "delete"])
def test_it_wants_the_version_on_confirmations(admin_client, two_revisions, view):
    kwargs = {"name": "mpi-racks", "number": 1} if view == "rollback" else {"name": "mpi-racks"}
    response = admin_client.post(url(view, **kwargs), {}, follow=True)
    assert "lost its version number" in response.content.decode()
    assert policy_get(name="mpi-racks").version == 2


@pytest.mark.django_db
def test_it_refuses_to_delete_from_a_stale_page(admin_client, two_revisions):
    response = admin_client.post(url("delete", name="mpi-racks"), {"version": 1}, follow=True)
    assert "changed since you loaded it" in response.content.decode()
    assert RuntimePolicy.objects.filter(name="mpi-racks").exists()
