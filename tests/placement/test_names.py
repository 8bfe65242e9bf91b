"""Packed node names: a sequence of names and a name → row mapping that behave like the list and dict they replace."""

from __future__ import annotations

import pickle

import pytest

from trainer_portal.placement.names import NodeNames
from trainer_portal.placement.snapshot import ClusterSnapshot

from .test_snapshot import node


def test_names_are_a_sequence_and_rows_a_mapping():
    names = NodeNames(["a", "bb", "ccc"])
    assert len(names) == 3 and names[1] == "bb" and names[-1] == "ccc" and names[0:2] == ["a", "bb"]
    assert list(names) == ["a", "bb", "ccc"] and names == ["a", "bb", "ccc"] and "bb" in names
    with pytest.raises(IndexError):
        names[3]
    rows = names.rows
    assert rows["ccc"] == 2 and rows.get("zz") is None and rows.get("zz", -1) == -1 and "a" in rows
    assert rows.get(None) is None and 7 not in rows
    with pytest.raises(KeyError):
        rows["zz"]
    assert rows == {"a": 0, "bb": 1, "ccc": 2} and list(rows) == ["a", "bb", "ccc"] and len(rows) == 3
    assert rows.items() == [("a", 0), ("bb", 1), ("ccc", 2)]


def test_a_name_is_added_once_and_only_by_append():
    names = NodeNames(["a"])
    with pytest.raises(ValueError, match="already present"):
        names.append("a")
    with pytest.raises(TypeError):
        names.append(3)  # type: ignore[arg-type]
    names.rows["a"] = 0  # the dict idiom the snapshot's plain form uses: accepted when it is already so
    with pytest.raises(ValueError):
        names.rows["b"] = 1
    assert list(names) == ["a"]


def test_every_name_is_found_after_the_index_grows():
    names = NodeNames()
    for index in range(5_000):
        names.append(f"node-{index:05d}")
    assert all(names.rows[f"node-{index:05d}"] == index for index in range(0, 5_000, 7))
    assert "node-05000" not in names.rows and names.nbytes() > 0


def test_any_string_round_trips():
    odd = ["ünïcode-node", "with\nnewline", "lone-\ud800-surrogate", "", "ascii"]
    names = NodeNames(odd)
    assert list(names) == odd and [names[row] for row in range(len(odd))] == odd
    assert all(names.rows[name] == row for row, name in enumerate(odd))


def test_copies_and_pickles_are_independent_and_indexed():
    names = NodeNames(["a", "b"])
    copied, restored = names.copy(), pickle.loads(pickle.dumps(names))
    copied.append("c")
    restored.append("d")
    assert list(names) == ["a", "b"] and "c" not in names.rows and "d" not in names.rows
    assert copied.rows["c"] == 2 and restored.rows["d"] == 2 and restored.rows["b"] == 1


def test_a_snapshot_copy_or_pickle_keeps_its_own_name_index():
    snapshot = ClusterSnapshot.from_objects([node("a"), node("b")])
    copied = snapshot.copy()
    copied.apply_node_event("ADDED", node("c"))
    restored = pickle.loads(pickle.dumps(snapshot))
    restored.apply_node_event("ADDED", node("d"))
    assert "c" not in snapshot.row_of and "d" not in snapshot.row_of and snapshot.size == 2
    assert copied.row_of["c"] == 2 and copied.names[2] == "c"
    assert restored.row_of["d"] == 2 and restored.row_of is restored.names.rows
    assert restored.row_of == {"a": 0, "b": 1, "d": 2}


def test_a_snapshot_with_plain_names_still_takes_new_nodes():
    # A snapshot decoded from the store (and its copies) holds a list and a dict: events must still index new nodes.
    snapshot = ClusterSnapshot.from_objects([node("a")])
    snapshot.names, snapshot.row_of = ["a"], {"a": 0}
    snapshot.apply_node_event("ADDED", node("b"))
    assert snapshot.names == ["a", "b"] and snapshot.row_of == {"a": 0, "b": 1}
