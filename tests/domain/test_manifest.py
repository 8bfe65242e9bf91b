"""Safe YAML/JSON loading, runtime kind checks, dumping and server-field stripping."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtimes.domain.manifest import (
    API_VERSION,
    KIND,
    MAX_MANIFEST_BYTES,
    MAX_NODES,
    ManifestError,
    dump_many,
    dump_yaml,
    load_documents,
    load_runtime,
    load_runtimes,
    new_runtime,
    strip_server_fields,
)
from runtimes.domain.policy import validate_runtime
from tests.fixture_paths import REFERENCE_RUNTIMES

RUNTIMES = sorted(REFERENCE_RUNTIMES.glob("*.yaml"))

ALIAS_BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
"""


def runtime_yaml(name: str = "demo") -> str:
    return dump_yaml(new_runtime(name))


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        (ALIAS_BOMB, 1, 4, "anchor"),
        ("a: 1\nb: *x\n", 2, 4, "alias"),
        ("a: !!python/object:os.system echo\n", 1, 4, "tag"),
        ("a: !!binary aGVsbG8=\n", 1, 4, "tag"),
        ("a: !custom x\n", 1, 4, "tag"),
        ("metadata:\n  name: a\n  name: b\n", 3, 3, "duplicate key 'name'"),
        ("spec:\n\tmlPolicy: {}\n", 2, 1, "tabs"),
        ("1: one\n", 1, 1, "not a string"),
        ("? [a, b]\n: c\n", 1, 3, "not a string"),
        ("- a\n- b\n", 1, 1, "not a mapping"),
        ("just a string\n", 1, 1, "not a mapping"),
        ("a: [1, 2\n", 2, 1, "invalid YAML"),
        ("a: b: c\n", 1, 5, "invalid YAML"),
        ('{"a": 1, "a": 2}', 1, 10, "duplicate key 'a'"),
        ("b: 1\na: \x07\n", 2, 4, "control character #x0007"),
        ("a: \ud800\n", 1, 4, "#xd800"),
        ('{\n\t"a": 1,\n\t"b": [\n}', 4, 1, "invalid JSON"),
    ],
)
def test_it_rejects_hostile_or_malformed_input_with_a_position(text, line, column, fragment):
    with pytest.raises(ManifestError) as caught:
        load_documents(text)
    error = caught.value
    assert fragment in error.message
    assert (error.line, error.column) == (line, column)
    assert str(error).startswith(f"line {line}, column {column}: ")


def test_it_rejects_input_over_one_mebibyte_before_parsing():
    text = "a: " + "x" * (2 * MAX_MANIFEST_BYTES) + "\n"
    for payload in (text, text.encode()):
        with pytest.raises(ManifestError, match="limit is 1048576 bytes"):
            load_documents(payload)


def test_it_accepts_input_of_exactly_the_limit():
    filler = "#" * (MAX_MANIFEST_BYTES - len("a: 1\n") - 1)
    text = "a: 1\n" + filler + "\n"
    assert len(text.encode()) == MAX_MANIFEST_BYTES
    assert load_documents(text) == [{"a": 1}]


def test_it_rejects_invalid_utf8():
    with pytest.raises(ManifestError, match="UTF-8"):
        load_documents(b"a: \xff\xfe\n")


def test_it_rejects_inputs_with_too_many_values_early():
    with pytest.raises(ManifestError, match="more than 100000 values") as caught:
        load_documents("a:\n" + "- 1\n" * (MAX_NODES + 10))
    assert caught.value.line == MAX_NODES - 1  # root, key "a" and the list itself count too


def test_it_rejects_deep_nesting():
    with pytest.raises(ManifestError, match="nested"):
        load_documents("a: " + "[" * 500 + "]" * 500)
    with pytest.raises(ManifestError, match="nested"):
        load_documents('{"a": ' + "[" * 5000 + "]" * 5000 + "}")


def test_it_keeps_scalars_that_look_like_timestamps_or_sexagesimals_as_strings():
    docs = load_documents("a: 2026-01-01\nb: 8080:80\nc: 1:20\nd: '<<'\ne: 010\nf: 1.5\ng: ~\nh: yes\n")
    assert docs == [{"a": "2026-01-01", "b": "8080:80", "c": "1:20", "d": "<<", "e": 8, "f": 1.5, "g": None, "h": True}]


