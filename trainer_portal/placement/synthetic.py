"""Synthetic GPU clusters (docs/reference/placement.md §6): zones × blocks × racks × nodes, fragmentation
patterns F0–F5.

Racks are dealt round-robin over the blocks (rack i → block i mod blocks), like the benchmark clusters C1k/C10k/C50k.
Usage from fragmentation is written straight into the snapshot's in-use columns (one pod per used GPU), which is
what a watch of the matching pods would produce, without building hundreds of thousands of Pod objects.
"""

from __future__ import annotations

import math
import random
import string

import numpy as np

from trainer_portal.placement.quantities import CPU, MEMORY, format_quantity, parse_resource, to_base_units
from trainer_portal.placement.snapshot import CORDONED, READY, ClusterSnapshot, TopologyKeys, next_stamp

FRAGMENTATIONS = ("F0", "F1", "F2", "F3", "F4", "F5")
FRAGMENTATION_NAMES = {"F0": "empty", "F1": "random-50", "F2": "random-90", "F3": "rack-aligned",
                       "F4": "salt-and-pepper", "F5": "near-miss"}
MAINTENANCE_TAINT = {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}


def zone_name(index: int) -> str:
    """Return the label value of zone `index`: zone-a, zone-b, …"""
    letters = string.ascii_lowercase
    return f"zone-{letters[index % 26]}{index // 26 or ''}"


def racks_for(nodes: int, nodes_per_rack: int = 16) -> int:
    """Return the number of racks of a cluster of about `nodes` nodes (1,000 → 63 racks = 1,008 nodes)."""
    return max(1, math.ceil(nodes / nodes_per_rack))


def _layout(zones: int, blocks_per_zone: int, racks: int | None, nodes_per_rack: int) -> tuple[int, int]:
    if zones < 1 or blocks_per_zone < 1 or nodes_per_rack < 1:
        raise ValueError("zones, blocks_per_zone and nodes_per_rack must be >= 1")
    blocks = zones * blocks_per_zone
    racks = blocks * 2 if racks is None else racks
    if racks < 1:
        raise ValueError("racks must be >= 1")
    return blocks, racks


def synthetic_nodes(zones: int = 3, blocks_per_zone: int = 8, racks: int | None = None, nodes_per_rack: int = 16,
                    gpus_per_node: int = 8, cpu: int | str = 192, memory: str = "2Ti", pods: int = 110, *,
                    keys: TopologyKeys | None = None, seed: int = 0, variant_h: bool = False) -> list[dict]:
    """Return core/v1 Node objects of the synthetic topology (identical for identical arguments).

    `racks` is the total number of racks (default: two per block). With `variant_h` (docs/reference/placement.md §6
    variant H):
    10% of nodes have 4 GPUs, 1% NotReady, 1% cordoned, 3% carry an untolerated NoSchedule taint, 1% lack the
    block label. Raises ValueError for non-positive sizes.
    """
    keys = keys or TopologyKeys()
    blocks, racks = _layout(zones, blocks_per_zone, racks, nodes_per_rack)
    rng = random.Random(seed)
    nodes = []
    for rack in range(racks):
        block = rack % blocks
        zone = block // blocks_per_zone
        for slot in range(nodes_per_rack):
            index = rack * nodes_per_rack + slot
            name = f"node-{index:06d}"
            labels = {keys.zone: zone_name(zone), keys.block: f"block-{zone_name(zone)[5:]}{block % blocks_per_zone}",
                      keys.rack: f"rack-{rack:05d}", keys.host: name}
            gpus, ready, cordoned, taints = gpus_per_node, True, False, []
            if variant_h:
                draw = rng.random()
                if draw < 0.10:
                    gpus = min(4, gpus_per_node)
                draw = rng.random()
                if draw < 0.01:
                    ready = False
                elif draw < 0.02:
                    cordoned = True
                elif draw < 0.05:
                    taints = [dict(MAINTENANCE_TAINT)]
                elif draw < 0.06:
                    del labels[keys.block]
            node = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {"unschedulable": True} if cordoned else {},
                "status": {
                    "allocatable": {"nvidia.com/gpu": str(gpus), "cpu": str(cpu), "memory": memory, "pods": str(pods)},
                    "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                },
            }
            if taints:
                node["spec"]["taints"] = taints
            nodes.append(node)
    return nodes


def synthetic_cluster(zones: int = 3, blocks_per_zone: int = 8, racks: int | None = None, nodes_per_rack: int = 16,
                      gpus_per_node: int = 8, cpu: int | str = 192, memory: str = "2Ti", fragmentation: str = "F0",
                      seed: int = 0, variant_h: bool = False, *, keys: TopologyKeys | None = None, need: int = 64,
                      pod_gpus: int | None = None) -> ClusterSnapshot:
    """Return a snapshot of the synthetic topology with fragmentation pattern `fragmentation` applied.

    F0 empty; F1 50% of nodes have 1–8 GPUs in use; F2 90%; F3 half of the racks full, the rest empty;
    F4 every node has 1–3 GPUs in use; F5 near-miss: the best zone has exactly `need`−1 free slots for pods of
    `pod_gpus` GPUs (default a whole node) and every other zone fewer. In-use CPU and memory follow the GPUs
    proportionally; one pod per in-use GPU. Raises ValueError for an unknown pattern or bad sizes.
    """
    if fragmentation not in FRAGMENTATIONS:
        raise ValueError(f"fragmentation must be one of {FRAGMENTATIONS}, got {fragmentation!r}")
    nodes = synthetic_nodes(zones, blocks_per_zone, racks, nodes_per_rack, gpus_per_node, cpu, memory, keys=keys,
                            seed=seed, variant_h=variant_h)
    snapshot = ClusterSnapshot.from_objects(nodes, keys=keys)
    rng = np.random.default_rng(seed)
    n = snapshot.size
    alloc = snapshot.alloc_gpu[:n].astype(np.int64)
    used = np.zeros(n, np.int64)
    if fragmentation in ("F1", "F2"):
        busy = rng.random(n) < (0.5 if fragmentation == "F1" else 0.9)
        # A node without GPUs (gpusPerNode 0) has none to use: draw from [1, 1] and let the clamp below make it 0.
        used = np.where(busy, rng.integers(1, np.maximum(alloc, 1) + 1), 0)
    elif fragmentation == "F3":
        full_racks = rng.random(len(snapshot.domain_value[2])) < 0.5
        used = np.where(full_racks[snapshot.domain[2, :n]], alloc, 0)
    elif fragmentation == "F4":
        used = np.minimum(rng.integers(1, 4, n), alloc)
    elif fragmentation == "F5":
        used = _near_miss(snapshot, alloc, need, pod_gpus or gpus_per_node)
    used = np.minimum(used, alloc)
    cpu_per_gpu = to_base_units(CPU, parse_resource(CPU, cpu)) // max(gpus_per_node, 1)
    mem_per_gpu = to_base_units(MEMORY, parse_resource(MEMORY, memory)) // max(gpus_per_node, 1)
    snapshot.used_gpu[:n] = used
    snapshot.used_cpu[:n] = used * cpu_per_gpu
    snapshot.used_mem[:n] = used * mem_per_gpu
    snapshot.used_pods[:n] = used
    snapshot.version = next_stamp()
    return snapshot


def _near_miss(snapshot: ClusterSnapshot, alloc: np.ndarray, need: int, pod_gpus: int) -> np.ndarray:
    """Return in-use GPUs so that zone z has max(need − 1 − z, 0) free pod slots, spread over its racks."""
    n = snapshot.size
    used = alloc.copy()
    schedulable = (snapshot.flags[:n] & (READY | CORDONED)) == READY
    zones = snapshot.domain[0, :n]
    zone_order = sorted(range(len(snapshot.domain_value[0])), key=lambda z: snapshot.domain_value[0][z])
    racks = snapshot.domain[2, :n]
    for rank, zone in enumerate(zone_order):
        slots = max(need - 1 - rank, 0)
        members = np.flatnonzero((zones == zone) & schedulable & (alloc >= pod_gpus))
        # Deal the freed slots round-robin over racks so no single rack or block holds the whole zone's slack.
        members = members[np.lexsort((members, racks[members]))]
        by_rack: dict[int, list[int]] = {}
        for row in members.tolist():
            by_rack.setdefault(int(racks[row]), []).append(row)
        queues = [rows for _, rows in sorted(by_rack.items())]
        position = [0] * len(queues)
        turn = 0
        while slots > 0 and queues:
            queue_index = turn % len(queues)
            rows = queues[queue_index]
            row = rows[position[queue_index] % len(rows)]
            if used[row] >= pod_gpus:
                used[row] -= pod_gpus
                slots -= 1
            else:
                position[queue_index] += 1
                if position[queue_index] >= 2 * len(rows):
                    queues.pop(queue_index)
                    position.pop(queue_index)
                    continue
            turn += 1
    return used


def describe(snapshot: ClusterSnapshot) -> dict:
    """Return a short JSON-serialisable description: nodes, racks, blocks, zones, free and total GPUs."""
    n = snapshot.size
    return {
        "nodes": snapshot.node_count,
        "zones": len(snapshot.domain_value[0]),
        "blocks": len(snapshot.domain_value[1]),
        "racks": len(snapshot.domain_value[2]),
        "totalGpus": int(snapshot.alloc_gpu[:n].sum()),
        "freeGpus": int((snapshot.alloc_gpu[:n] - snapshot.used_gpu[:n]).sum()),
        "memoryPerNode": format_quantity(int(snapshot.alloc_mem[:n].max(initial=0)), resource=MEMORY),
    }
