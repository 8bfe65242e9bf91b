"""Why a PodGroup does not fit, and what placing it leaves behind.

Everything here reads the arrays the engine already computed for a request shape (per-node slots, per-domain pod
and slice counts), so an explanation costs a few vectorised passes, cached per shape and snapshot version.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from trainer_portal.placement.snapshot import (
    BLOCK,
    CORDONED,
    HOST,
    LEVEL_NAMES,
    PRESENT,
    RACK,
    READY,
    ZONE,
    ClusterSnapshot,
)

CLUSTER = -1  # pseudo level: the whole cluster (no topology constraint)


def level_name(level: int) -> str:
    """Return "zone"/"block"/"rack"/"host", or "cluster" for the unconstrained pseudo level."""
    return "cluster" if level == CLUSTER else LEVEL_NAMES[level]


@dataclass
class Explanation:
    """The answer to "why does it not fit": binding level, best domain have/need, exclusions, alternatives."""

    binding_level: str
    best_domain: str | None
    have: int
    need: int
    unit: str
    total_nodes: int
    excluded: dict[str, int]
    alternatives: list[str] = field(default_factory=list)
    message: str = ""

    def to_dict(self) -> dict:
        """Return a JSON-serialisable form."""
        return {
            "bindingLevel": self.binding_level,
            "bestDomain": self.best_domain,
            "have": self.have,
            "need": self.need,
            "unit": self.unit,
            "totalNodes": self.total_nodes,
            "excluded": dict(self.excluded),
            "alternatives": list(self.alternatives),
            "message": self.message,
        }


def unit_label(count: int, slice_size: int) -> str:
    """Return "pod(s)" or "slice(s) of N pods" for messages."""
    if slice_size > 1:
        return f"{'slice' if count == 1 else 'slices'} of {slice_size} pods"
    return "pod" if count == 1 else "pods"


def domain_title(snapshot: ClusterSnapshot, level: int, domain_id: int) -> str:
    """Return e.g. `rack rack-00017` or `block (nodes without the block label) in zone-a` for messages."""
    if level == CLUSTER:
        return "the cluster"
    if level == HOST:
        return f"node {snapshot.names[domain_id]}"
    value = snapshot.domain_label(level, domain_id)
    if not value:
        return f"{LEVEL_NAMES[level]} (nodes without the {LEVEL_NAMES[level]} label)"
    return f"{LEVEL_NAMES[level]} {value}"


def exclusion_counts(snapshot: ClusterSnapshot, tolerated: np.ndarray, label_ok: np.ndarray,
                     free: tuple[np.ndarray, ...], request: tuple[int, int, int], keys: tuple[str, ...],
                     label_levels: int, restrict: np.ndarray | None = None) -> dict[str, int]:
    """Return {cause: nodes} for nodes that can hold no pod of the request, one cause per node, Kueue-style.

    Causes in order: not ready, cordoned, taint "<key>", missing label <key>, insufficient <resource>.
    `tolerated` is per node, `label_ok` per node for the levels the request needs, `restrict` an optional node
    mask (composite parent domain).
    """
    n = snapshot.size
    flags = snapshot.flags[:n]
    present = (flags & PRESENT) != 0
    if restrict is not None:
        present = present & restrict
    counts: dict[str, int] = {}
    remaining = present.copy()

    def take(cause: str, mask: np.ndarray) -> None:
        hit = remaining & mask
        number = int(np.count_nonzero(hit))
        if number:
            counts[cause] = counts.get(cause, 0) + number
            remaining[hit] = False

    take("not ready", (flags & READY) == 0)
    take("cordoned", (flags & CORDONED) != 0)
    untolerated = remaining & ~tolerated
    if untolerated.any():
        per_code = np.bincount(snapshot.taint_code[:n][untolerated], minlength=len(snapshot.taint_sets))
        for code in np.flatnonzero(per_code).tolist():
            number = per_code[code]
            taint_keys = sorted({key for key, _, _ in snapshot.taint_sets[int(code)]})
            cause = f"taint {', '.join(repr(k) for k in taint_keys)}"
            counts[cause] = counts.get(cause, 0) + int(number)
        remaining &= tolerated
    missing = snapshot.missing[:n]
    for level in range(label_levels):
        take(f"missing label {keys[level]}", (missing & (1 << level)) != 0)
    del label_ok  # the per-level loop above is the same mask, attributed to the first missing key
    gpu, cpu, mem = request
    free_gpu, free_cpu, free_mem, free_pods = free
    for cause, mask in (("insufficient nvidia.com/gpu", free_gpu < gpu if gpu else None),
                        ("insufficient cpu", free_cpu < cpu if cpu else None),
                        ("insufficient memory", free_mem < mem if mem else None),
                        ("insufficient pods", free_pods < 1)):
        if mask is not None:
            take(cause, mask)
    return counts


def format_counts(counts: dict[str, int]) -> str:
    """Return "not ready: 3, insufficient nvidia.com/gpu: 12" (empty string when nothing is excluded)."""
    return ", ".join(f"{cause}: {number:,}" for cause, number in counts.items())


@dataclass
class Fragmentation:
    """What a placement leaves behind for pods of one shape."""

    gpus_per_pod: int
    largest_gang: dict[str, int]
    stranded_gpus: int
    empty_racks: int
    free_gpus: int

    def to_dict(self) -> dict:
        """Return a JSON-serialisable form."""
        return {"gpusPerPod": self.gpus_per_pod, "largestGang": dict(self.largest_gang),
                "strandedGpus": self.stranded_gpus, "emptyRacks": self.empty_racks, "freeGpus": self.free_gpus}


@dataclass
class FragmentationState:
    """Per-rack pod slots and per-rack emptiness for one shape, from which a Fragmentation is summarised."""

    gpus_per_pod: int
    rack_pods: np.ndarray
    empty_racks: np.ndarray
    host_max: int
    stranded: int
    free_gpus: int

    def summary(self, snapshot: ClusterSnapshot) -> Fragmentation:
        """Return the Fragmentation (largest gang per level, stranded GPUs, empty racks)."""
        parents, _ = snapshot.domain_arrays()
        block_pods = np.bincount(parents[RACK], weights=self.rack_pods, minlength=len(snapshot.domain_value[BLOCK]))
        zone_pods = np.bincount(parents[BLOCK], weights=block_pods, minlength=len(snapshot.domain_value[ZONE]))
        largest = {
            "cluster": int(zone_pods.sum()),
            "zone": int(zone_pods.max(initial=0)),
            "block": int(block_pods.max(initial=0)),
            "rack": int(self.rack_pods.max(initial=0)),
            "host": self.host_max,
        }
        return Fragmentation(self.gpus_per_pod, largest, self.stranded, int(np.count_nonzero(self.empty_racks)),
                             self.free_gpus)


def fragmentation_state(snapshot: ClusterSnapshot, slots: np.ndarray, free_gpu: np.ndarray, used_gpu: np.ndarray,
                        schedulable: np.ndarray, gpus_per_pod: int) -> FragmentationState:
    """Return the fragmentation state of the snapshot for pods of `gpus_per_pod` GPUs.

    `slots` are per-node pod slots of the shape; stranded GPUs are free GPUs on schedulable nodes with fewer than
    `gpus_per_pod` free; an empty rack has nodes and no GPU in use.
    """
    n = snapshot.size
    racks = snapshot.domain[RACK, :n]
    n_racks = len(snapshot.domain_value[RACK])
    rack_pods = np.bincount(racks, weights=slots.astype(np.float64), minlength=n_racks)
    positive_free = np.maximum(free_gpu, 0) * schedulable
    stranded = int(positive_free[positive_free < gpus_per_pod].sum()) if gpus_per_pod else 0
    present = (snapshot.flags[:n] & PRESENT) != 0
    rack_used = np.bincount(racks, weights=(used_gpu * present).astype(np.float64), minlength=n_racks)
    rack_nodes = np.bincount(racks, weights=present.astype(np.float64), minlength=n_racks)
    return FragmentationState(gpus_per_pod, rack_pods, (rack_nodes > 0) & (rack_used == 0),
                              int(slots.max(initial=0)), stranded, int(positive_free.sum()))


def fragmentation_after(state: FragmentationState, snapshot: ClusterSnapshot, rows: np.ndarray,
                        slots_before: np.ndarray, slots_after: np.ndarray, free_gpu_before: np.ndarray,
                        taken_gpu: np.ndarray, schedulable: np.ndarray, host_max: int) -> FragmentationState:
    """Return `state` updated for a placement that took `taken_gpu` GPUs on `rows` (arrays aligned with rows):
    O(touched nodes + domains) instead of another pass over every node."""
    racks = snapshot.domain[RACK, rows]
    rack_pods = state.rack_pods.copy()
    np.subtract.at(rack_pods, racks, (slots_before - slots_after).astype(np.float64))
    empty = state.empty_racks.copy()
    empty[racks[taken_gpu > 0]] = False
    g = state.gpus_per_pod
    before = np.maximum(free_gpu_before, 0) * schedulable
    after = np.maximum(free_gpu_before - taken_gpu, 0) * schedulable
    stranded = state.stranded
    if g:
        stranded += int(after[after < g].sum()) - int(before[before < g].sum())
    free_gpus = state.free_gpus - int((before - after).sum())
    return FragmentationState(g, rack_pods, empty, host_max, stranded, free_gpus)


def nodes_needed(missing_pods: int, pods_per_empty_node: int) -> int:
    """Return how many empty nodes of the usual shape would add `missing_pods` pod slots."""
    if pods_per_empty_node <= 0:
        return 0
    return math.ceil(missing_pods / pods_per_empty_node)
