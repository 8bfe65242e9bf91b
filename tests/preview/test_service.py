"""The preview service: request validation, expansion → placement → verdict, heat map, caching.

No HTTP here; most tests need no database (unsaved manifests), and clusters are small except in the one 50k test.
"""

from __future__ import annotations

import copy

import pytest

from runtimes.domain.constants import MAX_NUM_NODES
from runtimes.domain.manifest import new_runtime
from runtimes.domain.preview import CAVEAT, PreviewInputError, SyntheticTopology
from runtimes.services.preview import (
    _synthetic_source,
    preview_manifest,
    preview_request_parse,
)
from trainer_portal.placement.snapshot import ClusterSnapshot, TopologyKeys

ZONE = "topology.kubernetes.io/zone"
BLOCK = "cloud.provider.com/topology-block"
RACK = "topology.kubernetes.io/rack"
# 2 zones × 2 blocks × 2 racks × 4 nodes × 8 GPUs = 32 nodes, 256 GPUs.
SMALL = {"zones": 2, "blocksPerZone": 2, "racksPerBlock": 2, "nodesPerRack": 4, "gpusPerNode": 8}


# --------------------------------------------------------------------------------------------------- fixtures


# Which topology source a request defaults to depends on whether a live snapshot is stored (in the database).
pytestmark = pytest.mark.django_db


def level1(name: str = "torch-l1", key: str = ZONE) -> dict:
    """Return a torch runtime whose whole TrainJob is one gang inside one domain of `key`."""
    manifest = new_runtime(name)
    manifest["spec"]["scheduling"] = {
        "schedulingPolicy": {"gang": {}},
        "schedulingConstraints": {"topology": [{"key": key}]},
    }
    return manifest


def level2(name: str = "torch-l2", key: str = BLOCK) -> dict:
    """Return a runtime with a basic dataset-initializer group and a gang of trainer nodes inside one block."""
    manifest = new_runtime(name)
    initializer = {
        "name": "dataset-initializer",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}},
            "spec": {"template": {"spec": {"containers": [{"name": "dataset-initializer", "image": "busybox"}]}}},
        },
    }
    manifest["spec"]["template"]["spec"]["replicatedJobs"].insert(0, initializer)
    manifest["spec"]["scheduling"] = {
        "replicatedJobs": [
            {"targetReplicatedJobs": ["dataset-initializer"], "schedulingPolicy": {"basic": {}}},
            {
                "targetReplicatedJobs": ["node"],
                "schedulingPolicy": {"gang": {}},
                "schedulingConstraints": {"topology": [{"key": key}]},
            },
        ]
    }
    return manifest


def level3(name: str = "torch-l3", key: str = RACK) -> dict:
    """Return a runtime whose (single) trainer Job is a gang inside one rack."""
    manifest = new_runtime(name)
    manifest["spec"]["scheduling"] = {
        "replicatedJobs": [
            {
                "targetReplicatedJobs": ["node"],
                "job": {"schedulingPolicy": {"gang": {}}, "schedulingConstraints": {"topology": [{"key": key}]}},
            }
        ]
    }
    return manifest


def composite(name: str = "torch-composite") -> dict:
    """Return a gang of gangs: the TrainJob in one zone, its Job in one rack (needs composite=True)."""
    manifest = level3(name)
    manifest["spec"]["scheduling"]["schedulingPolicy"] = {"gang": {}}
    manifest["spec"]["scheduling"]["schedulingConstraints"] = {"topology": [{"key": ZONE}]}
    return manifest


def request(num_nodes: int = 4, *, gpus: str = "8", topology: dict | None = None, **extra):
    """Return a parsed preview request on the small synthetic cluster (overrides in `topology`)."""
    data = {
        "numNodes": num_nodes,
        "resourcesPerNode": {"nvidia.com/gpu": gpus, "cpu": "32", "memory": "256Gi"},
        "topology": {**SMALL, **(topology or {})},
        **extra,
    }
    return preview_request_parse(data)


# --------------------------------------------------------------------------------------------------- parsing


def test_it_parses_a_request_and_fills_defaults():
    parsed = preview_request_parse({"numNodes": "16"})

    assert parsed.num_nodes == 16
    assert parsed.api_version == "scheduling.k8s.io/v1beta1"
    assert parsed.composite is False
    assert parsed.source == "synthetic"
    assert parsed.synthetic == SyntheticTopology()
    assert parsed.resources()["nvidia.com/gpu"] == "8"


