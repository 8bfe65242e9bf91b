"""Topology-aware gang placement: cluster snapshot, Kueue-TAS-style placement engine and explanations.

Typical use (the preview API):

    snapshot = synthetic_cluster(racks=racks_for(10_000), fragmentation="F1")   # or ClusterSnapshot.from_objects
    expansion = expand(runtime, trainjob_name="my-job", num_nodes=64, resources_per_node={"nvidia.com/gpu": 8})
    result = place(expansion, snapshot)          # never modifies the snapshot
    result.to_dict()                             # JSON for the API: per-group fit, domain, pods per node, why-not
    snapshot.to_summary()                        # zone → block → rack free GPUs for the heat map

See docs/placement.md for the algorithm, the decisions and the measured numbers.
"""

from __future__ import annotations

import importlib

# Exported names are resolved lazily (PEP 562): `runtimes.domain.expansion` imports `placement.quantities`, and an
# eager import of the engine here would make that a circular import.
_EXPORTS = {
    "GroupPlacement": "engine",
    "PlacementInputError": "engine",
    "PlacementRequest": "engine",
    "PlacementResult": "engine",
    "place": "engine",
    "explain_queue": "engine",
    "requests_from_expansion": "engine",
    "Explanation": "explain",
    "Fragmentation": "explain",
    "QuantityError": "quantities",
    "format_quantity": "quantities",
    "parse_quantity": "quantities",
    "parse_resource": "quantities",
    "ClusterSnapshot": "snapshot",
    "TopologyKeys": "snapshot",
    "UnknownTopologyKey": "snapshot",
    "FRAGMENTATIONS": "synthetic",
    "racks_for": "synthetic",
    "synthetic_cluster": "synthetic",
    "synthetic_nodes": "synthetic",
}


def __getattr__(name: str) -> object:
    """Return the exported `name` from its submodule; raises AttributeError for anything else."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "FRAGMENTATIONS",
    "ClusterSnapshot",
    "Explanation",
    "Fragmentation",
    "GroupPlacement",
    "PlacementInputError",
    "PlacementRequest",
    "PlacementResult",
    "QuantityError",
    "TopologyKeys",
    "UnknownTopologyKey",
    "explain_queue",
    "format_quantity",
    "parse_quantity",
    "parse_resource",
    "place",
    "racks_for",
    "requests_from_expansion",
    "synthetic_cluster",
    "synthetic_nodes",
]
