"""Topology presets for the sandbox cluster: deterministic lists of GPU Node objects.

Every node carries the well-known zone label, a configurable network-block label, a rack label and its hostname,
and advertises `nvidia.com/gpu`, cpu, memory and pods. A few nodes are deliberately unhealthy (cordoned, NotReady,
tainted) so that the scheduler's explanations and the portal's exclusion counts have something to show.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

ZONE_KEY = "topology.kubernetes.io/zone"
DEFAULT_BLOCK_KEY = "cloud.provider.com/topology-block"
RACK_KEY = "topology.kubernetes.io/rack"
HOSTNAME_KEY = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
MAINTENANCE_TAINT = {"key": "nvidia.com/gpu-maintenance", "value": "true", "effect": "NoSchedule"}

PRESETS = ("demo", "west", "large", "none")


@dataclass(frozen=True)
class NodeShape:
    """Resources every node of a preset advertises (capacity == allocatable)."""

    gpus: int = 8
    cpu: str = "192"
    memory: str = "2048Gi"
    pods: int = 110


def preset_nodes(name: str, *, block_key: str = DEFAULT_BLOCK_KEY) -> list[dict]:
    """Return the Node objects of topology preset `name`, identical on every call.

    - `demo`: 2 zones x 2 blocks x 4 racks x 4 nodes x 8 GPUs = 64 nodes; 2 cordoned, 1 NotReady, 1 tainted
      `nvidia.com/gpu-maintenance=true:NoSchedule` (all in zone-b, so zone-a is a clean 32-node zone).
    - `west`: a smaller, different cluster for the two-cluster demo: 1 zone x 3 blocks x 2 racks x 4 nodes = 24
      nodes, block-w3 with 4-GPU nodes (H100 pairs split in half), 1 cordoned node.
    - `large`: 10,000 nodes, 3 zones x 8 blocks, 16 nodes per rack (625 racks dealt round-robin over the blocks);
      about 1% cordoned, 0.5% NotReady and 0.5% tainted, spread deterministically.
    - `none`: no nodes.

    Raises ValueError naming the valid presets when `name` is unknown, or when `block_key` is empty.
    """
    if not block_key:
        raise ValueError("block_key must be a non-empty node label key, e.g. 'cloud.provider.com/topology-block'")
    if name == "none":
        return []
    if name == "demo":
        return _demo_nodes(block_key)
    if name == "west":
        return _west_nodes(block_key)
    if name == "large":
        return _large_nodes(block_key)
    raise ValueError(f"unknown topology preset {name!r}: choose one of {', '.join(PRESETS)}")


def _demo_nodes(block_key: str) -> list[dict]:
    """64 nodes named gpu-<zone><block>-r<rack>-n<node>, e.g. gpu-a1-r2-n3 (zone a, block a1, rack a1-r2)."""
    cordoned = {"gpu-b1-r1-n1", "gpu-b2-r3-n2"}
    not_ready = {"gpu-b1-r2-n3"}
    tainted = {"gpu-b2-r4-n4"}
    nodes = []
    for zone in ("a", "b"):
        for block in (1, 2):
            block_name = f"block-{zone}{block}"
            for rack in range(1, 5):
                rack_name = f"rack-{zone}{block}-r{rack}"
                for index in range(1, 5):
                    host = f"gpu-{zone}{block}-r{rack}-n{index}"
                    nodes.append(
                        make_node(
                            host,
                            zone=f"zone-{zone}",
                            block=block_name,
                            rack=rack_name,
                            block_key=block_key,
                            unschedulable=host in cordoned,
                            ready=host not in not_ready,
                            taints=[dict(MAINTENANCE_TAINT)] if host in tainted else [],
                        )
                    )
    return nodes


def _west_nodes(block_key: str) -> list[dict]:
    """24 nodes named gpu-w<block>-r<rack>-n<node> in zone-w; the third block has 4-GPU nodes."""
    nodes = []
    for block in (1, 2, 3):
        shape = NodeShape(gpus=4, cpu="96", memory="1024Gi") if block == 3 else NodeShape()
        for rack in (1, 2):
            for index in range(1, 5):
                host = f"gpu-w{block}-r{rack}-n{index}"
                nodes.append(make_node(host, zone="zone-w", block=f"block-w{block}", rack=f"rack-w{block}-r{rack}",
                                       block_key=block_key, shape=shape, unschedulable=host == "gpu-w2-r1-n1"))
    return nodes


def _large_nodes(block_key: str) -> list[dict]:
    """10,000 nodes: racks of 16 nodes dealt round-robin over 3 zones x 8 blocks (docs/reference/placement.md §6
    C10k)."""
    zones, blocks_per_zone, nodes_per_rack, total = 3, 8, 16, 10_000
    blocks = [(f"zone-{chr(ord('a') + z)}", f"block-{chr(ord('a') + z)}{b + 1}")
              for z in range(zones) for b in range(blocks_per_zone)]
    nodes = []
    for i in range(total):
        rack_index, slot = divmod(i, nodes_per_rack)
        zone, block = blocks[rack_index % len(blocks)]
        rack = f"rack-{rack_index:04d}"
        nodes.append(
            make_node(
                f"gpu-{rack_index:04d}-n{slot + 1:02d}",
                zone=zone,
                block=block,
                rack=rack,
                block_key=block_key,
                # Primes keep the three kinds of trouble on different nodes and spread across racks.
                unschedulable=i % 97 == 13,
                ready=i % 199 != 57,
                taints=[dict(MAINTENANCE_TAINT)] if i % 211 == 101 else [],
            )
        )
    return nodes


def node_ip(name: str) -> str:
    """Returns the stable InternalIP of a node, in 10.128.0.0/10 (pods get 10.64.0.0/10)."""
    number = int(hashlib.sha256(f"ip:{name}".encode()).hexdigest()[:8], 16) % (1 << 22)
    return f"10.{128 + (number >> 16)}.{(number >> 8) & 255}.{max(number & 255, 1)}"


def _node_id(name: str, what: str) -> str:
    """Returns a stable 32-hex-digit id of a node (as a kubelet reports machine and boot ids)."""
    return hashlib.sha256(f"{what}:{name}".encode()).hexdigest()[:32]


def _node_uuid(name: str) -> str:
    return str(uuid.UUID(_node_id(name, "system")))


def make_node(
    name: str,
    *,
    zone: str | None,
    block: str | None,
    rack: str | None,
    block_key: str = DEFAULT_BLOCK_KEY,
    shape: NodeShape = NodeShape(),
    unschedulable: bool = False,
    ready: bool = True,
    taints: list[dict] | None = None,
) -> dict:
    """Return one Node object; a topology label whose value is None is left out (a node missing its rack label).

    Tests use this to build small custom clusters with the same label scheme as the presets.
    """
    labels = {
        HOSTNAME_KEY: name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": f"gpu-{shape.gpus}x",
    }
    for key, value in ((ZONE_KEY, zone), (block_key, block), (RACK_KEY, rack)):
        if value is not None:
            labels[key] = value
    resources = {GPU: str(shape.gpus), "cpu": shape.cpu, "memory": shape.memory, "pods": str(shape.pods)}
    spec: dict = {}
    if unschedulable:
        spec["unschedulable"] = True
    # Unlike a real node controller we add no `node.kubernetes.io/unschedulable` / `not-ready` taints: each
    # unhealthy node then has exactly one cause, so exclusion counts in the demo are easy to read and check.
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    conditions = [
        {"type": kind, "status": "False", "reason": reason, "message": message} for kind, reason, message in (
            ("NetworkUnavailable", "RouteCreated", "RouteController created a route"),
            ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"))
    ]
    conditions.append({
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "KubeletNotReady",
        "message": "kubelet is posting ready status" if ready else "container runtime network not ready (simulated)",
    })
    for condition in conditions:
        condition.update(lastHeartbeatTime="2026-01-01T00:00:00Z", lastTransitionTime="2026-01-01T00:00:00Z")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": node_ip(name)}, {"type": "Hostname", "address": name}],
            "nodeInfo": {
                "machineID": _node_id(name, "machine"),
                "systemUUID": _node_uuid(name),
                "bootID": _node_id(name, "boot"),
                "kernelVersion": "6.8.0-sandbox",
                "osImage": "Sandbox Linux",
                "containerRuntimeVersion": "sandbox://1",
                "kubeletVersion": "v1.37.0-sandbox",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }
