"""Topology presets: shape, labels, resources and the deliberately unhealthy nodes."""

from __future__ import annotations

import collections

import pytest

from sandbox.topology import (
    DEFAULT_BLOCK_KEY,
    GPU,
    HOSTNAME_KEY,
    RACK_KEY,
    ZONE_KEY,
    make_node,
    preset_nodes,
)


def _ready(node: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])


def test_it_builds_the_demo_shape_2_zones_2_blocks_4_racks_4_nodes():
    nodes = preset_nodes("demo")
    assert len(nodes) == 64
    labels = [n["metadata"]["labels"] for n in nodes]
    assert len({lab[ZONE_KEY] for lab in labels}) == 2
    assert len({lab[DEFAULT_BLOCK_KEY] for lab in labels}) == 4
    racks = collections.Counter(lab[RACK_KEY] for lab in labels)
    assert len(racks) == 16 and set(racks.values()) == {4}
    assert all(lab[HOSTNAME_KEY] == n["metadata"]["name"] for lab, n in zip(labels, nodes, strict=True))
    assert {n["status"]["allocatable"][GPU] for n in nodes} == {"8"}


def test_it_marks_a_few_demo_nodes_unhealthy_each_for_one_reason():
    nodes = preset_nodes("demo")
    cordoned = [n for n in nodes if n["spec"].get("unschedulable")]
    not_ready = [n for n in nodes if not _ready(n)]
    tainted = [n for n in nodes if n["spec"].get("taints")]
    assert (len(cordoned), len(not_ready), len(tainted)) == (2, 1, 1)
    assert tainted[0]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu-maintenance", "value": "true", "effect": "NoSchedule"}
    ]
    names = [n["metadata"]["name"] for n in cordoned + not_ready + tainted]
    assert len(set(names)) == 4


def test_it_keeps_zone_a_clean_so_tests_can_count_its_capacity():
    zone_a = [n for n in preset_nodes("demo") if n["metadata"]["labels"][ZONE_KEY] == "zone-a"]
    assert len(zone_a) == 32
    assert all(_ready(n) and not n["spec"] for n in zone_a)


def test_it_builds_the_large_preset_with_10000_uniquely_named_nodes():
    nodes = preset_nodes("large")
    assert len(nodes) == 10_000
    assert len({n["metadata"]["name"] for n in nodes}) == 10_000
    racks = collections.Counter(n["metadata"]["labels"][RACK_KEY] for n in nodes)
    assert len(racks) == 625 and set(racks.values()) == {16}
    assert len({n["metadata"]["labels"][ZONE_KEY] for n in nodes}) == 3
    blocks_per_rack = collections.defaultdict(set)
    for n in nodes:
        blocks_per_rack[n["metadata"]["labels"][RACK_KEY]].add(n["metadata"]["labels"][DEFAULT_BLOCK_KEY])
    assert all(len(b) == 1 for b in blocks_per_rack.values())
    assert 0 < sum(1 for n in nodes if n["spec"].get("unschedulable")) < 200
    assert 0 < sum(1 for n in nodes if not _ready(n)) < 100
    assert 0 < sum(1 for n in nodes if n["spec"].get("taints")) < 100


@pytest.mark.parametrize("name", ["demo", "large", "none"])
def test_it_is_deterministic(name):
    assert preset_nodes(name) == preset_nodes(name)


def test_it_returns_no_nodes_for_none():
    assert preset_nodes("none") == []


def test_it_uses_the_configured_block_key():
    nodes = preset_nodes("demo", block_key="example.com/block")
    assert all("example.com/block" in n["metadata"]["labels"] for n in nodes)
    assert not any(DEFAULT_BLOCK_KEY in n["metadata"]["labels"] for n in nodes)


@pytest.mark.parametrize(("name", "block_key", "fragment"), [("tiny", DEFAULT_BLOCK_KEY, "demo, west, large, none"),
                                                            ("demo", "", "block_key")])
def test_it_rejects_bad_input_with_a_clear_error(name, block_key, fragment):
    with pytest.raises(ValueError, match=fragment):
        preset_nodes(name, block_key=block_key)


def test_it_omits_a_topology_label_whose_value_is_none():
    node = make_node("n1", zone="zone-a", block="block-a1", rack=None)
    assert RACK_KEY not in node["metadata"]["labels"]
    assert node["metadata"]["labels"][ZONE_KEY] == "zone-a"
    assert node["kind"] == "Node" and node["apiVersion"] == "v1"
