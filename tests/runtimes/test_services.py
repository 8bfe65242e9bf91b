"""Runtime-policy services: create, update (compare-and-set), patch, rollback, delete, import, validate.

The helpers at the top (`runtime`, `level1`, `broken`, `reference_texts`) are shared with the API tests.
"""

from __future__ import annotations

import pytest

from runtimes.choices import ImportMode, RevisionSource
from runtimes.domain.diff import semantically_equal
from runtimes.domain.manifest import dump_many, dump_yaml, new_runtime
from runtimes.errors import (
    ImportInvalid,
    PolicyInvalid,
    PolicyNameTaken,
    PolicyNotFound,
    RevisionNotFound,
    StaleVersion,
)
from runtimes.models import PolicyRevision, RuntimePolicy
from runtimes.services import policies as policy_services
from tests.fixture_paths import REFERENCE_RUNTIMES


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Hash the personas' passwords with MD5: the real hasher costs ~0.5 s per user and proves nothing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def runtime(name: str = "torch-gang", *, num_nodes: int = 1) -> dict:
    """Return a valid minimal runtime named `name`."""
    manifest = new_runtime(name)
    manifest["spec"]["mlPolicy"]["numNodes"] = num_nodes
    return manifest


def level1(name: str = "torch-gang", *, key: str = "topology.kubernetes.io/rack") -> dict:
    """Return a valid runtime with a level-1 gang constrained to topology `key`."""
    manifest = runtime(name)
    manifest["spec"]["scheduling"] = {
        "schedulingPolicy": {"gang": {}},
        "schedulingConstraints": {"topology": [{"key": key}]},
    }
    return manifest


def broken(name: str = "torch-gang") -> dict:
    """Return a runtime whose level-2 entry targets a ReplicatedJob that does not exist (an error), with the v1alpha2
    string disruptionMode (a warning)."""
    manifest = runtime(name)
    manifest["spec"]["scheduling"] = {
        "replicatedJobs": [
            {"targetReplicatedJobs": ["nope"], "schedulingPolicy": {"gang": {}}, "disruptionMode": "PodGroup"},
            {"targetReplicatedJobs": ["node"], "schedulingPolicy": {"gang": {}}},
        ]
    }
    return manifest


def reference_texts() -> dict[str, str]:
    """Return the upstream example runtimes: file name → YAML text."""
    return {path.name: path.read_text() for path in sorted(REFERENCE_RUNTIMES.glob("*.yaml"))}


def create(manifest: dict, author, message: str = "first") -> RuntimePolicy:
    return policy_services.policy_create(manifest=manifest, author=author, message=message, source=RevisionSource.API)


# --------------------------------------------------------------------------------------------------- create


def test_it_creates_a_policy_with_revision_one(db, alice):
    policy = create(level1(), alice)

    assert (policy.name, policy.version, policy.framework) == ("torch-gang", 1, "torch")
    assert policy.scheduling_mode == "level1"
    assert "rack" in policy.scheduling_summary
    assert policy.created_by == alice and policy.updated_by == alice
    revision = policy.revisions.get()
    assert (revision.number, revision.message, revision.source, revision.author_name) == (1, "first", "api", "alice")
    assert revision.manifest == policy.manifest == level1()


def test_it_refuses_an_invalid_manifest_and_saves_nothing(db, alice):
    with pytest.raises(PolicyInvalid) as caught:
        create(broken(), alice)

    paths = [p["path"] for p in caught.value.errors]
    assert "spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]" in paths
    assert caught.value.report is not None and not caught.value.report.ok
    assert not RuntimePolicy.objects.exists()
    assert not PolicyRevision.objects.exists()