@pytest.mark.parametrize(
    ("data", "path", "fragment"),
    [
        ({"numNodes": 0}, "numNodes", "from 1 to 100,000"),
        ({"numNodes": -3}, "numNodes", "from 1 to 100,000"),
        ({"numNodes": MAX_NUM_NODES + 1}, "numNodes", "got 100,001"),
        ({"numNodes": "abc"}, "numNodes", "whole number"),
        ({"numNodes": 2.5}, "numNodes", "whole number"),
        ({"numNodes": True}, "numNodes", "whole number"),
        ({}, "numNodes", "got nothing"),
        ({"numNodes": 4, "resourcesPerNode": {"nvidia.com/gpu": "4Gi"}}, "resourcesPerNode.nvidia.com/gpu",
         "whole units"),
        ({"numNodes": 4, "resourcesPerNode": {"nvidia.com/gpu": "0.5"}}, "resourcesPerNode.nvidia.com/gpu",
         "whole units"),
        ({"numNodes": 4, "resourcesPerNode": {"cpu": "abc"}}, "resourcesPerNode.cpu", "not a Kubernetes quantity"),
        ({"numNodes": 4, "resourcesPerNode": {"memory": "-1Gi"}}, "resourcesPerNode.memory", "negative"),
        ({"numNodes": 4, "resourcesPerNode": ["8"]}, "resourcesPerNode", "must be an object"),
        ({"numNodes": 4, "apiVersion": "scheduling.k8s.io/v9"}, "apiVersion", "must be one of"),
        ({"numNodes": 4, "composite": "maybe"}, "composite", "true or false"),
        ({"numNodes": 4, "composite": True, "apiVersion": "scheduling.k8s.io/v1alpha2"}, "composite", "1.37"),
        ({"numNodes": 4, "trainJobName": "Bad_Name"}, "trainJobName", "DNS-1123"),
        ({"numNodes": 4, "topology": "big"}, "topology", "must be an object"),
        ({"numNodes": 4, "topology": {"source": "moon"}}, "topology.source", "'synthetic' or 'live'"),
        ({"numNodes": 4, "topology": {"zones": 0}}, "topology.zones", "from 1 to 64"),
        ({"numNodes": 4, "topology": {"nodesPerRack": "x"}}, "topology.nodesPerRack", "whole number"),
        ({"numNodes": 4, "topology": {"fragmentation": "F9"}}, "topology.fragmentation", "F0, F1"),
        ({"numNodes": 4, "topology": {"zones": 64, "blocksPerZone": 64, "racksPerBlock": 64}}, "topology",
         "limited to 100,000"),
    ],
)
def test_it_refuses_bad_input_naming_the_field(data, path, fragment):
    with pytest.raises(PreviewInputError) as caught:
        preview_request_parse(data)

    problems = {error["path"]: error["message"] for error in caught.value.errors}
    assert path in problems, problems
    assert fragment in problems[path]


def test_it_reports_every_problem_at_once():
    with pytest.raises(PreviewInputError) as caught:
        preview_request_parse({"numNodes": 0, "resourcesPerNode": {"nvidia.com/gpu": "abc"}})

    assert [e["path"] for e in caught.value.errors] == ["numNodes", "resourcesPerNode.nvidia.com/gpu"]


def test_it_refuses_the_live_source_while_there_is_none():
    with pytest.raises(PreviewInputError) as caught:
        preview_request_parse({"numNodes": 4, "topology": {"source": "live"}}, live_available=False)

    assert caught.value.errors[0]["path"] == "topology.source"


# --------------------------------------------------------------------------------------------------- levels


@pytest.mark.parametrize(
    ("manifest", "num_nodes", "expected"),
    [
        # (level, policy, minCount, topology key, pods) per PodGroup
        (level1(), 8, [(1, "gang", 8, ZONE, 8)]),
        (level2(), 6, [(2, "basic", None, None, 1), (2, "gang", 6, BLOCK, 6)]),
        (level3(), 4, [(3, "gang", 4, RACK, 4)]),
    ],
    ids=["L1", "L2", "L3"],
)
def test_it_shows_the_podgroups_the_controller_would_create(manifest, num_nodes, expected):
    result = preview_manifest(manifest=manifest, request=request(num_nodes))

    groups = [(g["level"], g["policy"], g["minCount"], g["topologyKey"], g["podCount"]) for g in result["podGroups"]]
    assert groups == expected
    assert all(g["name"].startswith("preview-") for g in result["podGroups"])
    assert result["verdict"]["fits"] is True
    assert result["caveat"] == CAVEAT