def test_it_treats_merge_keys_as_plain_strings():
    assert load_documents("<<: {a: 1}\n") == [{"<<": {"a": 1}}]


def test_it_reads_multi_document_yaml_and_skips_empty_documents():
    text = "---\n---\na: 1\n---\n# just a comment\n---\nb: 2\n...\n"
    assert load_documents(text) == [{"a": 1}, {"b": 2}]


def test_it_names_the_document_and_line_of_a_bad_second_document():
    text = "a: 1\n---\nb: [\n"
    with pytest.raises(ManifestError) as caught:
        load_documents(text)
    assert caught.value.document == 1
    assert caught.value.line == 4


def test_it_reads_json_including_tab_indented_json():
    manifest = new_runtime("from-json")
    assert load_documents(json.dumps(manifest)) == [manifest]
    assert load_documents(json.dumps(manifest, indent="\t")) == [manifest]
    assert load_runtime(json.dumps(manifest, indent="\t").encode()) == manifest


def test_it_rejects_top_level_json_arrays():
    with pytest.raises(ManifestError, match="List"):
        load_documents('[\n\t{"a": 1}\n]')


def test_it_strips_a_byte_order_mark():
    assert load_documents("\ufeffa: 1\n".encode()) == [{"a": 1}]
    assert load_documents("\ufeffa: 1\n") == [{"a": 1}]


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, "'ConfigMap'"),
        ({"apiVersion": "trainer.kubeflow.org/v1beta1", "kind": KIND}, "set apiVersion"),
        ({"apiVersion": API_VERSION, "kind": "TrainingRuntime"}, "namespaced TrainingRuntime"),
        ({"apiVersion": API_VERSION, "kind": "TrainJob", "metadata": {"name": "job"}}, "(job)"),
        ({"metadata": {"name": "x"}}, "apiVersion None"),
    ],
)
def test_it_rejects_the_wrong_kind_and_names_what_it_found(document, fragment):
    first = runtime_yaml("ok")
    text = first + "---\n" + dump_yaml(document)
    with pytest.raises(ManifestError) as caught:
        load_runtimes(text)
    error = caught.value
    assert error.document == 1
    assert "document 2" in error.message
    assert fragment in error.message
    # the position points into the second document, at the offending field (or the document start)
    assert error.line is not None and error.line > first.count("\n") + 1
    key_line = text.splitlines()[error.line - 1]
    assert key_line.startswith((f"{error.path}:", "metadata:"))


def test_wrong_kind_position_points_at_the_kind_value():
    text = "# comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
    with pytest.raises(ManifestError) as caught:
        load_runtime(text)
    assert (caught.value.line, caught.value.column, caught.value.path) == (3, 7, "kind")


def test_wrong_kind_inside_a_list_names_the_item():
    text = dump_yaml(
        {"apiVersion": "v1", "kind": "List", "items": [new_runtime("a"), {"apiVersion": "v1", "kind": "Pod"}]}
    )
    with pytest.raises(ManifestError) as caught:
        load_runtimes(text)
    assert "List item 2" in caught.value.message
    assert text.splitlines()[caught.value.line - 1].strip() == "kind: Pod"


def test_it_unpacks_a_list_kind():
    items = [new_runtime("a"), new_runtime("b")]
    text = dump_yaml({"apiVersion": "v1", "kind": "List", "items": items})
    assert load_runtimes(text) == items


def test_load_runtime_wants_exactly_one():
    with pytest.raises(ManifestError, match="exactly one"):
        load_runtime(dump_many([new_runtime("a"), new_runtime("b")]))
    with pytest.raises(ManifestError, match="empty"):
        load_runtime("---\n")
    assert load_runtime(runtime_yaml("solo"))["metadata"]["name"] == "solo"


@pytest.mark.parametrize("path", RUNTIMES, ids=lambda p: p.name)
def test_upstream_runtimes_dump_and_load_back_identically(path):
    manifest = load_runtime(path.read_text())
    text = dump_yaml(manifest)
    assert load_runtime(text) == manifest
    assert list(load_runtime(text)) == list(manifest)  # key order kept
    assert "&" not in text and "*" not in text.replace("'*'", "")


def test_dump_yaml_is_block_style_with_literal_multiline_strings_and_no_anchors():
    shared = {"x": 1}
    manifest = {"a": shared, "b": shared, "script": "set -e\necho hi\n", "empty": {}, "on": "yes", "n": "010"}
    text = dump_yaml(manifest)
    assert "&id" not in text and "*id" not in text
    assert "script: |" in text
    assert "'on': 'yes'" in text  # strings YAML 1.1 would read as booleans are quoted
    assert "'n': '010'" in text  # even the key: go-yaml reads a plain n as false
    assert load_documents(text) == [manifest]


