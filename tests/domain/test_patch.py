"""JSON merge patch (RFC 7396): the RFC's semantics, inputs left alone, and no recursion on deep input."""

from __future__ import annotations

import copy

import pytest

from runtimes.domain.patch import json_copy, merge_patch


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"a": 1, "b": {"c": 2}}, {"b": {"c": None, "d": 3}}, {"a": 1, "b": {"d": 3}}),
        ({"a": [1, 2]}, {"a": [3]}, {"a": [3]}),
        ({"a": 1}, {"a": {"b": 1}}, {"a": {"b": 1}}),
        ({"a": {"b": 1}}, {"a": "x"}, {"a": "x"}),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": {"b": {"c": 1}}}, {"a": {"b": {"d": None}}}, {"a": {"b": {"c": 1}}}),
        ([1], {"a": None}, {}),
    ],
)
def test_merge_patch_follows_rfc_7396(target, patch, expected):
    original_target, original_patch = copy.deepcopy(target), copy.deepcopy(patch)

    assert merge_patch(target, patch) == expected
    assert (target, patch) == (original_target, original_patch)


def test_the_result_shares_no_containers_with_the_inputs():
    target, patch = {"keep": {"x": [1]}}, {"new": {"y": [2]}}
    result = merge_patch(target, patch)
    result["keep"]["x"].append(9)
    result["new"]["y"].append(9)
    assert target == {"keep": {"x": [1]}}
    assert patch == {"new": {"y": [2]}}


def _nested(depth: int, leaf):
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def _leaf(value, depth: int):
    for _ in range(depth):
        value = value["a"]
    return value


def test_deeply_nested_patches_and_targets_do_not_exhaust_the_stack():
    depth = 20_000  # far beyond Python's recursion limit (and == on such values would recurse, so walk them)
    patch = _nested(depth, [[[]]])
    result = merge_patch(_nested(depth, 1), patch)
    assert _leaf(result, depth) == [[[]]]
    assert _leaf(result, depth) is not _leaf(patch, depth)
    copied = json_copy(_nested(depth, {"x": 1}))
    assert _leaf(copied, depth) == {"x": 1}