def test_it_places_a_fitting_gang_inside_one_domain_and_highlights_its_racks():
    result = preview_manifest(manifest=level1(key=BLOCK), request=request(8))

    group = result["placement"]["groups"][0]
    assert group["fits"] is True
    assert group["domain"]["level"] == "block"
    assert sum(group["podsPerNode"].values()) == 8
    placed = [rack for zone in result["heatmap"]["zones"] for block in zone["blocks"] for rack in block["racks"]
              if rack["placed"]]
    assert sum(rack["placed"] for rack in placed) == 8
    assert result["heatmap"]["placedRacks"] == len(placed) == 2
    assert {item["label"]: item["value"] for item in result["span"]} == {
        "zone": 1, "block": 1, "racks": 2, "nodes": 8}
    # Two racks of four pods: 2·4·3 of the 8·7 ordered pod pairs share a rack; every pair shares the block.
    assert result["quality"] == [{
        "group": group["name"], "pods": 8, "lca": "block", "racksUsed": 2,
        "sameRackPairs": round(24 / 56, 4), "sameBlockPairs": 1.0, "rackBalance": 1.0,
    }]


def test_it_explains_a_near_miss_with_have_and_need():
    result = preview_manifest(manifest=level1(), request=request(16, topology={"fragmentation": "F5", "seed": 3}))

    verdict = result["verdict"]
    assert verdict["fits"] is False
    assert verdict["bindingLevel"] == "zone"
    assert "fits 15 of 16" in verdict["explanation"][0]
    assert "zone zone-a" in verdict["explanation"][0]
    assert any("more free 8-GPU node" in line for line in verdict["explanation"])
    assert result["heatmap"]["placedRacks"] == 0
    assert any(zone["near"] for zone in result["heatmap"]["zones"])


def test_it_explains_a_rack_gang_larger_than_any_rack():
    result = preview_manifest(manifest=level3(), request=request(5))

    assert result["verdict"]["fits"] is False
    text = " ".join(result["verdict"]["explanation"])
    assert "fits 4 of 5" in text
    assert "relaxed to block" in text


def test_it_explains_a_topology_key_no_node_carries():
    nodes = [
        {
            "metadata": {"name": f"n{index}", "labels": {ZONE: "zone-a", "kubernetes.io/hostname": f"n{index}"}},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]},
        }
        for index in range(4)
    ]
    snapshot = ClusterSnapshot.from_objects(nodes, keys=TopologyKeys())

    result = preview_manifest(manifest=level3(), request=request(2), snapshot=snapshot)

    explanation = result["verdict"]["explanation"][0]
    assert result["verdict"]["fits"] is False
    assert f"no node carries the rack label '{RACK}'" in explanation


def test_it_refuses_a_topology_key_that_is_no_cluster_level():
    with pytest.raises(PreviewInputError) as caught:
        preview_manifest(manifest=level1(key="example.com/pod"), request=request(2))

    error = caught.value.errors[0]
    assert error["path"] == "manifest.spec.scheduling.schedulingConstraints.topology[0].key"
    assert "unknown topology key 'example.com/pod'" in error["message"]


def test_it_previews_a_gang_of_gangs():
    result = preview_manifest(manifest=composite(), request=request(4, composite=True))

    kinds = [(g["kind"], g["level"]) for g in result["podGroups"]]
    assert kinds == [("CompositePodGroup", 1), ("CompositePodGroup", 2), ("PodGroup", 3)]
    assert result["verdict"]["fits"] is True
    assert "scheduling.k8s.io/v1alpha3" in result["yaml"]
    assert result["heatmap"]["placedRacks"] == 1


def test_it_generates_the_yaml_for_the_chosen_api_version():
    result = preview_manifest(manifest=level1(), request=request(4, apiVersion="scheduling.k8s.io/v1alpha2"))

    assert result["yaml"].startswith("apiVersion: scheduling.k8s.io/v1alpha2\nkind: Workload\n")
    assert "kind: PodGroup" in result["yaml"]
    assert "podGroupTemplateRef" in result["yaml"]
    assert result["manifests"]["workload"]["kind"] == "Workload"


