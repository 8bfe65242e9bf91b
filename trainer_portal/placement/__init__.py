"""Topology-aware gang placement: cluster snapshot, Kueue-TAS-style placement engine and explanations.

Pure (numpy only): no framework, no cluster client, no app. Typical use:

    snapshot = synthetic_cluster(racks=racks_for(10_000), fragmentation="F1")   # or ClusterSnapshot.from_objects
    requests = [PlacementRequest("workers", 64, {"nvidia.com/gpu": 8}, topology_key=snapshot.keys.block)]
    result = place(requests, snapshot)           # never modifies the snapshot
    result.to_dict()                             # JSON for the API: per-group fit, domain, pods per node, why-not
    snapshot.to_summary()                        # zone → block → rack free GPUs for the heat map

A live cluster is folded into a snapshot by `tracker.TopologyTracker` (node and pod list+watch events).
See docs/placement.md for the algorithm, the decisions and the measured numbers.
"""

from __future__ import annotations

from trainer_portal.placement.engine import (
    Admission,
    CompositeRequest,
    GroupPlacement,
    Job,
    PlacementInputError,
    PlacementRequest,
    PlacementResult,
    admit_job,
    explain_queue,
    place,
    release_job,
)
from trainer_portal.placement.explain import Explanation, Fragmentation
from trainer_portal.placement.quantities import QuantityError, format_quantity, parse_quantity, parse_resource
from trainer_portal.placement.requests import BASIC, COMPOSITE_POD_GROUP, GANG, POD_GROUP, CompositeChild
from trainer_portal.placement.snapshot import ClusterSnapshot, TopologyKeys, UnknownTopologyKey
from trainer_portal.placement.synthetic import FRAGMENTATIONS, racks_for, synthetic_cluster, synthetic_nodes

__all__ = [
    "BASIC",
    "COMPOSITE_POD_GROUP",
    "FRAGMENTATIONS",
    "GANG",
    "POD_GROUP",
    "Admission",
    "ClusterSnapshot",
    "CompositeChild",
    "CompositeRequest",
    "Explanation",
    "Fragmentation",
    "GroupPlacement",
    "Job",
    "PlacementInputError",
    "PlacementRequest",
    "PlacementResult",
    "QuantityError",
    "TopologyKeys",
    "UnknownTopologyKey",
    "admit_job",
    "explain_queue",
    "format_quantity",
    "parse_quantity",
    "parse_resource",
    "place",
    "racks_for",
    "release_job",
    "synthetic_cluster",
    "synthetic_nodes",
]
