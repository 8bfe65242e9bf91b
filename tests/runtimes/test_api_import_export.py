"""REST API: import (YAML/JSON, all or nothing), export (kubectl-ready YAML) and validate (nothing saved).

The golden test imports the upstream example runtimes and checks that export gives them back semantically
identical: no field added, dropped or changed.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from runtimes.domain.diff import semantically_equal
from runtimes.domain.manifest import MAX_MANIFEST_BYTES, dump_many, dump_yaml, load_documents, load_runtimes
from runtimes.models import RuntimePolicy
from runtimes.services import policies as policy_services
from tests.runtimes.test_services import broken, fast_password_hashing, level1, reference_texts, runtime  # noqa: F401 (autouse fixture)

IMPORT = "/api/v1/runtimes/import/"
VALIDATE = "/api/v1/runtimes/validate/"


def export(name: str) -> str:
    return f"/api/v1/runtimes/{name}/export/"


@pytest.fixture
def api(alice) -> APIClient:
    client = APIClient()
    client.force_login(alice)
    return client


# --------------------------------------------------------------------------------------------------- golden


@pytest.mark.parametrize("content_type", ["application/yaml", "text/yaml"])
def test_reference_runtimes_import_and_export_semantically_identical(db, api, content_type):
    texts = reference_texts()

    response = api.post(IMPORT + "?message=seed", data="---\n".join(texts.values()), content_type=content_type)

    assert response.status_code == 201, response.content
    assert sorted(response.json()["created"]) == sorted(RuntimePolicy.objects.values_list("name", flat=True))
    for file_name, text in texts.items():
        (original,) = load_runtimes(text)
        exported = api.get(export(original["metadata"]["name"]))
        assert exported.status_code == 200
        (round_tripped,) = load_documents(exported.content)
        assert semantically_equal(original, round_tripped), file_name
        assert round_tripped == original, file_name  # key order kept too


def test_each_reference_runtime_imports_alone_and_then_is_unchanged_on_upsert(db, api):
    for text in reference_texts().values():
        created = api.post(IMPORT, data=text, content_type="application/yaml")
        again = api.post(IMPORT + "?mode=upsert", data=text, content_type="application/yaml")

        assert created.status_code == 201
        assert again.status_code == 200
        assert again.json()["unchanged"] == created.json()["created"]
    assert set(RuntimePolicy.objects.values_list("version", flat=True)) == {1}


def test_export_is_a_kubectl_ready_attachment(db, api, alice):
    manifest = level1()
    manifest["metadata"].update(uid="abc", resourceVersion="42", managedFields=[{"manager": "kubectl"}])
    manifest["status"] = {"conditions": []}
    policy_services.policy_create(manifest=manifest, author=alice, source="api")

    response = api.get(export("torch-gang"))

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    assert response["Content-Disposition"] == 'attachment; filename="torch-gang.yaml"'
    (document,) = load_documents(response.content)
    assert document == level1()  # server-populated fields are gone: `kubectl apply --server-side` accepts it
    assert response.content.decode() == dump_yaml(level1())


def test_export_of_an_old_revision(db, api, alice):
    policy_services.policy_create(manifest=runtime(), author=alice, source="api")
    policy_services.policy_update(name="torch-gang", manifest=level1(), expected_version=1, author=alice, source="api")

    response = api.get(export("torch-gang") + "?revision=1")

    assert load_documents(response.content) == [runtime()]
    assert api.get(export("torch-gang") + "?revision=7").status_code == 404
    assert api.get(export("torch-gang") + "?revision=x").status_code == 400


def test_export_of_a_missing_policy_is_404(db, api):
    assert api.get(export("nope")).status_code == 404


# --------------------------------------------------------------------------------------------------- import


def test_import_accepts_json_with_text_and_mode(db, api, alice):
    policy_services.policy_create(manifest=runtime("one"), author=alice, source="api")
    text = dump_many([runtime("one", num_nodes=2), runtime("two")])

    response = api.post(IMPORT, {"text": text, "mode": "upsert", "message": "bulk"}, format="json")

    assert response.status_code == 201
    body = response.json()
    assert (body["created"], body["updated"], body["unchanged"]) == (["two"], ["one"], [])
    assert [d["action"] for d in body["documents"]] == ["updated", "created"]
    assert [d["line"] for d in body["documents"]] == [1, dump_yaml(runtime("one")).count("\n") + 2]
    assert RuntimePolicy.objects.get(name="one").revisions.get(number=2).message == "bulk"


def test_import_accepts_a_json_manifest_body(db, api):
    response = api.post(IMPORT, runtime("from-json"), format="json")

    assert response.status_code == 201
    assert response.json()["created"] == ["from-json"]


def test_import_reports_warnings_per_document(db, api):
    manifest = runtime("warned")
    manifest["spec"]["scheduling"] = {
        "replicatedJobs": [{"targetReplicatedJobs": ["node"], "disruptionMode": "Pod"}]
    }

    response = api.post(IMPORT, data=dump_yaml(manifest), content_type="application/yaml")

    assert response.status_code == 201
    warnings = response.json()["documents"][0]["warnings"]
    assert warnings and {w["severity"] for w in warnings} == {"warning"}


def test_import_is_all_or_nothing_with_document_and_line(db, api):
    text = dump_many([runtime("good-one"), broken("bad-one")])

    response = api.post(IMPORT, data=text, content_type="application/yaml")

    assert response.status_code == 400
    error = response.json()["error"]
    field = error["fields"][0]
    assert field["document"] == 1
    assert field["line"] == text.splitlines().index("---") + 2
    assert field["path"] == "spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]"
    assert "Nothing was imported" in error["message"]
    assert not RuntimePolicy.objects.exists()


def test_create_only_import_of_an_existing_name_is_400(db, api, alice):
    policy_services.policy_create(manifest=runtime(), author=alice, source="api")

    response = api.post(IMPORT, data=dump_yaml(runtime()), content_type="application/yaml")

    assert response.status_code == 400
    assert response.json()["error"]["fields"][0]["code"] == "exists"


@pytest.mark.parametrize(
    ("text", "message_part"),
    [
        ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n  name: [\n", "line"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "ClusterTrainingRuntime"),
        ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n", "namespaced"),
        ("a: &anchor [1, 2]\nb: *anchor\n", "anchor"),
        ("a: !!python/object:os.system echo\n", "tag"),
        ("", "empty"),
        ("# only a comment\n", "empty"),
    ],
    ids=["yaml-syntax", "wrong-kind", "namespaced-kind", "alias", "python-tag", "empty", "comment-only"],
)
def test_import_bad_input_is_a_clear_400(db, api, text, message_part):
    response = api.post(IMPORT, data=text, content_type="application/yaml")

    assert response.status_code == 400
    assert message_part.lower() in response.json()["error"]["message"].lower()


def test_import_reports_yaml_line_and_column(db, api):
    text = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n  name: [\n"

    response = api.post(IMPORT, data=text, content_type="application/yaml")

    field = response.json()["error"]["fields"][0]
    assert field["line"] == 5 and field["column"] == 1
    assert field["document"] == 0


def test_import_refuses_an_alias_bomb(db, api):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )

    response = api.post(IMPORT, data=bomb, content_type="application/yaml")

    assert response.status_code == 400
    assert "anchor" in response.json()["error"]["message"]


def test_import_over_one_mebibyte_is_refused(db, api):
    text = dump_yaml(runtime()) + "#" + "x" * MAX_MANIFEST_BYTES

    response = api.post(IMPORT, data=text, content_type="application/yaml")

    assert response.status_code == 413
    assert not RuntimePolicy.objects.exists()


def test_import_text_over_one_mebibyte_in_json_is_refused(db, api):
    response = api.post(IMPORT, {"text": "#" + "x" * MAX_MANIFEST_BYTES}, format="json")

    assert response.status_code in (400, 413)
    assert response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("query", "body", "path"),
    [
        ("?mode=merge", None, "mode"),
        ("", {"text": "x", "mode": "merge"}, "mode"),
        ("", {"nothing": 1}, "text"),
        ("", {"text": 5}, "text"),
    ],
)
def test_import_rejects_bad_parameters(db, api, query, body, path):
    if body is None:
        response = api.post(IMPORT + query, data=dump_yaml(runtime()), content_type="application/yaml")
    else:
        response = api.post(IMPORT + query, body, format="json")

    assert response.status_code == 400
    assert path in {f["path"] for f in response.json()["error"]["fields"]}


# --------------------------------------------------------------------------------------------------- validate


def test_validate_reports_errors_and_warnings_and_saves_nothing(db, api):
    response = api.post(VALIDATE, {"manifest": broken()}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is False
    # The same convention as create: `path` in the request body, `manifestPath` inside the manifest.
    assert body["errors"][0]["path"] == "manifest.spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]"
    assert body["errors"][0]["manifestPath"] == "spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]"
    assert body["warnings"][0]["severity"] == "warning"
    assert body["scheduling"]["mode"] == "level2"
    assert not RuntimePolicy.objects.exists()


def test_validate_accepts_a_valid_manifest(db, api):
    response = api.post(VALIDATE, {"manifest": level1()}, format="json")

    assert response.json() == {
        "ok": True,
        "errors": [],
        "warnings": [],
        "scheduling": {"mode": "level1", "summary": "L1 · gang · rack", "levels": [1]},
    }


@pytest.mark.parametrize("how", ["yaml-body", "json-text", "bare-json-manifest"])
def test_validate_accepts_text_and_bare_manifests(db, api, how):
    if how == "yaml-body":
        response = api.post(VALIDATE, data=dump_yaml(level1()), content_type="application/yaml")
    elif how == "json-text":
        response = api.post(VALIDATE, {"text": json.dumps(level1())}, format="json")
    else:
        response = api.post(VALIDATE, level1(), format="json")

    assert response.status_code == 200
    assert response.json()["ok"] is True


def test_validate_reports_yaml_errors_with_line_and_column(db, api):
    response = api.post(VALIDATE, data="kind: ClusterTrainingRuntime\nmetadata:\n\tname: x\n", content_type="text/yaml")

    assert response.status_code == 200
    error = response.json()["errors"][0]
    assert (error["code"], error["line"], error["column"]) == ("parse", 3, 1)


@pytest.mark.parametrize("body", [{}, {"manifest": level1(), "text": "x"}, {"manifest": [1]}, {"text": 3}])
def test_validate_rejects_a_malformed_request(db, api, body):
    response = api.post(VALIDATE, body, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["fields"]


# --------------------------------------------------------------------------------------------------- any runtime

# PostgreSQL cannot store NUL in text, so the portal refuses it (tested in test_api_policies); any other character.
TEXT = st.characters(codec="utf-8", exclude_characters="\x00")
EXTRA_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(TEXT, max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(TEXT, min_size=1, max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    file_name=st.sampled_from(sorted(reference_texts())),
    pod_extra=st.dictionaries(st.sampled_from(["x-extra", "zz", "aa", "Ünïcode"]), EXTRA_VALUES, max_size=3),
    annotation=st.text(TEXT, max_size=40),
)
def test_fields_the_portal_does_not_model_round_trip_untouched(db, api, file_name, pod_extra, annotation):
    (manifest,) = load_runtimes(reference_texts()[file_name])
    pod_spec = manifest["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod_spec.update(pod_extra)
    manifest["metadata"].setdefault("annotations", {})["example.com/note"] = annotation
    name = manifest["metadata"]["name"]
    RuntimePolicy.objects.filter(name=name).delete()  # the database is shared by all examples of one test

    created = api.post(IMPORT, data=json.dumps(manifest), content_type="application/json")

    assert created.status_code == 201, created.content
    (exported,) = load_documents(api.get(export(name)).content)
    assert semantically_equal(exported, manifest)
    # Key order survives storage too (PostgreSQL jsonb would sort it).
    assert json.dumps(exported) == json.dumps(manifest)


def test_json_escaped_emoji_import_as_the_emoji(db, api):
    manifest = runtime("emoji")
    manifest["metadata"]["annotations"] = {"note": "ship it 😀"}
    text = json.dumps(manifest)  # ASCII-only: the emoji becomes the surrogate pair \ud83d\ude00
    assert "\\ud83d\\ude00" in text

    response = api.post(IMPORT, data=text, content_type="application/yaml")

    assert response.status_code == 201, response.content
    assert RuntimePolicy.objects.get().manifest["metadata"]["annotations"]["note"] == "ship it 😀"


@pytest.mark.parametrize(
    ("url", "body"),
    [
        (VALIDATE, {"manifest": {"metadata": {"labels": {"\ud800": "x"}}}}),
        (VALIDATE, {"text": json.dumps(runtime() | {"metadata": {"name": "x", "labels": {"\ud800": "x"}}})}),
        (IMPORT, {"text": json.dumps(runtime() | {"spec": {"\ud800x": 1}})}),
        ("/api/v1/runtimes/", {"manifest": runtime() | {"spec": {"\ud800x": 1}}}),
    ],
)
def test_lone_surrogates_echoed_in_errors_do_not_break_the_response(db, api, url, body):
    response = api.post(url, data=json.dumps(body), content_type="application/json")

    assert response.status_code in (200, 400)
    assert "\\ud800" in response.content.decode("ascii")