def test_dump_many_separates_documents():
    text = dump_many([{"a": 1}, {"b": 2}])
    assert text == "a: 1\n---\nb: 2\n"
    assert load_documents(text) == [{"a": 1}, {"b": 2}]


def test_strip_server_fields_removes_only_server_owned_fields():
    manifest = new_runtime("x")
    manifest["status"] = {"anything": True}
    manifest["metadata"].update(
        uid="u",
        resourceVersion="1",
        generation=3,
        creationTimestamp="2026-01-01T00:00:00Z",
        managedFields=[{"manager": "kubectl"}],
        selfLink="/apis/x",
        deletionTimestamp="2026-01-02T00:00:00Z",
        deletionGracePeriodSeconds=0,
        annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"},
    )
    stripped = strip_server_fields(manifest)
    expected = new_runtime("x")
    expected["metadata"]["annotations"] = {"keep": "me"}
    assert stripped == expected
    assert manifest["status"] == {"anything": True}  # the input is not modified


def test_strip_server_fields_drops_annotations_left_empty():
    manifest = new_runtime("x")
    manifest["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    assert "annotations" not in strip_server_fields(manifest)["metadata"]


def test_new_runtime_is_valid_without_warnings():
    report = validate_runtime(new_runtime("fresh"))
    assert report.problems == ()


def test_manifest_error_as_dict_and_str_without_position():
    error = ManifestError("boom", document=2, path="kind")
    assert str(error) == "document 3: boom"
    assert error.as_dict() == {"message": "boom", "line": None, "column": None, "document": 2, "path": "kind"}


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab:-[]{},\"'&*!#|>?\t\n \x00\x85")), max_size=60))
def test_it_raises_only_manifest_errors_on_arbitrary_text(text):
    try:
        documents = load_documents(text)
    except ManifestError as error:
        assert error.message
    else:
        assert all(isinstance(d, dict) for d in documents)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=80))
def test_it_raises_only_manifest_errors_on_arbitrary_bytes(data):
    with contextlib.suppress(ManifestError):
        assert all(isinstance(d, dict) for d in load_documents(data))


def test_json_surrogate_pair_escapes_become_one_character():
    manifest = new_runtime("emoji")
    manifest["metadata"]["annotations"] = {"note": "ship it 🚀"}
    text = json.dumps(manifest)  # ensure_ascii: "\ud83d\ude80"
    assert "\\ud83d\\ude80" in text
    assert load_runtime(text)["metadata"]["annotations"]["note"] == "ship it 🚀"
    manifest["metadata"]["annotations"]["big"] = "🚀" * 20_000  # beyond the size up to which YAML errors re-parse
    assert load_runtime(json.dumps(manifest)) == manifest


def test_json_wrong_kind_is_located():
    text = '{\n  "apiVersion": "v1",\n  "kind": "Secret"\n}'
    with pytest.raises(ManifestError) as caught:
        load_runtime(text)
    assert (caught.value.line, caught.value.column) == (3, 11)


def test_yaml_flow_style_that_is_not_json_still_loads():
    assert load_documents("{apiVersion: v1, kind: List, items: []}") == [
        {"apiVersion": "v1", "kind": "List", "items": []}
    ]


@pytest.mark.parametrize(
    "value", ["y", "n", "Y", "N", "yes", "off", "1e3", "1.5e3", "0o17", "08", "1_000", ".inf", "NaN"]
)
def test_strings_kubectl_would_read_as_numbers_or_booleans_are_quoted(value):
    text = dump_yaml({"v": value})
    assert text in (f"v: '{value}'\n", f'v: "{value}"\n')
    assert load_documents(text) == [{"v": value}]


@pytest.mark.parametrize(
    ("plain", "expected"),
    [("y", True), ("N", False), ("1e3", 1000.0), ("1.5E+3", 1500.0), ("0o17", 15), ("010", 8), ("1_000", 1000)],
)
def test_plain_scalars_resolve_like_kubectl(plain, expected):
    (document,) = load_documents(f"v: {plain}\n")
    assert document["v"] == expected
    assert type(document["v"]) is type(expected)
