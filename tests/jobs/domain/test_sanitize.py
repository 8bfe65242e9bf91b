"""The sanitiser alone (no database): what PostgreSQL would refuse never reaches it, and a clean record is untouched."""

from __future__ import annotations

import datetime as dt
import json

from jobs.domain import sanitize
from jobs.domain.records import JobRecord


def record(**overrides) -> JobRecord:
    values = {"uid": "u1", "namespace": "team-a", "name": "llm", "runtime_kind": "ClusterTrainingRuntime",
              "runtime_name": "torch", "num_nodes": 2, "gpus_per_node": 8,
              "resources_per_node": {"nvidia.com/gpu": "8"},
              "level": "zone", "queue_name": "", "creator": "ann", "priority_class": "", "state": "running",
              "reason": "Running", "message": "all pods running", "since": dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
              "submitted_at": dt.datetime(2026, 12, 1, tzinfo=dt.UTC)}
    values.update(overrides)
    return JobRecord(**values)


LIMITS = {"namespace": 63, "name": 253, "reason": 64, "creator": 253}


def storable(value) -> bool:
    """What PostgreSQL accepts in text and jsonb: no NUL, valid UTF-8, finite numbers."""
    text = json.dumps(value, default=str, allow_nan=False) if not isinstance(value, str) else value
    text.encode("utf-8")
    return "\x00" not in text and "\\u0000" not in text


def test_a_clean_record_is_left_alone():
    clean = record()
    before = clean.comparable()
    assert sanitize.sanitize_record(clean, LIMITS) == 0
    assert clean.comparable() == before


def test_nul_bytes_are_stripped_everywhere():
    dirty = record(creator="an\x00n", message="bad\x00 annotation",
                   pods=[{"name": "p\x00", "labels": {"k\x00": "v\x00"}}], events=[{"message": "\x00" * 3}])
    assert sanitize.sanitize_record(dirty, LIMITS) == 6
    assert dirty.creator == "ann" and dirty.message == "bad annotation"
    assert dirty.pods == [{"name": "p", "labels": {"k": "v"}}] and dirty.events == [{"message": ""}]
    assert all(storable(getattr(dirty, name)) for name in ("creator", "message", "pods", "events"))


def test_lone_surrogates_become_replacement_characters_and_valid_unicode_stays():
    dirty = record(message="half \ud800 pair", name="ok-é-\U0001f600", workload={"name": "\udfff"})
    sanitize.sanitize_record(dirty, LIMITS)
    assert dirty.message == "half \ufffd pair"
    assert dirty.name == "ok-é-\U0001f600"  # a real astral character is valid: untouched
    assert dirty.workload == {"name": "\ufffd"}
    assert storable(dirty.message) and storable(dirty.workload)


def test_oversized_values_are_cut_to_their_columns():
    dirty = record(reason="R" * 500, message="m" * 1_000_000, pods=[{"name": "x" * 100_000}])
    sanitize.sanitize_record(dirty, LIMITS)
    assert len(dirty.reason) == 64
    assert len(dirty.message) == sanitize.MAX_TEXT
    assert len(dirty.pods[0]["name"]) == sanitize.MAX_JSON_STRING


def test_wrong_types_become_the_column_type():
    dirty = record(num_nodes="four", gpus_per_node=-3, creator=["a", "b"], since="yesterday",
                   resources_per_node=["not", "a", "dict"], pods={"not": "a list"}, kueue=None,
                   events=[{"count": float("nan"), "when": dt.date(2026, 1, 1), "deep": {"a": {"b": {"c": 1}}}}])
    changes = sanitize.sanitize_record(dirty, LIMITS)
    assert changes >= 7
    assert (dirty.num_nodes, dirty.gpus_per_node) == (0, 0)
    assert dirty.creator == "['a', 'b']" and dirty.since is None
    assert dirty.resources_per_node == {} and dirty.pods == [] and dirty.kueue == {}
    assert dirty.events[0]["count"] is None and dirty.events[0]["when"] == "2026-01-01"
    assert dirty.events[0]["deep"] == {"a": {"b": {"c": 1}}}
    assert storable(dirty.events)


def test_numbers_beyond_the_column_are_clamped():
    dirty = record(num_nodes=10**12, gpus_per_node=True)
    sanitize.sanitize_record(dirty, LIMITS)
    assert dirty.num_nodes == sanitize.MAX_INT and dirty.gpus_per_node == 1


def test_a_dirty_value_nested_deeper_than_the_limit_is_kept_as_clean_text():
    deep: dict = {}
    cursor = deep
    for _ in range(sanitize.MAX_JSON_DEPTH + 5):
        cursor["x"] = {}
        cursor = cursor["x"]
    cursor["bad"] = "nul\x00"
    dirty = record(workload=deep)
    assert sanitize.sanitize_record(dirty, LIMITS) >= 1
    assert storable(dirty.workload)


def test_a_long_list_of_clean_values_is_left_alone():
    pods = [{"name": f"pod-{i}", "phase": "Running", "node": f"n{i}"} for i in range(2_000)]
    clean = record(pods=pods)
    assert sanitize.sanitize_record(clean, LIMITS) == 0
    assert clean.pods is pods


def test_the_json_texts_handed_back_are_the_repaired_values():
    texts: dict[str, str] = {}
    dirty = record(pods=[{"name": "p\x00", "phase": "half \ud800"}], workload={"b": 1, "a": [1.5, None]})
    sanitize.sanitize_record(dirty, LIMITS, texts)
    assert set(texts) == set(sanitize.JSON_FIELDS)
    for name in sanitize.JSON_FIELDS:
        assert json.loads(texts[name]) == getattr(dirty, name)
        assert storable(texts[name])
    assert texts["workload"] == '{"a":[1.5,null],"b":1}'  # canonical: keys sorted, no spaces


def test_a_text_that_only_looks_dirty_is_kept_as_it_is():
    # An escaped backslash before "u0000" is no NUL: looked at closer, nothing to repair.
    clean = record(events=[{"message": "\\u0000 is how JSON writes NUL"}])
    texts: dict[str, str] = {}
    assert sanitize.sanitize_record(clean, LIMITS, texts) == 0
    assert json.loads(texts["events"]) == [{"message": "\\u0000 is how JSON writes NUL"}]