@pytest.mark.parametrize(
    ("manifest", "path", "code"),
    [
        (["not", "a", "mapping"], "", "type"),
        ({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime", "x": "a\x00b"}, "x", None),
        ({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime", "x": "\ud800"}, "x", None),
        (
            {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime", "x": float("nan")},
            "x",
            "not_finite",
        ),
    ],
    ids=["list", "nul", "surrogate", "nan"],
)
def test_it_refuses_manifests_the_database_cannot_store(db, alice, manifest, path, code):
    with pytest.raises(PolicyInvalid) as caught:
        create(manifest, alice)

    assert caught.value.errors[0]["path"] == path
    if code:
        assert caught.value.errors[0]["code"] == code


def test_it_refuses_manifests_nested_too_deeply(db, alice):
    manifest = runtime()
    deep: dict = {}
    manifest["spec"]["deep"] = deep
    for _ in range(200):
        deep["x"] = {}
        deep = deep["x"]

    with pytest.raises(PolicyInvalid) as caught:
        create(manifest, alice)

    assert caught.value.errors[0]["code"] == "too_deep"


def test_it_stores_warnings(db, alice):
    manifest = runtime()
    manifest["spec"]["scheduling"] = {
        "replicatedJobs": [{"targetReplicatedJobs": ["node"], "disruptionMode": "Pod"}]
    }
    report = policy_services.policy_validate(manifest=manifest)
    assert report.ok and report.warnings

    policy = create(manifest, alice)

    assert policy.warnings == [p.as_dict() for p in report.warnings]


def test_it_strips_server_fields(db, alice):
    manifest = runtime()
    manifest["metadata"].update(uid="1234", resourceVersion="99", generation=3)
    manifest["status"] = {"conditions": []}

    policy = create(manifest, alice)

    assert semantically_equal(policy.manifest, runtime())


def test_it_refuses_a_taken_name(db, alice):
    create(runtime(), alice)

    with pytest.raises(PolicyNameTaken):
        create(runtime(), alice)
    assert RuntimePolicy.objects.count() == 1


# --------------------------------------------------------------------------------------------------- update


def update(manifest: dict, version: int, author, name: str = "torch-gang") -> RuntimePolicy:
    return policy_services.policy_update(
        name=name, manifest=manifest, expected_version=version, author=author, message="edit", source="api"
    )


def test_it_updates_and_adds_a_revision(db, alice, bob):
    create(runtime(), bob)

    policy = update(level1(), 1, alice)

    assert policy.version == 2
    assert policy.manifest == level1()
    assert policy.scheduling_mode == "level1"
    assert policy.updated_by == alice and policy.created_by == bob
    assert list(policy.revisions.order_by("number").values_list("number", "message")) == [(1, "first"), (2, "edit")]


def test_it_makes_no_revision_for_a_semantically_equal_manifest(db, alice):
    policy = create(level1(), alice)
    reordered = dict(reversed(list(level1().items())))

    again = update(reordered, 1, alice)

    assert again.version == 1
    assert again.updated_at == policy.updated_at
    assert PolicyRevision.objects.count() == 1


def test_exactly_one_of_two_updates_from_the_same_version_wins(db, alice, bob):
    create(runtime(), alice)

    winner = update(runtime(num_nodes=2), 1, alice)
    with pytest.raises(StaleVersion) as caught:
        update(runtime(num_nodes=3), 1, alice)

    assert winner.version == 2
    stale = caught.value
    assert (stale.expected_version, stale.current_version) == (1, 2)
    assert [(c.path, c.op, c.old, c.new) for c in stale.changes] == [("spec.mlPolicy.numNodes", "changed", 1, 2)]
    assert RuntimePolicy.objects.get().manifest["spec"]["mlPolicy"]["numNodes"] == 2
    assert PolicyRevision.objects.count() == 2


def test_the_compare_and_set_guards_the_write_itself(db, alice, monkeypatch):
    """Even when the version check passes at read time, a concurrent save between read and write loses nothing."""
    create(runtime(), alice)
    real_get = policy_services._get_policy

    def get_then_race(name):
        policy = real_get(name)
        # Another request saves version 2 after we have read version 1.
        RuntimePolicy.objects.filter(pk=policy.pk).update(version=2)
        return policy

    monkeypatch.setattr(policy_services, "_get_policy", get_then_race)
    with pytest.raises(StaleVersion) as caught:
        update(runtime(num_nodes=5), 1, alice)

    assert caught.value.current_version == 2
    assert PolicyRevision.objects.count() == 1


def test_it_refuses_a_rename(db, alice):
    create(runtime(), alice)

    with pytest.raises(PolicyInvalid) as caught:
        update(runtime("other-name"), 1, alice)

    assert caught.value.errors[0]["path"] == "metadata.name"
    assert caught.value.errors[0]["code"] == "immutable"


def test_it_refuses_an_invalid_update(db, alice):
    create(runtime(), alice)

    with pytest.raises(PolicyInvalid):
        update(broken(), 1, alice)

    assert RuntimePolicy.objects.get().version == 1


def test_update_of_a_missing_policy_raises_not_found(db, alice):
    with pytest.raises(PolicyNotFound):
        update(runtime(), 1, alice)


def test_patch_merges_and_deletes_keys(db, alice):
    create(level1(), alice)

    policy = policy_services.policy_patch(
        name="torch-gang",
        patch={"spec": {"mlPolicy": {"numNodes": 4}, "scheduling": None}},
        expected_version=1,
        author=alice,
    )

    assert policy.version == 2
    assert policy.manifest["spec"]["mlPolicy"] == {"numNodes": 4, "torch": {}}
    assert "scheduling" not in policy.manifest["spec"]
    assert policy.scheduling_mode == "none"


def test_patch_checks_the_version_first(db, alice):
    create(runtime(), alice)
    update(runtime(num_nodes=2), 1, alice)

    with pytest.raises(StaleVersion):
        policy_services.policy_patch(name="torch-gang", patch={"spec": {}}, expected_version=1, author=alice)


# --------------------------------------------------------------------------------------------------- rollback


def test_rollback_makes_a_new_revision_with_the_old_manifest(db, alice):
    create(runtime(), alice)
    update(level1(), 1, alice)

    policy = policy_services.policy_rollback(name="torch-gang", to_revision=1, expected_version=2, author=alice)

    assert policy.version == 3
    assert policy.manifest == runtime()
    assert policy.scheduling_mode == "none"
    latest = policy.revisions.get(number=3)
    assert (latest.source, latest.message) == ("rollback", "Roll back to revision 1")


def test_rollback_to_a_missing_revision_raises(db, alice):
    create(runtime(), alice)

    with pytest.raises(RevisionNotFound):
        policy_services.policy_rollback(name="torch-gang", to_revision=9, expected_version=1, author=alice)


def test_rollback_from_a_stale_version_raises(db, alice):
    create(runtime(), alice)
    update(level1(), 1, alice)

    with pytest.raises(StaleVersion):
        policy_services.policy_rollback(name="torch-gang", to_revision=1, expected_version=1, author=alice)


# --------------------------------------------------------------------------------------------------- delete


def test_delete_removes_the_policy_and_its_history(db, alice):
    create(runtime(), alice)

    policy_services.policy_delete(name="torch-gang", expected_version=1, actor=alice)

    assert not RuntimePolicy.objects.exists()
    assert not PolicyRevision.objects.exists()


def test_delete_with_a_stale_version_keeps_the_policy(db, alice):
    create(runtime(), alice)
    update(level1(), 1, alice)

    with pytest.raises(StaleVersion):
        policy_services.policy_delete(name="torch-gang", expected_version=1, actor=alice)
    assert RuntimePolicy.objects.exists()


def test_delete_of_a_missing_policy_raises(db, alice):
    with pytest.raises(PolicyNotFound):
        policy_services.policy_delete(name="nope", actor=alice)


# --------------------------------------------------------------------------------------------------- import


def test_it_imports_the_reference_runtimes_and_they_round_trip(db, alice):
    texts = reference_texts()
    assert len(texts) == 9  # the ClusterTrainingRuntimes upstream ships

    result = policy_services.policies_import(text="---\n".join(texts.values()), author=alice, message="seed")

    assert sorted(result.created) == [
        "deepspeed-distributed", "jax-distributed", "mlx-distributed", "torch-distributed",
        "torch-distributed-with-cache", "torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b",
        "xgboost-distributed"]
    assert result.updated == result.unchanged == []
    from runtimes.domain.manifest import load_runtime

    for text in texts.values():
        original = load_runtime(text)
        stored = RuntimePolicy.objects.get(name=original["metadata"]["name"])
        assert semantically_equal(original, stored.manifest)
        assert load_runtime(dump_yaml(stored.manifest)) == stored.manifest
        assert stored.revisions.get().source == "import"


def test_import_is_all_or_nothing(db, alice):
    text = dump_many([runtime("good-one"), broken("bad-one"), runtime("good-two")])

    with pytest.raises(ImportInvalid) as caught:
        policy_services.policies_import(text=text, author=alice)

    assert [d["document"] for d in caught.value.documents] == [1]
    bad = caught.value.documents[0]
    assert bad["name"] == "bad-one"
    assert bad["line"] == text.splitlines().index("---") + 2
    assert bad["problems"][0]["path"] == "spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]"
    assert not RuntimePolicy.objects.exists()


def test_import_reports_the_line_where_each_document_starts(db, alice):
    text = "# header comment\n" + dump_yaml(runtime("good-one")) + "---\n" + dump_yaml(broken("bad-one"))
    second_start = text.splitlines().index("---") + 2

    with pytest.raises(ImportInvalid) as caught:
        policy_services.policies_import(text=text, author=alice)

    assert caught.value.documents[0]["line"] == second_start
    assert caught.value.problems[0]["document"] == 1


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "kind"),
        ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n  name: [\n", "line"),
        ("a: &x [1]\nb: *x\n", "alias"),
        ("", "empty"),
    ],
    ids=["wrong-kind", "bad-yaml", "alias", "empty"],
)
def test_import_reports_parse_errors(db, alice, text, needle):
    with pytest.raises(ImportInvalid) as caught:
        policy_services.policies_import(text=text, author=alice)

    assert needle in str(caught.value).lower() or needle in str(caught.value.problems).lower()
    assert not RuntimePolicy.objects.exists()


def test_import_reports_yaml_errors_with_line_and_column(db, alice):
    text = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n  name: [\n"

    with pytest.raises(ImportInvalid) as caught:
        policy_services.policies_import(text=text, author=alice)

    problem = caught.value.problems[0]
    assert problem["line"] is not None and problem["column"] is not None


def test_import_refuses_duplicate_names_in_one_input(db, alice):
    with pytest.raises(ImportInvalid) as caught:
        policy_services.policies_import(text=dump_many([runtime("same"), runtime("same")]), author=alice)

    assert caught.value.documents[0]["document"] == 1
    assert caught.value.documents[0]["problems"][0]["code"] == "duplicate"


def test_create_only_import_refuses_existing_names(db, alice):
    create(runtime("existing"), alice)

    with pytest.raises(ImportInvalid) as caught:
        policy_services.policies_import(text=dump_many([runtime("new-one"), runtime("existing")]), author=alice)

    assert caught.value.documents[0]["problems"][0]["code"] == "exists"
    assert RuntimePolicy.objects.count() == 1


def test_upsert_import_creates_updates_and_skips_unchanged(db, alice):
    create(runtime("same"), alice)
    create(runtime("changed"), alice)
    text = dump_many([runtime("same"), runtime("changed", num_nodes=3), runtime("brand-new")])

    result = policy_services.policies_import(text=text, author=alice, mode=ImportMode.UPSERT, message="sync")

    assert (result.created, result.updated, result.unchanged) == (["brand-new"], ["changed"], ["same"])
    assert [d.action for d in result.documents] == ["unchanged", "updated", "created"]
    changed = RuntimePolicy.objects.get(name="changed")
    assert changed.version == 2
    assert changed.revisions.get(number=2).message == "sync"
    assert RuntimePolicy.objects.get(name="same").version == 1


def test_import_accepts_json(db, alice):
    import json

    result = policy_services.policies_import(text=json.dumps(runtime("from-json")), author=alice)

    assert result.created == ["from-json"]


def test_import_rejects_an_unknown_mode(db, alice):
    with pytest.raises(ValueError):
        policy_services.policies_import(text=dump_yaml(runtime()), author=alice, mode="merge")


# --------------------------------------------------------------------------------------------------- validate


def test_validate_saves_nothing_and_reports_errors(db):
    report = policy_services.policy_validate(manifest=broken())

    assert not report.ok
    assert not RuntimePolicy.objects.exists()


# --------------------------------------------------------------------------------------------------- real race


# Not serialized_rollback: restoring the serialized DB clashes with content types re-created by the flush; the
# persona fixtures re-create the role groups a flush removes.
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_updates_from_one_version_on_postgresql(alice):
    """Two transactions really in flight at once: the database's row lock makes exactly one compare-and-set win."""
    import threading

    from django.db import connection, connections

    if connection.vendor != "postgresql":
        pytest.skip("SQLite serialises writers with a database lock; the row-level race needs PostgreSQL")
    create(runtime(), alice)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def save(num_nodes: int) -> None:
        try:
            barrier.wait(timeout=10)
            update(runtime(num_nodes=num_nodes), 1, alice)
            outcomes.append("saved")
        except StaleVersion as stale:
            outcomes.append(f"stale:{stale.current_version}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=save, args=(n,)) for n in (2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes) == ["saved", "stale:2"]
    policy = RuntimePolicy.objects.get()
    assert policy.version == 2
    assert list(policy.revisions.values_list("number", flat=True).order_by("number")) == [1, 2]


def test_validation_follows_the_composite_setting(db, alice, settings):
    manifest = level1()
    manifest["spec"]["scheduling"]["replicatedJobs"] = [{"targetReplicatedJobs": ["node"]}]
    settings.SCHEDULING_COMPOSITE_ENABLED = False
    assert not policy_services.policy_validate(manifest=manifest).ok

    settings.SCHEDULING_COMPOSITE_ENABLED = True

    assert policy_services.policy_validate(manifest=manifest).ok
    assert create(manifest, alice).scheduling_mode == "composite"


def test_an_update_without_a_name_says_which_name_to_keep(db, alice):
    create(runtime(), alice)
    manifest = runtime()
    del manifest["metadata"]["name"]

    with pytest.raises(PolicyInvalid) as caught:
        update(manifest, 1, alice)

    assert caught.value.errors[0]["code"] == "required"
    assert "torch-gang" in caught.value.errors[0]["message"]


@pytest.mark.parametrize("reserved", ["new", "import", "export", "validate", "sync"])
def test_it_refuses_names_that_collide_with_fixed_urls(db, alice, reserved):
    from runtimes.domain.manifest import new_runtime
    from runtimes.errors import PolicyInvalid
    from runtimes.services.policies import policy_create

    with pytest.raises(PolicyInvalid) as excinfo:
        policy_create(manifest=new_runtime(reserved), author=alice, source="api")
    assert excinfo.value.errors[0]["code"] == "reserved"
    assert excinfo.value.errors[0]["path"] == "metadata.name"