def test_it_says_so_when_the_runtime_has_no_scheduling():
    result = preview_manifest(manifest=new_runtime("plain"), request=request(4))

    assert result["podGroups"] == []
    assert result["manifests"] == {"workload": None, "podGroups": []}
    assert "no spec.scheduling" in result["yaml"]
    assert result["verdict"]["fits"] is True


def test_it_refuses_an_invalid_unsaved_manifest_with_paths_under_manifest():
    manifest = level2()
    manifest["spec"]["scheduling"]["replicatedJobs"][1]["targetReplicatedJobs"] = ["nope"]

    with pytest.raises(PreviewInputError) as caught:
        preview_manifest(manifest=manifest, request=request(4))

    assert all(e["path"].startswith("manifest.spec.scheduling") for e in caught.value.errors)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "send the ClusterTrainingRuntime"),
        ("kind: [", "line"),
        ("apiVersion: v1\nkind: Pod\n", "ClusterTrainingRuntime"),
    ],
)
def test_it_refuses_unreadable_manifest_text(text, fragment):
    with pytest.raises(PreviewInputError) as caught:
        preview_manifest(manifest=text, request=request(4))

    assert caught.value.errors[0]["path"].startswith("manifest")
    assert fragment in caught.value.errors[0]["message"]


def test_it_is_deterministic():
    first = preview_manifest(manifest=level2(), request=request(6, topology={"fragmentation": "F2", "seed": 7}))
    second = preview_manifest(manifest=copy.deepcopy(level2()),
                              request=request(6, topology={"fragmentation": "F2", "seed": 7}))

    assert first == second


def test_it_reuses_the_synthetic_cluster_for_identical_parameters():
    before = _synthetic_source.cache_info().hits
    preview_manifest(manifest=level1(), request=request(3, topology={"seed": 11}))
    preview_manifest(manifest=level1(), request=request(5, topology={"seed": 11}))

    assert _synthetic_source.cache_info().hits >= before + 1


# --------------------------------------------------------------------------------------------------- scale


def test_it_aggregates_a_50k_node_cluster_to_racks():
    big = {"zones": 3, "blocksPerZone": 8, "racksPerBlock": 130, "nodesPerRack": 16, "gpusPerNode": 8}

    result = preview_manifest(manifest=level1(key=BLOCK), request=request(1000, topology=big))

    heatmap = result["heatmap"]
    assert heatmap["nodeCount"] == 3 * 8 * 130 * 16 == 49_920
    racks = [rack for zone in heatmap["zones"] for block in zone["blocks"] for rack in block["racks"]]
    assert len(racks) == heatmap["rackCount"] == 3_120
    assert len(heatmap["zones"]) == 3
    assert all(len(zone["blocks"]) == 8 for zone in heatmap["zones"])
    assert sum(rack["placed"] for rack in racks) == 1000
    assert result["verdict"]["fits"] is True


# --------------------------------------------------------------------------------------------------- wording


ONE_NODE = {"zones": 1, "blocksPerZone": 1, "racksPerBlock": 1, "nodesPerRack": 1, "source": "synthetic"}


def test_a_policy_without_gang_scheduling_is_not_said_to_have_a_pod_group_admitted():
    result = preview_manifest(manifest=new_runtime("plain", num_nodes=1), request=request(1, topology=ONE_NODE))
    summary = result["verdict"]["summary"]
    assert "no gang scheduling" in summary and "PodGroup" not in summary
    assert result["verdict"]["explanation"] == ["node (no PodGroup): 1 pod fits on 1 node"]


def test_counts_of_one_are_singular():
    result = preview_manifest(manifest=level1(), request=request(1, topology=ONE_NODE))
    description = result["topology"]["description"]
    assert description.startswith("synthetic: 1 zone × 1 block × 1 rack × 1 node × 8 GPUs = 1 node,")
    assert "1 rack in 1 zone" in result["heatmap"]["label"] and "uses 1 rack." in result["heatmap"]["label"]
    assert " 1 nodes" not in str(result) and " 1 racks" not in str(result)
    assert result["verdict"]["summary"] == "The TrainJob fits: its gang PodGroup can be admitted now."


def test_basic_pods_that_cannot_all_be_placed_are_not_called_a_fit():
    manifest = level1()
    manifest["spec"]["scheduling"]["schedulingPolicy"] = {"basic": {}}
    result = preview_manifest(manifest=manifest, request=request(4, topology=ONE_NODE))
    assert result["verdict"]["summary"].startswith("The TrainJob starts partly: 3 pods without gang scheduling")
